package sfnlocal

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/openprogram/lifecycle/shared/asl"
	"github.com/openprogram/lifecycle/shared/store"
)

// Config configures an Engine.
type Config struct {
	// Store keeps executions durable (required).
	Store store.Store
	// Definition is the ASL file, with ${Name} placeholders.
	Definition []byte
	// Substitutions fill the placeholders, as CloudFormation's
	// DefinitionSubstitutions do. Every placeholder must have a value.
	Substitutions map[string]string
	// StateMachineName names the state machine in ARNs (required).
	StateMachineName string
	// Functions maps Lambda function ARNs (as they appear in the definition
	// after substitution) to in-process handlers. Every function the
	// definition names must be here.
	Functions map[string]LambdaFunc
	// OnStatusChange receives the "Step Functions Execution Status Change"
	// events EventBridge would carry (RUNNING, SUCCEEDED, FAILED, TIMED_OUT,
	// ABORTED). It is called synchronously after the change is durable and
	// must not block for long. Optional.
	OnStatusChange func(ctx context.Context, ev StatusChangeEvent)
	// Clock drives Wait states, retry delays and timeouts (default: the
	// system clock).
	Clock Clock
	// Concurrency bounds the functions running at the same time
	// (default 64).
	Concurrency int
	// Region and AccountID appear in ARNs (defaults us-east-1, 123456789012).
	Region    string
	AccountID string
	// Logger receives operational logs (default slog.Default()).
	Logger *slog.Logger
	// Random returns numbers in [0, 1) for FULL retry jitter and for
	// choosing between the two versions of a weighted alias (default
	// math/rand).
	Random func() float64
	// VersionInUse says whether something outside the engine still needs a
	// state machine version (the lifecycle: executions pinned to it). When
	// it says so, DeleteStateMachineVersion is refused with
	// ConflictException, as it is while executions of the engine run on
	// the version or an alias routes to it. It is called while version
	// changes are locked: it must not call the engine's API. Optional.
	VersionInUse func(ctx context.Context, versionARN string) (bool, error)
}

// Engine runs executions of one state machine. Create it with New, resume
// the executions of a previous process with Start, serve the API with
// Handler, stop it with Close.
type Engine struct {
	sm        *asl.StateMachine
	store     store.Store
	functions map[string]LambdaFunc
	onStatus  func(context.Context, StatusChangeEvent)
	clock     Clock
	log       *slog.Logger
	random    func() float64
	region    string
	account   string
	smName    string
	smArn     string
	// def is the definition as loaded (placeholders substituted), which
	// DescribeStateMachine returns; created is when New ran, its
	// creationDate (the engine keeps no state machine record).
	def     []byte
	created time.Time
	// digest is the hex SHA-256 of def: its name in the store (SFNDEF#),
	// which every execution records (see versions.go).
	digest string

	versionInUse func(ctx context.Context, versionARN string) (bool, error)
	// versionsMu serializes publishing, deleting and alias changes
	// (exclusive) against starts on a version or alias (shared), so a
	// version is never deleted under an execution starting on it.
	versionsMu sync.RWMutex
	defsMu     sync.Mutex // guards defs
	defs       map[string]*loadedDef
	starts     startCache

	baseCtx context.Context
	cancel  context.CancelFunc
	slots   chan struct{}

	mu    sync.Mutex // guards execs; never held while taking an execution's lock
	execs map[string]*execution

	life    sync.Mutex // guards started, closing and wg.Add
	started bool
	closing bool
	wg      sync.WaitGroup
}

// execution is a running execution held in memory. Its lock guards
// everything; it is not held while a function runs.
type execution struct {
	mu  sync.Mutex
	rec *record
	// sm is the definition the execution runs: the one it started on
	// (record.Def), whatever the engine's current one is.
	sm      *asl.StateMachine
	version int64
	// input is the execution input, decoded once ($$.Execution.Input).
	input any
	// invoking: a driver goroutine owns the invocation loop.
	invoking bool
	// gen changes whenever an in-flight invocation stops mattering (the
	// task timed out, the execution stopped); a result from an older
	// generation is dropped.
	gen uint64
	// backoffUntil: the store refused the last write; try again then (ms).
	backoffUntil int64
	stopTimer    func() bool
	timerSeq     uint64
	// pending status-change events, delivered once the lock is released.
	pending []StatusChangeEvent
	// deferred: rec moved on from the last boundary written (a Task
	// completed into another Task to run) without a write; see commitStep.
	deferred bool
}

// New validates the configuration and the definition. It starts nothing:
// call Start to resume stored executions and accept new ones.
func New(cfg Config) (*Engine, error) {
	if cfg.Store == nil {
		return nil, errors.New("sfnlocal: Config.Store is required")
	}
	if cfg.StateMachineName == "" || !validName(cfg.StateMachineName) {
		return nil, fmt.Errorf("sfnlocal: Config.StateMachineName %q is not a valid state machine name", cfg.StateMachineName)
	}
	def, err := asl.Substitute(cfg.Definition, cfg.Substitutions)
	if err != nil {
		return nil, fmt.Errorf("sfnlocal: %w", err)
	}
	sm, err := asl.Parse(def)
	if err != nil {
		return nil, fmt.Errorf("sfnlocal: %w", err)
	}
	var missing []string
	for _, name := range sortedStateNames(sm) {
		st := sm.States[name]
		if st.Type != asl.TypeTask {
			continue
		}
		if _, ok := cfg.Functions[st.FunctionARN]; !ok {
			missing = append(missing, fmt.Sprintf("States.%s: no function registered for %s", name, st.FunctionARN))
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("sfnlocal: %s", strings.Join(missing, "; "))
	}
	e := &Engine{
		sm:        sm,
		store:     cfg.Store,
		functions: cfg.Functions,
		onStatus:  cfg.OnStatusChange,
		clock:     cfg.Clock,
		log:       cfg.Logger,
		random:    cfg.Random,
		region:    cfg.Region,
		account:   cfg.AccountID,
		smName:    cfg.StateMachineName,
		execs:     map[string]*execution{},

		versionInUse: cfg.VersionInUse,
		digest:       digestOf(def),
		defs:         map[string]*loadedDef{},
	}
	e.defs[e.digest] = &loadedDef{raw: def, sm: sm}
	if e.clock == nil {
		e.clock = SystemClock()
	}
	e.def, e.created = def, e.clock.Now()
	if e.log == nil {
		e.log = slog.Default()
	}
	if e.random == nil {
		e.random = rand.Float64
	}
	if e.region == "" {
		e.region = "us-east-1"
	}
	if e.account == "" {
		e.account = "123456789012"
	}
	n := cfg.Concurrency
	if n <= 0 {
		n = 64
	}
	e.slots = make(chan struct{}, n)
	e.smArn = fmt.Sprintf("arn:aws:states:%s:%s:stateMachine:%s", e.region, e.account, e.smName)
	e.baseCtx, e.cancel = context.WithCancel(context.Background())
	return e, nil
}

// StateMachineArn is the ARN to pass to StartExecution.
func (e *Engine) StateMachineArn() string { return e.smArn }

// ExecutionArn is the ARN of the execution with the given name.
func (e *Engine) ExecutionArn(name string) string {
	return fmt.Sprintf("arn:aws:states:%s:%s:execution:%s:%s", e.region, e.account, e.smName, name)
}

// Start resumes every running execution found in the store, as Step
// Functions would after an outage: a Task whose result was not recorded is
// invoked again, a task-token wait keeps waiting with its original token
// and deadlines, Wait states and retry delays keep their due times. It must
// be called once, before the API is served.
func (e *Engine) Start(ctx context.Context) error {
	e.life.Lock()
	if e.started || e.closing {
		e.life.Unlock()
		return errors.New("sfnlocal: Start called twice or after Close")
	}
	e.started = true
	e.life.Unlock()

	// The current definition is stored before any execution names it, so
	// every execution can be resumed on its own definition later.
	if err := e.storeDefinition(ctx, e.def); err != nil {
		return fmt.Errorf("sfnlocal: %w", err)
	}

	after := ""
	resumed := 0
	for {
		page, err := e.store.QueryIndex(ctx, store.IndexOpen, openIndexPK, store.QueryOptions{After: after, Limit: 1000})
		if err != nil {
			return fmt.Errorf("sfnlocal: list running executions: %w", err)
		}
		for _, it := range page.Items {
			if len(it.Body) == 0 { // an index that projects keys only
				if it, err = e.store.Get(ctx, it.Key()); err != nil {
					return fmt.Errorf("sfnlocal: read running execution %s: %w", it.Key(), err)
				}
			}
			if err := e.resume(ctx, it); err != nil {
				return err
			}
			resumed++
		}
		if page.Next == "" {
			break
		}
		after = page.Next
	}
	e.log.Info("sfnlocal: started", "state_machine", e.smName, "resumed_executions", resumed)
	return nil
}

func (e *Engine) resume(ctx context.Context, it store.Item) error {
	r, err := decodeRecord(it)
	if err != nil {
		return fmt.Errorf("sfnlocal: %w", err)
	}
	if r.StateMachine != e.smName || r.Status != statusRunning {
		return nil
	}
	if err := r.unpack(); err != nil {
		return fmt.Errorf("sfnlocal: %w", err)
	}
	// The item holds the position of the first boundary; the log holds
	// every later one. The last position logged is where the execution is.
	entries, err := e.readLog(ctx, r.Name)
	if err != nil {
		return fmt.Errorf("sfnlocal: %w", err)
	}
	itemFirst := r.firstEventID()
	itemEvents := r.Events
	last := r.NextEventID
	for _, le := range entries {
		if le.Pos != nil {
			r.position = *le.Pos
		}
		r.Logged = max(r.Logged, le.To)
	}
	r.NextEventID = max(r.NextEventID, r.Logged, last)
	// The item's own events (those of its creation) stay buffered until
	// the log has them.
	r.Events = nil
	for i, ev := range itemEvents {
		if itemFirst+int64(i) > r.Logged {
			r.Events = append(r.Events, ev)
		}
	}
	x := &execution{rec: r, version: it.Version, sm: e.sm}
	var defProblem string
	if r.Def != "" {
		// Its own definition, never the current one (executions written
		// before definitions were stored name none: they run the current).
		if x.sm, err = e.definition(ctx, r.Def); err != nil {
			if !errors.Is(err, errDefinitionUnusable) {
				return fmt.Errorf("sfnlocal: execution %s: %w", r.Name, err)
			}
			x.sm, defProblem = e.sm, err.Error()
		}
	}
	if x.input, err = asl.DecodeJSON([]byte(r.Input)); err != nil {
		return fmt.Errorf("sfnlocal: execution %s: stored input: %w", r.Name, err)
	}
	e.mu.Lock()
	e.execs[r.Name] = x
	e.mu.Unlock()

	x.mu.Lock()
	now := e.clock.Now()
	if r.State == "" && r.NextEventID == 0 {
		// Created bare (its input was too large to share the item with its
		// first position) and stopped before logging that position: start
		// it now, as it would have started.
		w := x.rec.clone()
		w.addEvent(fromMS(w.Start), event{Type: "ExecutionStarted", ExecutionStarted: &execStartedDetails{Input: w.Input, InputDetails: notTruncated, RoleArn: e.roleArn()}})
		if defProblem != "" {
			e.failExecution(w, asl.ErrRuntime, defProblem, now)
		} else {
			e.enter(x, w, x.sm.StartAt, x.input, now)
		}
		if err := e.commit(ctx, x, w); err != nil {
			x.mu.Unlock()
			return fmt.Errorf("sfnlocal: execution %s: %w", r.Name, err)
		}
		e.kick(x)
		e.unlock(x)
		return nil
	}
	problem := defProblem
	switch {
	case problem != "":
	case x.sm.States[r.State] == nil:
		// Only an execution that names no definition (written before
		// definitions were stored) can get here: it runs the current one.
		problem = fmt.Sprintf("the state %q no longer exists in the state machine definition", r.State)
	}
	if problem == "" {
		if r.in, err = asl.DecodeJSON(r.StateInput); err != nil {
			problem = "the stored state input is not JSON: " + err.Error()
		}
	}
	if problem != "" {
		w := x.rec.clone()
		e.failExecution(w, asl.ErrRuntime, problem, now)
		if err := e.commit(ctx, x, w); err != nil {
			x.mu.Unlock()
			return fmt.Errorf("sfnlocal: execution %s: %w", r.Name, err)
		}
	}
	e.arm(x)
	e.kick(x)
	e.unlock(x)
	return nil
}

// Close stops the engine: no new invocation starts, timers stop, and
// functions already running are given until ctx ends to return (their
// results are recorded); then their contexts are cancelled and whatever
// they return is ignored (they will be invoked again after a restart).
// Stop serving Handler before calling Close; close the store after.
func (e *Engine) Close(ctx context.Context) error {
	e.life.Lock()
	if e.closing {
		e.life.Unlock()
		return nil
	}
	e.closing = true
	e.life.Unlock()

	for _, x := range e.running() {
		x.mu.Lock()
		if x.stopTimer != nil {
			x.stopTimer()
			x.stopTimer = nil
		}
		x.timerSeq++
		x.mu.Unlock()
	}

	done := make(chan struct{})
	go func() {
		e.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		e.cancel()
		e.flushDeferred(ctx)
		return nil
	case <-ctx.Done():
	}
	e.cancel()
	// Functions that honour their context return promptly now.
	select {
	case <-done:
		e.flushDeferred(ctx)
		return nil
	case <-time.After(5 * time.Second):
		return fmt.Errorf("sfnlocal: close: functions still running after cancellation: %w", ctx.Err())
	}
}

// flushDeferred writes the position of every execution that moved on
// without a write (commitStep), so an orderly shutdown re-runs nothing
// after the restart. A failure here only means those Tasks run again.
func (e *Engine) flushDeferred(ctx context.Context) {
	ctx = context.WithoutCancel(ctx)
	for _, x := range e.running() {
		x.mu.Lock()
		if x.deferred && x.rec.Status == statusRunning {
			w := x.rec.clone()
			if err := e.appendLog(ctx, w, true); err != nil {
				e.log.Warn("sfnlocal: could not write an execution's position at shutdown; its last Tasks run again after the restart", "execution", w.Name, "err", err)
			} else {
				x.rec, x.deferred = w, false
			}
		}
		x.mu.Unlock()
	}
}

// running lists the executions this engine runs.
func (e *Engine) running() []*execution {
	e.mu.Lock()
	defer e.mu.Unlock()
	xs := make([]*execution, 0, len(e.execs))
	for _, x := range e.execs {
		xs = append(xs, x)
	}
	return xs
}

// track registers a goroutine (or timer callback) so Close can wait for it;
// it refuses once the engine is closing.
func (e *Engine) track() bool {
	e.life.Lock()
	defer e.life.Unlock()
	if e.closing {
		return false
	}
	e.wg.Add(1)
	return true
}

func (e *Engine) untrack() { e.wg.Done() }

func (e *Engine) isClosing() bool {
	e.life.Lock()
	defer e.life.Unlock()
	return e.closing
}

func (e *Engine) isStarted() bool {
	e.life.Lock()
	defer e.life.Unlock()
	return e.started && !e.closing
}

func (e *Engine) lookup(name string) *execution {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.execs[name]
}

func sortedStateNames(sm *asl.StateMachine) []string {
	names := make([]string, 0, len(sm.States))
	for n := range sm.States {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// validName applies Step Functions' rules for state machine and execution
// names: 1-80 characters, none of whitespace, brackets, wildcards, the
// characters " # % \ ^ | ~ ` $ & , ; : / or control characters.
func validName(s string) bool {
	if len(s) == 0 || len(s) > 80 {
		return false
	}
	for _, r := range s {
		switch {
		case r <= 0x20, r >= 0x7f && r <= 0x9f:
			return false
		case strings.ContainsRune("<>{}[]?*\"#%\\^|~`$&,;:/", r):
			return false
		}
	}
	return true
}
