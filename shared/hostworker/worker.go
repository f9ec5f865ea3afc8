package hostworker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/hosttools"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/process"
	"github.com/openprogram/lifecycle/shared/sandbox"
)

// Host is the lifecycle as a host worker sees it.
type Host interface {
	// Tasks lists published host tasks, waiting up to wait for one to appear.
	Tasks(ctx context.Context, wait time.Duration) ([]ids.ActionID, error)
	// Start claims a task for an attempt (start evidence) and returns it.
	Start(ctx context.Context, id ids.ActionID, attempt ids.AttemptID) (actionflow.Task, error)
	// Result posts the attempt's result.
	Result(ctx context.Context, id ids.ActionID, attempt ids.AttemptID, fence int64, res actionflow.ToolResult) error
	// Heartbeat says the attempt still runs the task (SendTaskHeartbeat of
	// its dispatch wait); without it the lifecycle records the action
	// unknown after the DispatchHost state's HeartbeatSeconds.
	Heartbeat(ctx context.Context, id ids.ActionID, attempt ids.AttemptID, fence int64) error
}

// Refuser is a Host that can refuse a task before claiming it
// (actionflow.Service.HostRefuse): the worker cannot confine it
// (bubblewrap missing), so it ends not_started instead of running
// unconfined. A refusal of a task whose profile is off fails with
// actionflow.ErrSandboxOff: the worker runs it.
type Refuser interface {
	Refuse(ctx context.Context, id ids.ActionID, res actionflow.ToolResult) error
}

// Worker runs host tasks.
type Worker struct {
	Host   Host
	Runner hosttools.Runner
	Log    *slog.Logger
	// Poll is the long-poll wait per listing (default 20s).
	Poll time.Duration
	// Parallel bounds concurrently running tasks (default DefaultParallel,
	// at most MaxParallel).
	Parallel int
	// HeartbeatEvery is the heartbeat period of a running task (default
	// actionflow.HostHeartbeatEvery, a third of DispatchHost's HeartbeatSeconds).
	HeartbeatEvery time.Duration
	// Processes supervises the managed processes the worker starts (Bash
	// with run_in_background). Nil: such calls are refused (nothing runs).
	Processes *Supervisor
}

// Parallelism of a worker. A task holds its slot for as long as its tool
// runs (a Bash call up to hosttools.MaxBashTimeout), so the default leaves
// room for many long commands before a new task has to wait; the bound
// keeps one worker from starting more processes than a machine can take.
const (
	DefaultParallel = 32
	MaxParallel     = 256
)

// Run works until ctx is done: it lists published tasks whenever it has a
// free slot and starts each new one in a goroutine, which frees its slot
// when the task ends. The loop waits only for a free slot, a listing or
// ctx, never for something only it could release.
func (w *Worker) Run(ctx context.Context) error {
	if w.Log == nil {
		w.Log = slog.Default()
	}
	if w.Poll <= 0 {
		w.Poll = 20 * time.Second
	}
	switch {
	case w.Parallel <= 0:
		w.Parallel = DefaultParallel
	case w.Parallel > MaxParallel:
		return fmt.Errorf("host worker: parallel %d is more than %d", w.Parallel, MaxParallel)
	}
	if w.Runner.Shell.Path == "" {
		sh, err := hosttools.FindBash("")
		if err != nil {
			return err
		}
		w.Runner.Shell = sh
	}
	if w.Processes != nil {
		// The start-up report: what an earlier instance of this host
		// started is lost (never signalled). Retried until it is heard (the
		// API may not answer yet); tasks run meanwhile.
		defer w.Processes.Wait()
		go func() {
			for backoff := 200 * time.Millisecond; ; backoff = min(backoff*2, 10*time.Second) {
				err := w.Processes.Recover(ctx)
				if err == nil || ctx.Err() != nil {
					return
				}
				w.Log.Warn("host: supervisor start-up report failed; trying again", "error", err, "retry_in", backoff)
				select {
				case <-ctx.Done():
					return
				case <-time.After(backoff):
				}
			}
		}()
	}
	w.Log.Info("host worker running", "workspace", w.Runner.Workspace, "shell", w.Runner.Shell.String(),
		"shell_args", hosttools.BashArgs, "parallel", w.Parallel)
	if err := w.Runner.Unavailable(sandbox.Default()); err != nil {
		if _, ok := w.Host.(Refuser); !ok {
			// This Host cannot refuse a task before claiming it, and a
			// claimed task that cannot run would be recorded unknown: run
			// nothing rather than anything unconfined.
			return fmt.Errorf("host worker: %w; this worker claims tasks over the API and cannot refuse them unclaimed, so it does not start", err)
		}
		w.Log.Warn("host tools are refused unless the policy turns the sandbox off", "error", err)
	}
	var (
		wg    sync.WaitGroup
		slots = make(chan struct{}, w.Parallel)
		// inflight: tasks this worker started and that have not ended. A
		// listing can show a task between its start here and its claim.
		mu       sync.Mutex
		inflight = map[ids.ActionID]bool{}
		// ended is signalled when a task ends.
		ended = make(chan struct{}, 1)
	)
	defer wg.Wait()
	start := func(id ids.ActionID) {
		inflight[id] = true
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.runOne(ctx, id)
			mu.Lock()
			delete(inflight, id)
			mu.Unlock()
			<-slots // the slot is freed by the task that held it
			select {
			case ended <- struct{}{}:
			default:
			}
		}()
	}
	backoff := time.Duration(0)
	for {
		// A free slot before listing, so a task starts from a fresh
		// listing. Only tasks free slots, never this loop's progress.
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return nil
		}
		tasks, err := w.Host.Tasks(ctx, w.Poll)
		if err != nil {
			<-slots
			if ctx.Err() != nil {
				return nil
			}
			backoff = min(max(backoff*2, 200*time.Millisecond), 10*time.Second)
			w.Log.Warn("host: listing tasks failed", "error", err, "retry_in", backoff)
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(backoff):
			}
			continue
		}
		backoff = 0
		started := 0
		mu.Lock()
	listing:
		for _, id := range tasks {
			if inflight[id] {
				continue
			}
			if started > 0 { // the first task takes the slot acquired above
				select {
				case slots <- struct{}{}:
				default:
					break listing // all slots busy: the rest waits for the next listing
				}
			}
			start(id)
			started++
		}
		mu.Unlock()
		if started == 0 {
			<-slots
			if len(tasks) > 0 {
				// Everything listed is in flight here, its claim not yet
				// visible: wait for a task to end or a moment, not spin.
				t := time.NewTimer(250 * time.Millisecond)
				select {
				case <-ctx.Done():
				case <-ended:
				case <-t.C:
				}
				t.Stop()
			}
		}
	}
}

// RunOne claims and runs one task (exported for tests and `lifecycle host --once`).
func (w *Worker) RunOne(ctx context.Context, id ids.ActionID) error { return w.runOne(ctx, id) }

func (w *Worker) runOne(ctx context.Context, id ids.ActionID) error {
	if w.Log == nil {
		w.Log = slog.Default()
	}
	attempt := ids.NewAttemptID()
	log := w.Log.With("action_id", id, "attempt_id", attempt)
	if refused, err := w.refuse(ctx, log, id); refused || err != nil {
		return err
	}
	task, err := w.Host.Start(ctx, id, attempt)
	if err != nil {
		var ce *actionflow.ConflictError
		if errors.As(err, &ce) {
			return nil // someone else claimed it, or it is no longer waiting
		}
		log.Warn("host: claim failed", "error", err)
		return err
	}
	log = log.With("execution_id", task.ExecutionID, "tool", task.Tool)
	stopBeat := w.heartbeat(ctx, log, id, attempt, task.Fence)
	profile := sandbox.Default()
	if task.Sandbox != nil {
		profile = *task.Sandbox
	}
	var res actionflow.ToolResult
	switch {
	case !hosttools.IsBackground(task.Tool, task.Arguments):
		res, err = w.Runner.RunIn(ctx, profile, task.Tool, task.Arguments)
	case w.Processes == nil:
		res = actionflow.ToolResult{Outcome: lifecycle.OutcomeFailed, ErrorCode: "background_unsupported",
			Error: "this host worker does not supervise background processes; run the command without run_in_background"}
	default:
		bg, refused := w.Runner.StartBackground(profile, task.Arguments)
		if refused != nil {
			res = *refused
		} else if res, err = w.Processes.Start(ctx, task, bg); err == nil {
			res.Sandbox = &profile // the profile the process runs in
		}
	}
	stopBeat()
	if err != nil {
		res = actionflow.ToolResult{Outcome: lifecycle.OutcomeUnknown, ErrorCode: "host_error", Error: err.Error()}
	}
	// Post with a context that survives shutdown briefly: the tool ran, its
	// result should not be lost to a cancelled request.
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := w.Host.Result(pctx, id, attempt, task.Fence, res); err != nil {
		log.Error("host: posting result failed; the action will be reconciled", "error", err, "outcome", res.Outcome)
		return err
	}
	log.Info("host: task done", "outcome", res.Outcome)
	return nil
}

// refuse ends a task this worker cannot confine before claiming it: with
// bubblewrap missing, a task whose profile is not off is refused
// not_started (nothing claimed, nothing ran) with the reason and the fix.
// It reports whether the task was refused (or is no longer this worker's).
// A Host that cannot refuse gets the task claimed; RunIn then refuses to
// run it unconfined.
func (w *Worker) refuse(ctx context.Context, log *slog.Logger, id ids.ActionID) (bool, error) {
	missing := w.Runner.Unavailable(sandbox.Default())
	rf, ok := w.Host.(Refuser)
	if missing == nil || !ok {
		return false, nil
	}
	err := rf.Refuse(ctx, id, actionflow.ToolResult{Outcome: lifecycle.OutcomeNotStarted, ErrorCode: "sandbox_unavailable", Error: missing.Error()})
	var ce *actionflow.ConflictError
	switch {
	case err == nil:
		log.Warn("host: task refused, not started: no sandbox", "error", missing)
		return true, nil
	case errors.Is(err, actionflow.ErrSandboxOff):
		return false, nil // the policy runs it unconfined
	case errors.As(err, &ce):
		return true, nil // claimed or closed elsewhere
	}
	log.Warn("host: refusing a task failed", "error", err)
	return true, err
}

// heartbeat heartbeats the task every HeartbeatEvery until the returned
// stop is called (when the tool returned). A failed heartbeat is logged and
// tried again at the next tick; the tool keeps running either way (killing
// it would not undo what it did), and its result is posted as evidence.
func (w *Worker) heartbeat(ctx context.Context, log *slog.Logger, id ids.ActionID, attempt ids.AttemptID, fence int64) (stop func()) {
	every := w.HeartbeatEvery
	if every <= 0 {
		every = actionflow.HostHeartbeatEvery
	}
	bctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-bctx.Done():
				return
			case <-t.C:
			}
			err := w.Host.Heartbeat(bctx, id, attempt, fence)
			var ce *actionflow.ConflictError
			switch {
			case err == nil || bctx.Err() != nil:
			case errors.As(err, &ce):
				// The lifecycle no longer waits (recorded unknown, stopped)
				// or another attempt owns it: beating again changes nothing.
				log.Warn("host: the lifecycle no longer waits for this task; its result is still posted as evidence", "error", err)
				return
			default:
				log.Warn("host: heartbeat failed; trying again at the next beat", "error", err)
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// Direct is the Host of an in-process worker: the service itself.
type Direct struct {
	Service *actionflow.Service
	// Processes, if set, makes Direct a ProcessHost.
	Processes *process.Service
	// Session restricts the worker to one session (empty: all).
	Session ids.SessionID
	// Wake, if set, is signalled when tasks may have been published.
	Wake <-chan struct{}
}

func (d Direct) Tasks(ctx context.Context, wait time.Duration) ([]ids.ActionID, error) {
	deadline := time.Now().Add(wait)
	for {
		as, err := d.Service.HostTasks(ctx, d.Session, 64)
		if err != nil || len(as) > 0 {
			out := make([]ids.ActionID, len(as))
			for i, a := range as {
				out[i] = a.ActionID
			}
			return out, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return nil, nil
		}
		t := time.NewTimer(min(left, 250*time.Millisecond))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-d.Wake:
			t.Stop()
		case <-t.C:
		}
	}
}

// Start claims for the worker inside this process (HostStartLocal): if the
// process dies, the next one knows the worker died with it.
func (d Direct) Start(ctx context.Context, id ids.ActionID, attempt ids.AttemptID) (actionflow.Task, error) {
	return d.Service.HostStartLocal(ctx, id, attempt)
}

// Refuse refuses a task before it is claimed (actionflow.Service.HostRefuse).
func (d Direct) Refuse(ctx context.Context, id ids.ActionID, res actionflow.ToolResult) error {
	return d.Service.HostRefuse(ctx, id, res)
}

func (d Direct) Heartbeat(ctx context.Context, id ids.ActionID, attempt ids.AttemptID, fence int64) error {
	return d.Service.HostHeartbeat(ctx, id, attempt, fence)
}

func (d Direct) Result(ctx context.Context, id ids.ActionID, attempt ids.AttemptID, fence int64, res actionflow.ToolResult) error {
	return d.Service.HostResult(ctx, id, attempt, fence, res)
}

var _ ProcessHost = Direct{}

func (d Direct) ProcessStart(ctx context.Context, r process.Record) (process.Record, error) {
	if d.Processes == nil {
		return r, errors.New("host: no process service")
	}
	return d.Processes.Start(ctx, r)
}

func (d Direct) ProcessReport(ctx context.Context, id string, rep process.Report) (process.Record, error) {
	if d.Processes == nil {
		return process.Record{}, errors.New("host: no process service")
	}
	return d.Processes.Report(ctx, id, rep)
}

func (d Direct) ProcessRecover(ctx context.Context, sup process.Supervisor, running []string) ([]string, error) {
	if d.Processes == nil {
		return nil, errors.New("host: no process service")
	}
	return d.Processes.Recover(ctx, sup, running, d.Session, "")
}
