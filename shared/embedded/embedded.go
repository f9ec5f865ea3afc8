package embedded

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/blobstore"
	"github.com/openprogram/lifecycle/shared/control"
	"github.com/openprogram/lifecycle/shared/eventbus"
	"github.com/openprogram/lifecycle/shared/executor"
	"github.com/openprogram/lifecycle/shared/hosttools"
	"github.com/openprogram/lifecycle/shared/hostworker"
	"github.com/openprogram/lifecycle/shared/identity"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/modelreq"
	"github.com/openprogram/lifecycle/shared/policystore"
	"github.com/openprogram/lifecycle/shared/process"
	"github.com/openprogram/lifecycle/shared/recovery"
	"github.com/openprogram/lifecycle/shared/revision"
	"github.com/openprogram/lifecycle/shared/sfnclient"
	"github.com/openprogram/lifecycle/shared/sfnlocal"
	"github.com/openprogram/lifecycle/shared/store"
	"github.com/openprogram/lifecycle/shared/store/sqlitestore"
	"github.com/openprogram/lifecycle/statemachines"
)

// StateMachineName is the embedded state machine's name.
const StateMachineName = "action-lifecycle"

// Config configures the embedded stack.
type Config struct {
	// StateDir holds state.db and blobs/ (created 0700; default
	// DefaultStateDir(Workspace), outside the workspace and its parent). A
	// state directory that overlaps the workspace is refused (CheckStateDir).
	StateDir string
	// Workspace is where the host worker runs host tools (default ./workspace).
	// Empty with NoHostWorker set: no host worker.
	Workspace    string
	NoHostWorker bool
	// Bash is the bash the host worker runs Bash commands with (default
	// "bash" in PATH; checked at Start).
	Bash string
	// Decider decides permissions. Either Decider or NewDecider is required.
	Decider actionflow.Decider
	// NewDecider builds the decider over the stack's own store (the
	// permission engine keeps its refusal counters and policies there).
	NewDecider func(st store.Store) (actionflow.Decider, error)
	// Routes add to executor.DefaultRoutes.
	Routes executor.Routes
	// Executors add to the built-in ones (noop).
	Executors map[string]actionflow.Executor
	// Contracts are the tool contracts calls are checked against when
	// prepared (nil: identity.Builtin); serve adds the downstream MCP
	// tools' input schemas (mcpdownstream.Pool.Contracts).
	Contracts identity.Contracts
	// Store, if set, is used instead of opening StateDir/state.db (benchmarks
	// wrap it to meter usage). The stack does not close it.
	Store store.Store
	// WrapStore, if set, wraps the opened store (e.g. metering).
	WrapStore func(store.Store) store.Store
	// EngineClock drives the engine's timers (default: system clock).
	EngineClock sfnlocal.Clock
	// Clock is the lifecycle's clock (leases, approvals, restart windows;
	// default time.Now). Tests give it the same fake time as EngineClock.
	Clock actionflow.Clock
	// OnStatusChange also receives the engine's status-change events.
	OnStatusChange func(ctx context.Context, ev sfnlocal.StatusChangeEvent)
	// Concurrency of the engine's function invocations (default 64).
	Concurrency int
	Logger      *slog.Logger
	// ApprovalTimeout must match the ASL's AwaitApproval TimeoutSeconds (default 24h).
	ApprovalTimeout time.Duration
	// WrapFunction, if set, wraps each function the engine invokes (the
	// benchmarks count invocations with it).
	WrapFunction func(name string, f sfnlocal.LambdaFunc) sfnlocal.LambdaFunc
	// RestartWindow bounds automatic continuation after an interruption
	// (default unlimited; recovery.Within(0) disables it).
	RestartWindow recovery.Window
	// SweepInterval is the recovery sweeper's period, the stand-in for the
	// EventBridge schedule (default 1 minute; negative: no periodic sweep).
	SweepInterval time.Duration
	// Definition is the state machine definition (default
	// statemachines.ActionLifecycle; tests give another to deploy a new
	// revision across a restart).
	Definition []byte
	// HandlerContract and HandlerResumes are the handler contract this
	// build declares (default revision.HandlerContract and
	// revision.HandlerResumes; tests declare others).
	HandlerContract int
	HandlerResumes  []int
	// VersionInUse is the engine's DeleteStateMachineVersion guard
	// (sfnlocal.Config.VersionInUse): the lifecycle's executions pinned to
	// a version. Optional.
	VersionInUse func(ctx context.Context, versionARN string) (bool, error)
	// RevisionPolicy is the revision policy of executions started from now
	// on: keep_original (default) or use_latest (actionflow, revisions.go).
	RevisionPolicy string
}

// Stack is the running embedded lifecycle.
type Stack struct {
	Store     store.Store
	Service   *actionflow.Service
	Engine    *sfnlocal.Engine
	Bus       *eventbus.Bus
	SFN       *sfn.Client
	SFNClient *sfnclient.Client
	// SFNEndpoint is the engine's loopback URL (AWS_ENDPOINT_URL_SFN).
	SFNEndpoint string
	Host        *hostworker.Worker
	// Processes are the managed processes (of the in-process worker, and
	// of remote workers through the API).
	Processes *process.Service
	// Control is the command service; Recovery the sweeper and restart
	// continuation; Attempt this process's activation.
	Control  *control.Service
	Recovery *recovery.Sweeper
	Attempt  ids.AttemptID
	// Revisions lists every revision this state directory ran; Revision
	// is the live one (the state machine version the `live` alias points
	// at), published at Start when the definition or the handler contract
	// changed. LiveAliasARN and LiveVersionARN are its alias and version.
	Revisions      *revision.Registry
	Revision       revision.Published
	LiveAliasARN   string
	LiveVersionARN string

	ownStore  bool
	lock      *os.File
	sfnServer *http.Server
	transport *http.Transport
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	log       *slog.Logger
	hostWake  chan struct{}
	// failedMachines carries FAILED/TIMED_OUT/ABORTED machines to the sweeper.
	failedMachines chan sfnlocal.StatusChangeEvent
	// startupSwept is closed once the start-up sweep has run (StartupSwept).
	startupSwept chan struct{}
}

// FunctionARN is the ARN the embedded engine uses for a lifecycle function.
func FunctionARN(name string) string {
	return "arn:aws:lambda:us-east-1:123456789012:function:lifecycle-" + name
}

// Start opens the store, builds the service and the engine, resumes stored
// executions and starts the host worker.
func Start(ctx context.Context, cfg Config) (*Stack, error) {
	if cfg.Decider == nil && cfg.NewDecider == nil {
		return nil, errors.New("embedded: Config.Decider or Config.NewDecider is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.StateDir == "" {
		ws := cfg.Workspace
		if ws == "" {
			ws = "workspace"
		}
		d, err := DefaultStateDir(ws)
		if err != nil {
			return nil, err
		}
		cfg.StateDir = d
	}
	if cfg.Workspace != "" && !cfg.NoHostWorker {
		warning, err := CheckStateDir(cfg.StateDir, cfg.Workspace)
		if err != nil {
			return nil, err
		}
		if warning != "" {
			cfg.Logger.Warn(warning, "state_dir", cfg.StateDir, "workspace", cfg.Workspace)
		}
	}
	s := &Stack{log: cfg.Logger, hostWake: make(chan struct{}, 1), failedMachines: make(chan sfnlocal.StatusChangeEvent, 256),
		startupSwept: make(chan struct{}),
		Attempt:      ids.NewAttemptID()}
	if cfg.Store != nil {
		s.Store = cfg.Store
	} else {
		// 0700: the state holds the signing keys, the policies and every
		// tool's arguments and output; no other user reads it.
		was, err := SecureStateDir(cfg.StateDir)
		if err != nil {
			return nil, err
		}
		if was != 0 {
			cfg.Logger.Warn("the state directory was readable by other users; tightened it to 0700", "state_dir", cfg.StateDir, "was", fmt.Sprintf("%04o", was))
		}
		// One process per state directory: two engines resuming the same
		// executions would race each other, and the item cache below
		// relies on this process being the file's only writer.
		lock, err := lockDir(cfg.StateDir)
		if err != nil {
			return nil, err
		}
		s.lock = lock
		st, err := sqlitestore.Open(filepath.Join(cfg.StateDir, "state.db"), sqlitestore.WithItemCache(20_000))
		if err != nil {
			lock.Close()
			return nil, fmt.Errorf("open store: %w", err)
		}
		s.Store, s.ownStore = st, true
	}
	if cfg.WrapStore != nil {
		s.Store = cfg.WrapStore(s.Store)
	}
	fail := func(err error) (*Stack, error) {
		s.Close(context.Background())
		return nil, err
	}
	if cfg.Decider == nil {
		d, err := cfg.NewDecider(s.Store)
		if err != nil {
			return fail(fmt.Errorf("decider: %w", err))
		}
		cfg.Decider = d
	}

	// The engine's API listens first, so the client (and the service that
	// uses it) can be built before the engine that runs the service's handlers.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fail(fmt.Errorf("listen for the engine API: %w", err))
	}
	s.SFNEndpoint = "http://" + ln.Addr().String()
	s.transport = &http.Transport{MaxIdleConnsPerHost: 256}
	s.SFN = sfn.New(sfn.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(s.SFNEndpoint),
		Credentials:  aws.AnonymousCredentials{},
		HTTPClient:   &http.Client{Transport: s.transport},
	})

	s.Bus = eventbus.NewBus()
	executors := map[string]actionflow.Executor{executor.KindNoop: executor.Noop{}}
	for k, v := range cfg.Executors {
		executors[k] = v
	}
	routes := executor.DefaultRoutes.Merge(cfg.Routes)
	smArn := "arn:aws:states:us-east-1:123456789012:stateMachine:" + StateMachineName
	s.SFNClient = &sfnclient.Client{SFN: s.SFN, StateMachineARN: smArn}
	// Model requests: an ending execution closes those its agent left open.
	models := &modelreq.Ledger{Store: s.Store}
	// Managed processes: a cancelled execution stops those it owns.
	s.Processes = &process.Service{Store: s.Store}
	// Each action's machine starts on the revision its execution's policy
	// selects (the registry deployRevision fills); a version an open
	// execution is pinned to is never deleted.
	registry := revision.NewRegistry(s.Store)
	if cfg.VersionInUse == nil {
		cfg.VersionInUse = func(ctx context.Context, versionARN string) (bool, error) {
			return sfnclient.VersionInUse(ctx, registry, s.Service, versionARN)
		}
	}
	s.Service, err = actionflow.New(actionflow.Config{
		Revisions: &sfnclient.Revisions{Client: s.SFNClient, Registry: registry}, RevisionPolicy: cfg.RevisionPolicy,
		Store: s.Store, Decider: cfg.Decider, Router: routes, Executors: executors, Contracts: cfg.Contracts,
		RunWork: actionflow.RunClosers{models, s.Processes},
		Starter: s.SFNClient, Tasks: s.SFNClient, Publisher: s.Bus,
		Blobs: blobstore.Dir{Root: filepath.Join(cfg.StateDir, "blobs")}, Logger: cfg.Logger,
		ApprovalTimeout: cfg.ApprovalTimeout, Notify: s.Bus.Notify, Clock: cfg.Clock,
		// A new execution without its own iteration limit takes its session
		// policy's, and the policy's idle timeout.
		Defaults: policystore.New(s.Store, nil),
		// The in-process host worker's claims carry this activation, so the
		// next process closes what this one's worker never finished.
		Process: s.Attempt,
		// Prepare refuses path arguments outside the host worker's workspace.
		Workspace: workspace(cfg),
	})
	if err != nil {
		ln.Close()
		return fail(err)
	}
	models.Flow, models.Clock = s.Service, s.Service.Now
	s.Processes.Flow, s.Processes.Clock = s.Service, s.Service.Now

	if s.Control, err = control.New(control.Config{Flow: s.Service, Logger: cfg.Logger}); err != nil {
		ln.Close()
		return fail(err)
	}
	// A session's own restart window (its policy's restart_window_seconds)
	// decides for its executions; RestartWindow is the default.
	if s.Recovery, err = recovery.New(recovery.Config{Flow: s.Service, Control: s.Control, Machines: s.SFNClient,
		Window: cfg.RestartWindow, Windows: policystore.New(s.Store, nil), Run: models, Logger: cfg.Logger}); err != nil {
		ln.Close()
		return fail(err)
	}
	// Restart continuation first: it needs only the store, and decides each
	// interrupted execution before anything runs again.
	if reps, err := s.Recovery.Startup(ctx, s.Attempt); err != nil {
		s.log.Warn("start-up recovery had failures; the sweeper retries", "error", err)
	} else if len(reps) > 0 {
		s.log.Info("start-up recovery", "attempt_id", s.Attempt, "executions", len(reps))
	}
	// The requests this service's previous process made itself (the
	// reviewer's) died with it: closed incomplete. The agent's own
	// requests live in the agent's process and close when their
	// execution ends.
	if n, err := models.Sweep(ctx, s.Service.Now()); err != nil {
		s.log.Warn("closing lost model requests failed", "error", err)
	} else if n > 0 {
		s.log.Info("closed lost model requests as incomplete", "model_requests", n)
	}
	onStatus := func(ctx context.Context, ev sfnlocal.StatusChangeEvent) {
		if cfg.OnStatusChange != nil {
			cfg.OnStatusChange(ctx, ev)
		}
		switch ev.Detail.Status {
		case "FAILED", "TIMED_OUT", "ABORTED":
			select {
			case s.failedMachines <- ev:
			default: // the periodic sweep covers it
			}
		}
	}

	functions := map[string]sfnlocal.LambdaFunc{}
	subs := map[string]string{}
	handlers := map[string]any{
		"authorize": s.Service.Authorize,
		"approval":  s.Service.ApprovalStep,
		"dispatch":  s.dispatchAndWake,
		"record":    s.Service.Record,
		// Only executions started on an earlier revision's definition,
		// which still has a Project state, call it (the record step
		// projects now): on an action record projected it only publishes
		// the stored event again.
		"project": s.Service.Project,
	}
	placeholders := maps.Clone(statemachines.Functions)
	maps.Copy(placeholders, statemachines.Retired) // earlier revisions' definitions still name them
	for placeholder, name := range placeholders {
		h, ok := handlers[name]
		if !ok {
			ln.Close()
			return fail(fmt.Errorf("no handler for function %s", name))
		}
		arn := FunctionARN(name)
		subs[placeholder] = arn
		functions[arn] = sfnlocal.Handler(h)
		if cfg.WrapFunction != nil {
			functions[arn] = cfg.WrapFunction(name, functions[arn])
		}
	}
	if cfg.Definition == nil {
		cfg.Definition = statemachines.ActionLifecycle
	}
	s.Engine, err = sfnlocal.New(sfnlocal.Config{
		Store: s.Store, Definition: cfg.Definition, Substitutions: subs,
		StateMachineName: StateMachineName, Functions: functions, Clock: cfg.EngineClock,
		Concurrency: cfg.Concurrency, Logger: cfg.Logger, OnStatusChange: onStatus,
		VersionInUse: cfg.VersionInUse,
	})
	if err != nil {
		ln.Close()
		return fail(fmt.Errorf("engine: %w", err))
	}
	if got := s.Engine.StateMachineArn(); got != smArn {
		ln.Close()
		return fail(fmt.Errorf("engine state machine ARN %s, want %s", got, smArn))
	}
	s.sfnServer = &http.Server{Handler: s.Engine.Handler(), ReadHeaderTimeout: 10 * time.Second}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := s.sfnServer.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("engine API stopped", "error", err)
		}
	}()
	if err := s.Engine.Start(ctx); err != nil {
		return fail(fmt.Errorf("resume executions: %w", err))
	}
	if err := s.deployRevision(ctx, cfg); err != nil {
		return fail(err)
	}

	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.cancel = cancel
	every := cfg.SweepInterval
	if every == 0 {
		every = time.Minute
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.sweep(runCtx, every)
	}()
	if !cfg.NoHostWorker {
		ws := workspace(cfg)
		if err := os.MkdirAll(ws, 0o755); err != nil {
			return fail(fmt.Errorf("workspace: %w", err))
		}
		runner, err := hosttools.NewRunner(ws, cfg.Bash)
		if err != nil {
			return fail(err)
		}
		// The sandbox hides the state directory and the credential stores
		// from every host tool (bubblewrap missing: refused unless off).
		home, _ := os.UserHomeDir()
		conf, err := hosttools.NewConfinement(nil, home, cfg.StateDir)
		if err != nil {
			return fail(err)
		}
		runner.Sandbox = &conf
		direct := hostworker.Direct{Service: s.Service, Wake: s.hostWake, Processes: s.Processes}
		// The in-process worker's supervisor is host "embedded": its
		// processes cannot outlive this process's worker, so at start-up
		// those of the previous process are lost (Recover).
		s.Host = &hostworker.Worker{Host: direct, Runner: runner, Log: cfg.Logger, Poll: 2 * time.Second,
			Processes: hostworker.NewSupervisor(direct, EmbeddedSupervisorHost, cfg.Logger)}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.Host.Run(runCtx)
		}()
	}
	return s, nil
}

// StartupSwept is closed once the start-up sweep (the first recovery and
// process sweep, run in the background as Start returns) has finished. A
// caller that drives the sweeps itself (SweepInterval < 0) and moves the
// clock waits for it, so the start-up sweep never judges what it set up.
func (s *Stack) StartupSwept() <-chan struct{} { return s.startupSwept }

// EmbeddedSupervisorHost is the supervisor host name of the in-process
// host worker.
const EmbeddedSupervisorHost = "embedded"

// workspace is the host worker's directory (default ./workspace; empty
// with NoHostWorker and no Workspace).
func workspace(cfg Config) string {
	if cfg.Workspace == "" && !cfg.NoHostWorker {
		return "workspace"
	}
	return cfg.Workspace
}

// dispatchAndWake runs the dispatch step and wakes the host worker after a
// host task is published.
func (s *Stack) dispatchAndWake(ctx context.Context, in actionflow.StepInput) (actionflow.DispatchOutput, error) {
	out, err := s.Service.Dispatch(ctx, in)
	if in.Mode == "publish" && err == nil {
		select {
		case s.hostWake <- struct{}{}:
		default:
		}
	}
	return out, err
}

// sweep runs the recovery sweeper: at once (the start-up repair of
// actions, now that the engine serves), on every failed machine, and every
// interval (every < 0: only the first two).
func (s *Stack) sweep(ctx context.Context, every time.Duration) {
	var tick <-chan time.Time
	if every > 0 {
		t := time.NewTicker(every)
		defer t.Stop()
		tick = t.C
	}
	first := true
	for {
		if rep, err := s.Recovery.Sweep(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("recovery sweep had failures", "errors", rep.Errors, "error", err)
		}
		// Remote workers' processes whose supervisor stopped reporting.
		if n, err := s.Processes.Sweep(ctx, s.Service.Now().Add(-process.LostAfter)); err != nil && ctx.Err() == nil {
			s.log.Warn("process sweep failed", "error", err)
		} else if n > 0 {
			s.log.Warn("managed processes lost (their supervisor stopped reporting)", "processes", n)
		}
		if first {
			first = false
			close(s.startupSwept)
		}
		for waiting := true; waiting; {
			select {
			case <-ctx.Done():
				return
			case ev := <-s.failedMachines:
				s.Recovery.OnStatusChange(ctx, ev.Detail.Name, ev.Detail.Status)
			case <-tick:
				waiting = false
			}
		}
	}
}

// Close stops the host worker, the sweeper and the engine (no dispatch
// after this), then requests the cooperative pause of every running
// execution (owned by restart recovery, with its restart intent), and
// closes the store. A ctx already done is a hard stop: functions still
// running are abandoned at once and no pause is requested, as when the
// process is killed (start-up recovery then treats the executions as
// abandoned).
func (s *Stack) Close(ctx context.Context) error {
	orderly := ctx.Err() == nil
	if !orderly && s.Host != nil && s.Host.Processes != nil {
		// As when the process is killed: the managed processes die with
		// it unrecorded; the next start finds them lost.
		s.Host.Processes.Abandon()
	}
	if s.cancel != nil {
		s.cancel()
	}
	var errs []error
	if s.Engine != nil {
		errs = append(errs, s.Engine.Close(ctx))
	}
	if s.transport != nil {
		// A connection the client dialed but never used (it lost a race to
		// an idle one) looks new to the server, which waits 5 seconds for
		// its first request before Shutdown may close it.
		s.transport.CloseIdleConnections()
	}
	if s.sfnServer != nil {
		errs = append(errs, s.sfnServer.Shutdown(ctx))
	}
	s.wg.Wait()
	if s.Recovery != nil && orderly {
		if _, err := s.Recovery.Shutdown(context.WithoutCancel(ctx), s.Attempt); err != nil {
			errs = append(errs, fmt.Errorf("orderly shutdown: %w", err))
		}
	}
	if s.ownStore && s.Store != nil {
		errs = append(errs, s.Store.Close())
		s.ownStore = false
	}
	if s.lock != nil {
		errs = append(errs, s.lock.Close()) // releases the flock
		s.lock = nil
	}
	return errors.Join(errs...)
}
