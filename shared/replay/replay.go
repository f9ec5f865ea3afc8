package replay

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/gowebpki/jcs"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/permission"
	"github.com/openprogram/lifecycle/shared/permission/riskreview"
	"github.com/openprogram/lifecycle/shared/store"
)

// Bounds of one replay.
const (
	// MaxSessions a replay may cover.
	MaxSessions = 100
	// MaxChanges is how many changed actions a report lists (the counts
	// cover every action): with reasons clipped to maxDetail, a report
	// stays well under DynamoDB's 400 KB item, candidate document included.
	MaxChanges = 100
	maxDetail  = 240
	// MaxWindow is the longest window.
	MaxWindow = 90 * 24 * time.Hour
	// priorCalls is the multi-step review's lookback (riskreview.MaxPriorCalls).
	priorCalls = riskreview.MaxPriorCalls
)

// How the automatic reviewer's verdict of a candidate decision was had.
const (
	// VerdictRecorded: the live decision's own verdict, reused.
	VerdictRecorded = "recorded"
	// VerdictDeterministic: none was recorded; the built-in deterministic
	// reviewer (no model) gave it.
	VerdictDeterministic = "deterministic"
)

// Reason is a decision's reason, as the report shows it.
type Reason struct {
	Source string `json:"source"`
	Code   string `json:"code"`
	Rule   string `json:"rule,omitempty"`
	Detail string `json:"detail,omitempty"`
}

func reasonOf(r permission.Reason) Reason {
	return Reason{Source: string(r.Source), Code: string(r.Code), Rule: clip(r.Rule, maxDetail), Detail: clip(r.Detail, maxDetail)}
}

// Transition counts the actions whose decision went From → To.
type Transition struct {
	From  lifecycle.Permission `json:"from"`
	To    lifecycle.Permission `json:"to"`
	Count int                  `json:"count"`
}

// Change is one action whose decision the candidate changes.
type Change struct {
	SessionID   ids.SessionID        `json:"session_id"`
	ExecutionID ids.ExecutionID      `json:"execution_id"`
	ActionID    ids.ActionID         `json:"action_id"`
	Tool        string               `json:"tool"`
	Summary     string               `json:"summary"`
	CreatedAt   time.Time            `json:"created_at"`
	From        lifecycle.Permission `json:"from"`
	To          lifecycle.Permission `json:"to"`
	Live        Reason               `json:"live_reason"`
	Candidate   Reason               `json:"candidate_reason"`
	// Verdict says how the reviewer's verdict of the candidate decision
	// was had (VerdictRecorded, VerdictDeterministic); empty when the
	// candidate decision needed none.
	Verdict string `json:"verdict,omitempty"`
}

// Report is the result of one replay.
type Report struct {
	ReplayID string          `json:"replay_id"`
	Sessions []ids.SessionID `json:"sessions"`
	Since    time.Time       `json:"since"`
	Until    time.Time       `json:"until"`
	// CandidateDigest is "sha256:<hex>" of the candidate document's RFC
	// 8785 canonical form: a policy change of the same document matches it.
	CandidateDigest  string          `json:"candidate_digest"`
	CandidateVersion string          `json:"candidate_version"`
	Candidate        json.RawMessage `json:"candidate"`
	// Replayed actions were decided again; Unchanged of them the same.
	Replayed  int `json:"replayed"`
	Unchanged int `json:"unchanged"`
	// Skipped: in the window, but not decided by the engine (refused
	// before it, or not decided yet).
	Skipped     int          `json:"skipped"`
	Transitions []Transition `json:"transitions"`
	Changes     []Change     `json:"changes"`
	// ChangesTruncated: more than MaxChanges actions changed; the counts
	// cover them all.
	ChangesTruncated bool `json:"changes_truncated,omitempty"`
	// VerdictsRecorded and VerdictsDeterministic count the candidate
	// decisions that needed the reviewer, by how its verdict was had.
	VerdictsRecorded      int                  `json:"verdicts_recorded"`
	VerdictsDeterministic int                  `json:"verdicts_deterministic"`
	CreatedAt             time.Time            `json:"created_at"`
	CreatedBy             actionflow.Principal `json:"created_by"`
	DurationMS            int64                `json:"duration_ms"`
}

// Request asks for one replay.
type Request struct {
	Candidate json.RawMessage
	Sessions  []ids.SessionID
	// Since and Until bound the actions' creation times [Since, Until).
	Since, Until time.Time
	By           actionflow.Principal
}

// Actions reads a session's recorded actions, oldest id first
// (actionflow.History).
type Actions interface {
	EachOfSession(ctx context.Context, session ids.SessionID, fn func(actionflow.Action) error) error
}

// Config wires a Replayer.
type Config struct {
	// Engine is the live permission engine; a replay decides through its
	// Replaying copy.
	Engine *permission.Engine
	// Context is the trusted context the live decider gives an action
	// (decider.Decider.Trusted).
	Context func(a actionflow.Action) permission.Trusted
	// Actions reads the recorded actions; Store keeps the reports.
	Actions Actions
	Store   store.Store
	Clock   func() time.Time
}

// Replayer runs and keeps policy replays.
type Replayer struct {
	cfg Config
}

// New checks cfg.
func New(cfg Config) (*Replayer, error) {
	if cfg.Engine == nil || cfg.Context == nil || cfg.Actions == nil || cfg.Store == nil {
		return nil, errors.New("replay: Engine, Context, Actions and Store are required")
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	return &Replayer{cfg: cfg}, nil
}

// Digest is "sha256:<hex>" of a policy document's RFC 8785 canonical form.
func Digest(doc json.RawMessage) (string, error) {
	c, err := jcs.Transform(doc)
	if err != nil {
		return "", fmt.Errorf("canonicalize the policy document: %w", err)
	}
	sum := sha256.Sum256(c)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// Run replays the candidate over the recorded actions of the sessions in
// the window, stores the report and returns it. An invalid request is an
// *actionflow.ValidationError naming the field.
func (r *Replayer) Run(ctx context.Context, req Request) (Report, error) {
	start := time.Now()
	pol, err := permission.ParsePolicy(req.Candidate)
	if err != nil {
		return Report{}, &actionflow.ValidationError{Field: "policy", Msg: err.Error()}
	}
	digest, err := Digest(req.Candidate)
	if err != nil {
		return Report{}, &actionflow.ValidationError{Field: "policy", Msg: err.Error()}
	}
	if err := validate(req); err != nil {
		return Report{}, err
	}
	now := r.cfg.Clock().UTC()
	rep := Report{ReplayID: ids.New("rpl"), Sessions: req.Sessions, Since: req.Since.UTC(), Until: req.Until.UTC(),
		CandidateDigest: digest, CandidateVersion: pol.Version, Candidate: req.Candidate,
		Transitions: []Transition{}, Changes: []Change{}, CreatedAt: now, CreatedBy: req.By}
	counts := map[[2]lifecycle.Permission]int{}
	for _, s := range req.Sessions {
		if err := r.session(ctx, s, pol, req, &rep, counts); err != nil {
			return Report{}, err
		}
	}
	for k, n := range counts {
		rep.Transitions = append(rep.Transitions, Transition{From: k[0], To: k[1], Count: n})
	}
	sort.Slice(rep.Transitions, func(i, j int) bool {
		a, b := rep.Transitions[i], rep.Transitions[j]
		if a.From != b.From {
			return a.From < b.From
		}
		return a.To < b.To
	})
	rep.DurationMS = time.Since(start).Milliseconds()
	if err := r.save(ctx, rep); err != nil {
		return Report{}, err
	}
	return rep, nil
}

func validate(req Request) error {
	if len(req.Sessions) == 0 {
		return &actionflow.ValidationError{Field: "sessions", Msg: "name at least one session"}
	}
	if len(req.Sessions) > MaxSessions {
		return &actionflow.ValidationError{Field: "sessions", Msg: fmt.Sprintf("%d sessions, more than %d", len(req.Sessions), MaxSessions)}
	}
	seen := map[ids.SessionID]bool{}
	for i, s := range req.Sessions {
		if err := ids.Validate("session id", string(s)); err != nil {
			return &actionflow.ValidationError{Field: fmt.Sprintf("sessions[%d]", i), Msg: err.Error()}
		}
		if seen[s] {
			return &actionflow.ValidationError{Field: fmt.Sprintf("sessions[%d]", i), Msg: "named twice"}
		}
		seen[s] = true
	}
	if req.Since.IsZero() || req.Until.IsZero() || !req.Since.Before(req.Until) {
		return &actionflow.ValidationError{Field: "since", Msg: "the window needs since before until"}
	}
	if req.Until.Sub(req.Since) > MaxWindow {
		return &actionflow.ValidationError{Field: "since", Msg: fmt.Sprintf("the window is longer than %s", MaxWindow)}
	}
	return nil
}

// job is one recorded action to decide again; outcome its candidate decision.
type job struct {
	a     actionflow.Action
	live  permission.Decision
	prior []permission.PriorCall
}

type outcome struct {
	cand    permission.Decision
	verdict string
	err     error
}

// batch is how many actions are decided in parallel when the candidate's
// decisions do not depend on their order. In auto mode they do (the
// refusal counters, the execution's earlier calls): one at a time.
const batch = 256

// session replays one session's actions in order.
func (r *Replayer) session(ctx context.Context, session ids.SessionID, pol *permission.Policy, req Request, rep *Report, counts map[[2]lifecycle.Permission]int) error {
	eng := r.cfg.Engine.Replaying(recorded{fallback: riskreview.New()}, newCounters())
	size, workers := batch, runtime.GOMAXPROCS(0)
	if pol.Mode == permission.ModeAuto {
		size, workers = 1, 1
	}
	history := map[ids.ExecutionID][]permission.PriorCall{}
	jobs := make([]job, 0, size)
	outs := make([]outcome, size)
	flush := func() error {
		decideAll(ctx, eng, r.cfg.Context, pol, jobs, outs[:len(jobs)], workers)
		for i, j := range jobs {
			if err := r.tally(j, outs[i], rep, counts, history); err != nil {
				return err
			}
		}
		jobs = jobs[:0]
		return nil
	}
	err := r.cfg.Actions.EachOfSession(ctx, session, func(a actionflow.Action) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if a.CreatedAt.Before(req.Since) || !a.CreatedAt.Before(req.Until) {
			return nil
		}
		live, ok := liveDecision(a)
		if !ok {
			rep.Skipped++
			return nil
		}
		jobs = append(jobs, job{a: a, live: live, prior: history[a.ExecutionID]})
		if len(jobs) == size {
			return flush()
		}
		return nil
	})
	if err == nil && len(jobs) > 0 {
		err = flush()
	}
	if err != nil {
		return fmt.Errorf("replay session %s: %w", session, err)
	}
	return nil
}

// decideAll decides the jobs with the replay engine, on workers goroutines.
func decideAll(ctx context.Context, eng *permission.Engine, trusted func(actionflow.Action) permission.Trusted, pol *permission.Policy, jobs []job, outs []outcome, workers int) {
	one := func(i int) {
		j := jobs[i]
		how := new(string)
		vctx := context.WithValue(ctx, verdictKey{}, &recordedVerdict{v: j.live.Reason.Verdict, how: how})
		prior := j.prior
		cand, err := eng.Decide(vctx, permission.Request{
			Trusted: trusted(j.a),
			Call:    permission.Call{ActionID: j.a.ActionID, Tool: j.a.Tool, Args: j.a.Arguments, Digest: j.a.ArgsDigest},
			Policy:  pol,
			Recent:  func(context.Context) ([]permission.PriorCall, error) { return prior, nil },
		})
		var ic *permission.InvalidCallError
		if errors.As(err, &ic) {
			cand, err = permission.Decision{Permission: lifecycle.PermissionDeny,
				Reason: permission.Reason{Source: "invalid_arguments", Code: "invalid_arguments", Detail: ic.Error()}}, nil
		}
		outs[i] = outcome{cand: cand, verdict: *how, err: err}
	}
	if workers <= 1 || len(jobs) == 1 {
		for i := range jobs {
			one(i)
		}
		return
	}
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				one(i)
			}
		}()
	}
	for i := range jobs {
		next <- i
	}
	close(next)
	wg.Wait()
}

// tally adds one decided action to the report, in action order.
func (r *Replayer) tally(j job, o outcome, rep *Report, counts map[[2]lifecycle.Permission]int, history map[ids.ExecutionID][]permission.PriorCall) error {
	a, live, cand := j.a, j.live, o.cand
	if o.err != nil {
		return fmt.Errorf("replay action %s: %w", a.ActionID, o.err)
	}
	switch o.verdict {
	case VerdictRecorded:
		rep.VerdictsRecorded++
	case VerdictDeterministic:
		rep.VerdictsDeterministic++
	}
	if cand.Permission != lifecycle.PermissionDeny {
		// It may have run: a later call of the execution may run what it downloaded.
		p := append([]permission.PriorCall{{ActionID: a.ActionID, Tool: a.Tool, Args: a.Arguments, Permission: cand.Permission}}, j.prior...)
		if len(p) > priorCalls {
			p = p[:priorCalls]
		}
		history[a.ExecutionID] = p
	}
	rep.Replayed++
	counts[[2]lifecycle.Permission{live.Permission, cand.Permission}]++
	if cand.Permission == live.Permission {
		rep.Unchanged++
		return nil
	}
	if len(rep.Changes) >= MaxChanges {
		rep.ChangesTruncated = true
		return nil
	}
	rep.Changes = append(rep.Changes, Change{SessionID: a.SessionID, ExecutionID: a.ExecutionID, ActionID: a.ActionID,
		Tool: a.Tool, Summary: summary(a), CreatedAt: a.CreatedAt, From: live.Permission, To: cand.Permission,
		Live: reasonOf(live.Reason), Candidate: reasonOf(cand.Reason), Verdict: o.verdict})
	return nil
}

// liveDecision is the engine's record of the action's first decision.
func liveDecision(a actionflow.Action) (permission.Decision, bool) {
	d := a.InitialDecision
	if d == nil {
		d = a.Decision
	}
	if d == nil || len(d.Engine) == 0 {
		return permission.Decision{}, false // not decided yet, or refused before the engine
	}
	// Only the permission and the reason (with the reviewer's verdict)
	// matter here; the rest of the record is not decoded.
	var slim struct {
		Permission lifecycle.Permission `json:"permission"`
		Reason     permission.Reason    `json:"reason"`
	}
	if err := json.Unmarshal(d.Engine, &slim); err != nil || slim.Permission == "" {
		return permission.Decision{}, false
	}
	pd := permission.Decision{Permission: slim.Permission, Reason: slim.Reason}
	if d.Mode == "revalidate" && a.InitialDecision == nil {
		// Recorded before the first decision was kept: the revalidation
		// followed an approval, so the first decision was an ask.
		pd.Permission = lifecycle.PermissionAsk
		pd.Reason = permission.Reason{Source: permission.SourceApproval, Code: "asked", Detail: "the first decision was an ask (approved; its reason was not kept)"}
	}
	return pd, true
}

// summary is a one-line description of the call (the command of a Bash call).
func summary(a actionflow.Action) string {
	var m map[string]any
	_ = json.Unmarshal(a.Arguments, &m)
	for _, k := range []string{"command", "file_path", "path", "url", "pattern"} {
		if s, ok := m[k].(string); ok && s != "" {
			return clip(s, 200)
		}
	}
	return clip(string(a.Arguments), 200)
}

func clip(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// recorded is the replay's classifier: the live decision's verdict when
// it has one, else the deterministic reviewer without a model. The
// action's recorded verdict rides on the context (decideAll), so one
// classifier serves parallel decisions.
type recorded struct {
	fallback *riskreview.Reviewer
}

type verdictKey struct{}

// recordedVerdict is one action's recorded verdict, and where the replay
// notes how the verdict it used was had.
type recordedVerdict struct {
	v   *permission.Verdict
	how *string
}

func (c recorded) Review(ctx context.Context, in permission.ReviewInput) (permission.Verdict, error) {
	rv, _ := ctx.Value(verdictKey{}).(*recordedVerdict)
	if rv != nil && rv.v != nil && rv.v.Valid() {
		*rv.how = VerdictRecorded
		v := *rv.v
		v.Reason = "(recorded verdict) " + v.Reason
		return v, nil
	}
	if rv != nil {
		*rv.how = VerdictDeterministic
	}
	return c.fallback.Review(ctx, in)
}

// counters are the refusal counters of one replay, in memory: the same
// semantics as the store's (each action counted once per operation).
type counters struct {
	mu      sync.Mutex
	c       map[store.CounterKey]store.Counter
	members map[string]bool
}

func newCounters() *counters {
	return &counters{c: map[store.CounterKey]store.Counter{}, members: map[string]bool{}}
}

func (m *counters) ApplyCounter(_ context.Context, key store.CounterKey, member string, op store.CounterOp) (store.Counter, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := key.SessionID + "\x00" + key.Epoch + "\x00" + string(op) + "\x00" + member
	if m.members[k] {
		return m.c[key], false, nil
	}
	c, err := m.c[key].Apply(op)
	if err != nil {
		return store.Counter{}, false, err
	}
	m.members[k] = true
	m.c[key] = c
	return c, true, nil
}

func (m *counters) GetCounter(_ context.Context, key store.CounterKey) (store.Counter, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.c[key], nil
}
