package embedded_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/activity"
	"github.com/openprogram/lifecycle/shared/decider"
	"github.com/openprogram/lifecycle/shared/embedded"
	"github.com/openprogram/lifecycle/shared/hosttools"
	"github.com/openprogram/lifecycle/shared/hostworker"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/permission"
	"github.com/openprogram/lifecycle/shared/permission/riskreview"
)

// startWithPolicy starts a stack over dir with the real permission engine
// and the given policy, and no built-in host worker: the test runs its own
// (hostOf), so it can kill it together with the stack.
func startWithPolicy(t *testing.T, dir, ws, policy string, opts ...func(*embedded.Config)) *embedded.Stack {
	t.Helper()
	lazy := &lazyDecider{}
	cfg := embedded.Config{StateDir: dir, Workspace: ws, NoHostWorker: true, Decider: lazy}
	for _, o := range opts {
		o(&cfg)
	}
	s, err := embedded.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	eng, err := permission.NewEngine(permission.Config{Classifier: riskreview.New(), Counters: s.Store})
	if err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(ws)
	lazy.d = &decider.Decider{Engine: eng, Policies: fixedPolicy{permission.MustParsePolicy(policy)}, ProjectRoot: abs, WorkingDir: abs}
	return s
}

// mortalHost is the in-process host of one process: once the process is
// killed (die), nothing it does reaches the lifecycle any more, exactly as
// a SIGKILL leaves it. It counts the claims it won.
type mortalHost struct {
	hostworker.Host
	mu      sync.Mutex
	dead    bool
	started []ids.ActionID
}

var errKilled = errors.New("the process was killed")

func (h *mortalHost) die() {
	h.mu.Lock()
	h.dead = true
	h.mu.Unlock()
}

func (h *mortalHost) isDead() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.dead
}

func (h *mortalHost) Tasks(ctx context.Context, wait time.Duration) ([]ids.ActionID, error) {
	if h.isDead() {
		return nil, errKilled
	}
	return h.Host.Tasks(ctx, wait)
}

func (h *mortalHost) Start(ctx context.Context, id ids.ActionID, attempt ids.AttemptID) (actionflow.Task, error) {
	if h.isDead() {
		return actionflow.Task{}, errKilled
	}
	task, err := h.Host.Start(ctx, id, attempt)
	if err == nil {
		h.mu.Lock()
		h.started = append(h.started, id)
		h.mu.Unlock()
	}
	return task, err
}

func (h *mortalHost) Result(ctx context.Context, id ids.ActionID, attempt ids.AttemptID, fence int64, res actionflow.ToolResult) error {
	if h.isDead() {
		return errKilled
	}
	return h.Host.Result(ctx, id, attempt, fence, res)
}

func (h *mortalHost) starts() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.started)
}

// process is one `lifecycle serve`: the stack and its host worker.
type process struct {
	stack  *embedded.Stack
	host   *mortalHost
	cancel context.CancelFunc
	done   chan struct{}
}

func runProcess(t *testing.T, dir, ws, policy string) *process {
	t.Helper()
	s := startWithPolicy(t, dir, ws, policy)
	ctx, cancel := context.WithCancel(context.Background())
	p := &process{stack: s, host: &mortalHost{Host: hostworker.Direct{Service: s.Service}}, cancel: cancel, done: make(chan struct{})}
	w := &hostworker.Worker{Host: p.host, Runner: hosttools.Runner{Workspace: ws}, Poll: 100 * time.Millisecond}
	go func() {
		defer close(p.done)
		w.Run(ctx)
	}()
	return p
}

// kill is SIGKILL: the host dies first (no result, no heartbeat leaves the
// process), then everything stops without an orderly shutdown.
func (p *process) kill() {
	p.host.die()
	p.cancel()
	<-p.done
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p.stack.Close(ctx)
}

func (p *process) close() {
	p.cancel()
	<-p.done
	p.stack.Close(context.Background())
}

// Issue 11, point 1: a host tool running when the process is killed. After
// the restart, the first sweep (at start-up) records the action unknown
// (start_evidence_without_result) and answers its resumed DispatchHost
// wait; the execution is listed under Needs attention; the tool never runs
// again. Before the fix the action stayed pending behind its 1 h wait.
func TestCrashWhileHostToolRunsIsReconciledAtStartup(t *testing.T) {
	const policy = `{"version":"v1","allow":["Bash(sleep *)","Bash(echo *)"]}`
	dir, ws := t.TempDir(), t.TempDir()
	ctx := context.Background()
	first := runProcess(t, dir, ws, policy)
	a := submit(t, first.stack, "Bash", `{"command":"sleep 5; echo run >> f.txt"}`)
	waitFor(t, first.stack, a.ActionID, func(a actionflow.Action) bool { return a.States.Started })
	first.kill()

	second := runProcess(t, dir, ws, policy)
	defer second.close()
	s := second.stack
	got := waitFor(t, s, a.ActionID, terminal)
	if got.States.Outcome != lifecycle.OutcomeUnknown || !got.States.Started || got.States.Delivery != lifecycle.DeliveryProjected {
		t.Fatalf("after the restart: %+v", got.States)
	}
	rc, err := s.Service.GetReceipt(ctx, a.ActionID)
	if err != nil || rc.ErrorCode != "start_evidence_without_result" || rc.Reconciliation == "" || rc.Start == nil {
		t.Fatalf("receipt %+v %v", rc, err)
	}
	// The wait was answered: the machine ended through record and project.
	if st, err := s.SFNClient.Status(ctx, a.ActionID); err != nil || st != "SUCCEEDED" {
		t.Fatalf("machine %s %v, want SUCCEEDED (its DispatchHost wait answered)", st, err)
	}
	recs, err := s.Service.ListSessionRecords(ctx, a.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	view := activity.Build(activity.FromRecords(a.SessionID, time.Now(), recs, nil))
	found := false
	for _, row := range view.NeedsAttention {
		for _, at := range row.Attention {
			if at.Kind == "unresolved_result" && at.ActionID == a.ActionID && strings.Contains(at.Detail, "check its effects") {
				found = true
			}
		}
	}
	if !found {
		t.Fatalf("the execution is not under Needs attention with its unresolved result: %+v", view)
	}
	if n := second.host.starts(); n != 0 {
		t.Fatalf("the restarted host claimed the action %d times; it must never run again", n)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "f.txt")); err == nil && strings.Count(string(b), "run") > 1 {
		t.Fatalf("the tool ran again: %q", b)
	}
}
