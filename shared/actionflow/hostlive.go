package actionflow

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/store"
)

// HostHeartbeatEvery is how often a host worker heartbeats a task it runs.
// The DispatchHost state's HeartbeatSeconds (60) is three of these: one
// lost heartbeat is tolerated, and a worker that died (its machine, its
// process, its network) is noticed within a minute instead of at the
// wait's one-hour timeout. statemachines' tests keep the two in step.
const HostHeartbeatEvery = 20 * time.Second

// HostLeaseTTL is how long a host worker's claim owns a task without a
// heartbeat: as long as the dispatch wait survives without one. A worker
// that died between taking the lease and writing start evidence (nothing
// ran) therefore holds the task up for a minute, not for Config.LeaseTTL;
// after that a new claim takes the lease over with a higher fence, so the
// dead attempt could never write start evidence or a result.
const HostLeaseTTL = 3 * HostHeartbeatEvery

// TaskHeartbeater is the SendTaskHeartbeat of a TaskCompleter (Step
// Functions, the embedded engine). A TaskCompleter without it (a test
// fake) makes heartbeats no-ops.
type TaskHeartbeater interface {
	SendTaskHeartbeat(ctx context.Context, token string) error
}

func (s *Service) heartbeat(ctx context.Context, token string) error {
	hb, ok := s.cfg.Tasks.(TaskHeartbeater)
	if !ok {
		return nil
	}
	return hb.SendTaskHeartbeat(ctx, token)
}

// HostHeartbeat is the owning attempt saying it still runs the task: it
// renews the attempt lease (fenced, so an older attempt is refused) and
// heartbeats the dispatch wait. A wait that ended (its heartbeat was
// missed and the action recorded unknown, or the execution was stopped)
// is a *ConflictError "wait_ended": the worker should still post its
// result, which is kept on the action as evidence for reconciliation.
func (s *Service) HostHeartbeat(ctx context.Context, id ids.ActionID, attempt ids.AttemptID, fence int64) error {
	if _, err := s.cfg.Store.RenewLease(ctx, store.Lease{Resource: leaseResource(id), AttemptID: string(attempt), Fence: fence}, HostLeaseTTL, s.now()); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return &ConflictError{Code: "stale_attempt", Msg: err.Error()}
		}
		return fmt.Errorf("heartbeat of %s: renew attempt lease: %w", id, err)
	}
	a, err := s.getAction(ctx, id)
	if err != nil {
		return err
	}
	if a.Start == nil || a.Start.AttemptID != attempt {
		return &ConflictError{Code: "stale_attempt", Msg: "attempt " + string(attempt) + " does not own this action"}
	}
	if a.Host == nil {
		return &ConflictError{Code: "not_published", Msg: "the action is not a host task"}
	}
	err = s.heartbeat(ctx, a.Host.TaskToken)
	if errors.Is(err, ErrTaskGone) {
		return &ConflictError{Code: "wait_ended", Msg: "the lifecycle no longer waits for this task (its outcome was recorded as unknown, or the execution stopped); post the result anyway: it is kept as evidence"}
	}
	if err != nil {
		return fmt.Errorf("heartbeat of %s: %w", id, err)
	}
	return nil
}

// abandonedHost reports whether a is a host task claimed by the in-process
// worker of an earlier process that never stored a result: that worker
// died with its process, so no result can come.
func (s *Service) abandonedHost(a Action) bool {
	return a.Host != nil && a.Start != nil && a.Result == nil && a.Start.Process != "" && a.Start.Process != s.cfg.Process &&
		!a.States.Terminal()
}

// CloseAbandonedHost answers the dispatch wait of a host task whose worker
// died with an earlier process (see StartEvidence.Process) with the
// outcome unknown (start_evidence_without_result): the state machine then
// records, checkpoints and projects it, and the execution needs
// reconciliation. The task is never handed out again. It is the recovery
// sweeper's hook for a running machine; sent reports whether the wait was
// answered now. A wait that already ended is not an error.
func (s *Service) CloseAbandonedHost(ctx context.Context, id ids.ActionID) (sent bool, err error) {
	a, err := s.getAction(ctx, id)
	if err != nil {
		return false, err
	}
	if !s.abandonedHost(a) {
		return false, nil
	}
	if s.cfg.Tasks == nil {
		return false, errors.New("actionflow: no TaskCompleter configured")
	}
	res := alreadyDispatched(a)
	res.Error += fmt.Sprintf("; its worker ran inside process %s, which ended", a.Start.Process)
	err = s.cfg.Tasks.SendTaskSuccess(ctx, a.Host.TaskToken, encode(res))
	if errors.Is(err, ErrTaskGone) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("close abandoned host task %s: %w", id, err)
	}
	s.logFor(&a).Warn("host task abandoned by a process that ended; recorded unknown, never re-dispatched",
		"attempt_id", a.Start.AttemptID, "process", a.Start.Process, "outcome", lifecycle.OutcomeUnknown)
	return true, nil
}
