package actionflow

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"time"

	"github.com/openprogram/lifecycle/shared/faults"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/store"
)

// DispatchOutput is the dispatch step's result ($.result).
type DispatchOutput = ToolResult

// leaseResource is the attempt lease of one action's dispatch.
func leaseResource(a ids.ActionID) string { return "ACTION#" + string(a) }

// Dispatch is the dispatch step. Mode "sync" (direct Lambda task) runs the
// executor inline; mode "publish" (a waitForTaskToken task) publishes the
// authorized task for a host worker, whose posted result completes the wait.
// Mode "ask" (the AwaitAnswer wait) stores a question for the human, mode
// "expire_question" records that wait's timeout (question.go).
//
// It takes the attempt lease, writes execution-start evidence immediately
// before calling the executor, and never calls an executor for an action
// whose start evidence already exists: a re-invoked dispatch reports the
// outcome unknown instead. An error before start evidence is a
// *NotStartedError (safe to retry).
func (s *Service) Dispatch(ctx context.Context, in StepInput) (DispatchOutput, error) {
	var out DispatchOutput
	var err error
	switch in.Mode {
	case "", "sync":
		out, err = s.dispatchSync(ctx, in)
	case "publish":
		out, err = s.publishHostTask(ctx, in)
	case "ask":
		out, err = s.askQuestion(ctx, in)
	case "expire_question":
		out, err = s.expireQuestion(ctx, in)
	default:
		err = &PermanentError{Code: "bad_mode", Msg: fmt.Sprintf("dispatch mode %q", in.Mode)}
	}
	return out, stepError("dispatch "+string(in.ActionID), err)
}

// alreadyDispatched reports what is known of an action that has start
// evidence: the host's posted result, or unknown.
func alreadyDispatched(a Action) ToolResult {
	if a.Result != nil {
		return *a.Result
	}
	return ToolResult{Outcome: lifecycle.OutcomeUnknown, ErrorCode: "start_evidence_without_result",
		Error: fmt.Sprintf("execution started at %s (attempt %s) and no trustworthy result was recorded; not dispatched again",
			a.Start.StartedAt.Format(time.RFC3339Nano), a.Start.AttemptID)}
}

// claim takes the attempt lease for ttl and writes start evidence (a
// fenced owner write). It returns the started action and its task. process
// is the activation of the process whose in-process worker claims (or "").
func (s *Service) claim(ctx context.Context, a Action, attempt ids.AttemptID, kind string, process ids.AttemptID, ttl time.Duration) (Action, Task, error) {
	if a.States.Permission != lifecycle.PermissionAllow {
		return a, Task{}, &PermanentError{Code: "not_allowed", Msg: "permission is " + string(a.States.Permission)}
	}
	if a.Closed != nil {
		return a, Task{}, &PermanentError{Code: "closed", Msg: "the action was closed (" + a.Closed.Reason + "); it is never dispatched"}
	}
	lease, err := s.cfg.Store.AcquireLease(ctx, store.LeaseRequest{Resource: leaseResource(a.ActionID), AttemptID: string(attempt), TTL: ttl, Now: s.now()})
	if err != nil {
		if errors.Is(err, store.ErrConflict) {
			return a, Task{}, &NotStartedError{Code: "lease_held", Msg: err.Error()}
		}
		return a, Task{}, &NotStartedError{Code: "store", Msg: "acquire attempt lease: " + err.Error()}
	}
	if err := faults.At(ctx, faults.AfterLease); err != nil {
		return a, Task{}, &NotStartedError{Code: "crash", Msg: err.Error()}
	}
	st, err := a.States.WithStart()
	if err != nil {
		return a, Task{}, &PermanentError{Code: "illegal_transition", Msg: err.Error()}
	}
	a.States = st
	a.Start = &StartEvidence{AttemptID: attempt, Fence: lease.Fence, StartedAt: s.now(), Executor: kind, Process: process}
	if err := s.saveAction(ctx, &a, lease.Fence); err != nil {
		// Start evidence is not durable, so the executor was not called.
		return a, Task{}, &NotStartedError{Code: "start_evidence", Msg: err.Error()}
	}
	return a, Task{ActionID: a.ActionID, ExecutionID: a.ExecutionID, SessionID: a.SessionID, ToolCallID: a.ToolCallID,
		Tool: a.Tool, Arguments: a.Arguments, ArgsDigest: a.ArgsDigest, AttemptID: attempt, Fence: lease.Fence,
		IdempotencyKey: string(a.ActionID)}, nil
}

func (s *Service) dispatchSync(ctx context.Context, in StepInput) (ToolResult, error) {
	a, err := s.getAction(ctx, in.ActionID)
	if err != nil {
		return ToolResult{}, &NotStartedError{Code: "load", Msg: err.Error()}
	}
	kind := ""
	if a.Decision != nil {
		kind = a.Decision.Executor
	}
	if kind == ExecutorQuestion {
		return s.dispatchQuestion(ctx, a)
	}
	if a.Start != nil {
		return alreadyDispatched(a), nil
	}
	ex, ok := s.cfg.Executors[kind]
	if !ok {
		return ToolResult{}, &PermanentError{Code: "no_executor", Msg: "no executor of kind " + kind}
	}
	if r, ok := ex.(Readier); ok && a.States.Permission == lifecycle.PermissionAllow && a.Closed == nil {
		if err := r.Ready(ctx, a.Tool); err != nil {
			return ToolResult{}, &NotStartedError{Code: "executor_not_ready", Msg: err.Error()}
		}
	}
	a, task, err := s.claim(ctx, a, ids.NewAttemptID(), kind, "", s.cfg.LeaseTTL)
	if err != nil {
		return ToolResult{}, err
	}
	if err := faults.At(ctx, faults.AfterStartEvidence); err != nil {
		return ToolResult{}, err
	}
	res, err := ex.Execute(ctx, task)
	if ferr := faults.At(ctx, faults.AfterExecutor); ferr != nil {
		return ToolResult{}, ferr
	}
	if err != nil {
		// Start evidence exists: whatever failed may have had effects.
		res = ToolResult{Outcome: lifecycle.OutcomeUnknown, ErrorCode: "executor_error", Error: err.Error()}
	} else if res, err = s.bound(ctx, a, res); err != nil {
		return ToolResult{}, err
	}
	// Durable before the state machine hears of it: a lost response, a
	// crash before record or a re-invoked dispatch still find this result.
	// If the write fails the result still travels in $.result to record.
	stored, err := s.storeResult(ctx, a.ActionID, task.AttemptID, task.Fence, res)
	if err != nil {
		s.logFor(&a).Warn("dispatch result not stored on the action; it reaches record through the state machine only", "error", err)
		return res, nil
	}
	return *stored.Result, nil
}

// bound keeps tool output within the inline budget; larger output goes to
// the blob store with its digest and reference on the result.
func (s *Service) bound(ctx context.Context, a Action, res ToolResult) (ToolResult, error) {
	if !res.Outcome.Known() && res.Outcome != lifecycle.OutcomeUnknown {
		return ToolResult{Outcome: lifecycle.OutcomeUnknown, ErrorCode: "invalid_executor_result",
			Error: fmt.Sprintf("executor reported outcome %q", res.Outcome)}, nil
	}
	if res.Outcome == lifecycle.OutcomeNotStarted {
		// Application result details are not execution evidence: the start
		// evidence says it was dispatched.
		res.Outcome, res.ErrorCode = lifecycle.OutcomeUnknown, "executor_claimed_not_started"
	}
	if len(res.Output) <= s.cfg.InlineOutputBytes {
		return res, nil
	}
	sum := sha256.Sum256([]byte(res.Output))
	res.ResultDigest = fmt.Sprintf("sha256:%x", sum)
	if s.cfg.Blobs != nil {
		ref, err := s.cfg.Blobs.Put(ctx, "results/"+string(a.ExecutionID)+"/"+string(a.ActionID), []byte(res.Output))
		if err != nil {
			s.logFor(&a).Warn("result blob not stored; output truncated", "error", err)
		} else {
			res.ResultRef = ref
		}
	}
	res.Output = truncateUTF8(res.Output, s.cfg.InlineOutputBytes)
	res.Truncated = true
	return res, nil
}

func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && (s[n]&0xC0) == 0x80 {
		n--
	}
	return s[:n]
}

// --- host executor: task-token wait ---

func (s *Service) publishHostTask(ctx context.Context, in StepInput) (ToolResult, error) {
	if in.TaskToken == "" {
		return ToolResult{}, &PermanentError{Code: "no_task_token", Msg: "publish needs $$.Task.Token"}
	}
	a, err := s.updateAction(ctx, in.ActionID, 0, func(a *Action) error {
		if a.States.Permission != lifecycle.PermissionAllow {
			return &PermanentError{Code: "not_allowed", Msg: "permission is " + string(a.States.Permission)}
		}
		if a.Closed != nil {
			return &PermanentError{Code: "closed", Msg: "the action was closed (" + a.Closed.Reason + "); it is never dispatched"}
		}
		if a.Host != nil && a.Host.TaskToken == in.TaskToken {
			return errStop
		}
		a.Host = &HostTask{TaskToken: in.TaskToken, PublishedAt: s.now()}
		return nil
	})
	if err != nil {
		var pe *PermanentError
		if errors.As(err, &pe) {
			return ToolResult{}, pe
		}
		return ToolResult{}, &NotStartedError{Code: "publish", Msg: err.Error()}
	}
	// Re-invoked after the host already started: answer the wait now, with
	// the host's stored result, or unknown. A new wait over a started task
	// means the previous one ended without its result: its worker missed
	// the heartbeat (DispatchHost retries States.HeartbeatTimeout into
	// here) or died with its process. The task is never handed out again
	// (HostTasks skips it, HostStart refuses it); a late result from that
	// worker is still kept on the action as evidence.
	if a.Start != nil {
		if err := s.completeHostWait(ctx, a, alreadyDispatched(a)); err != nil {
			return ToolResult{}, err
		}
	}
	return ToolResult{}, nil
}

// HostTasks lists authorized tasks waiting for a host worker (optionally of
// one session), oldest first. It reads the open-actions index page by page
// until it has limit tasks: open actions that are not host tasks (pending
// approvals, running or unknown actions) can be any number, and stopping
// after the first page would hide every task published after them.
func (s *Service) HostTasks(ctx context.Context, session ids.SessionID, limit int) ([]Action, error) {
	var out []Action
	after := ""
	for {
		page, err := s.cfg.Store.QueryIndex(ctx, store.IndexOpen, openActionsIndex, store.QueryOptions{After: after, Limit: 1000})
		if err != nil {
			return nil, fmt.Errorf("list host tasks: %w", err)
		}
		for _, it := range page.Items {
			a, err := decodeAction(it)
			if err != nil {
				return nil, err
			}
			if a.Host == nil || a.Start != nil || a.Closed != nil || (session != "" && a.SessionID != session) {
				continue
			}
			out = append(out, a)
			if limit > 0 && len(out) >= limit {
				return out, nil
			}
		}
		if page.Next == "" {
			return out, nil
		}
		after = page.Next
	}
}

// HostStart claims a published host task for an attempt of a remote
// worker: attempt lease, then start evidence, immediately before the host
// runs the tool.
//
// The dispatch wait is heartbeated first: a wait that already ended (its
// heartbeat missed, e.g. while no worker was polling) refuses the claim
// before anything starts, and a live one gets a full HeartbeatSeconds for
// the worker's first heartbeat, so a wait cannot time out between the
// start evidence and the worker's first heartbeat.
func (s *Service) HostStart(ctx context.Context, id ids.ActionID, attempt ids.AttemptID) (Task, error) {
	return s.hostStart(ctx, id, attempt, "")
}

// HostStartLocal is HostStart for the in-process worker of this process:
// the start evidence carries Config.Process, so the next process knows the
// worker died with this one.
func (s *Service) HostStartLocal(ctx context.Context, id ids.ActionID, attempt ids.AttemptID) (Task, error) {
	return s.hostStart(ctx, id, attempt, s.cfg.Process)
}

func (s *Service) hostStart(ctx context.Context, id ids.ActionID, attempt ids.AttemptID, process ids.AttemptID) (Task, error) {
	a, err := s.getAction(ctx, id)
	if err != nil {
		return Task{}, err
	}
	if a.Host == nil {
		return Task{}, &ConflictError{Code: "not_published", Msg: "the action is not waiting for a host"}
	}
	if a.Start != nil {
		return Task{}, &ConflictError{Code: "already_started", Msg: "attempt " + string(a.Start.AttemptID) + " started it"}
	}
	if err := s.heartbeat(ctx, a.Host.TaskToken); errors.Is(err, ErrTaskGone) {
		return Task{}, &ConflictError{Code: "wait_ended", Msg: "the dispatch wait of this task ended before it was claimed; nothing started"}
	} else if err != nil {
		return Task{}, fmt.Errorf("heartbeat before claiming %s: %w", id, err)
	}
	_, task, err := s.claim(ctx, a, attempt, ExecutorHost, process, HostLeaseTTL)
	if err != nil {
		return Task{}, err
	}
	if err := faults.At(ctx, faults.AfterStartEvidence); err != nil {
		return Task{}, err
	}
	return task, nil
}

// HostResult accepts a host's result. Only the current owner (attempt and
// fence of the live lease) may publish it; an old worker's late result is
// rejected. The result is made durable on the action, then the dispatch
// wait is completed.
func (s *Service) HostResult(ctx context.Context, id ids.ActionID, attempt ids.AttemptID, fence int64, res ToolResult) error {
	if _, err := s.cfg.Store.RenewLease(ctx, store.Lease{Resource: leaseResource(id), AttemptID: string(attempt), Fence: fence}, HostLeaseTTL, s.now()); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return &ConflictError{Code: "stale_attempt", Msg: err.Error()}
		}
		return err
	}
	a, err := s.getAction(ctx, id)
	if err != nil {
		return err
	}
	bounded, err := s.bound(ctx, a, res)
	if err != nil {
		return err
	}
	if a, err = s.storeResult(ctx, id, attempt, fence, bounded); err != nil {
		return err
	}
	if err := faults.At(ctx, faults.AfterExecutor); err != nil {
		return err
	}
	return s.completeHostWait(ctx, a, *a.Result)
}

// storeResult makes the owning attempt's result durable on the action (a
// fenced owner write). The first stored result stands.
func (s *Service) storeResult(ctx context.Context, id ids.ActionID, attempt ids.AttemptID, fence int64, res ToolResult) (Action, error) {
	a, err := s.updateAction(ctx, id, fence, func(a *Action) error {
		if a.Start == nil || a.Start.AttemptID != attempt {
			return &ConflictError{Code: "stale_attempt", Msg: "attempt " + string(attempt) + " does not own this action"}
		}
		if a.Result != nil {
			return errStop
		}
		r := res
		a.Result = &r
		return nil
	})
	if err != nil {
		if errors.Is(err, store.ErrConflict) {
			return a, &ConflictError{Code: "stale_attempt", Msg: err.Error()}
		}
		return a, err
	}
	return a, nil
}

func (s *Service) completeHostWait(ctx context.Context, a Action, res ToolResult) error {
	if s.cfg.Tasks == nil {
		return errors.New("actionflow: no TaskCompleter configured")
	}
	err := s.cfg.Tasks.SendTaskSuccess(ctx, a.Host.TaskToken, encode(res))
	if errors.Is(err, ErrTaskGone) {
		// The wait ended (timeout, stop); the result stays on the action and
		// record/recovery use it, so it is not lost.
		s.logFor(&a).Warn("host result arrived after the dispatch wait ended; kept on the action")
		return nil
	}
	return err
}
