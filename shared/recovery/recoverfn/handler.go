package recoverfn

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/openprogram/lifecycle/shared/audit"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/process"
	"github.com/openprogram/lifecycle/shared/recovery"
)

// Sweeper is the recovery the handler drives (*recovery.Sweeper).
type Sweeper interface {
	Sweep(ctx context.Context) (recovery.Report, error)
	SweepAction(ctx context.Context, id ids.ActionID) (recovery.ActionReport, error)
}

var _ Sweeper = (*recovery.Sweeper)(nil)

// The EventBridge detail types the function is subscribed to.
const (
	detailScheduled    = "Scheduled Event"
	detailStatusChange = "Step Functions Execution Status Change"
)

// statusChange is the part of a Step Functions status-change detail the
// sweeper needs: the execution name is the action id.
type statusChange struct {
	Name   string `json:"name"`
	Status string `json:"status"`
}

// Response summarises what one invocation did (logged by Lambda).
type Response struct {
	Trigger string `json:"trigger"`
	// ActionID is the action a status-change event named.
	ActionID ids.ActionID `json:"action_id,omitempty"`
	Open     int          `json:"open"`
	Changed  int          `json:"changed"`
	Errors   int          `json:"errors"`
	Skipped  string       `json:"skipped,omitempty"`
}

// Handler adapts EventBridge events to the sweeper: the schedule sweeps
// everything open; a FAILED, TIMED_OUT or ABORTED state machine sweeps its
// action at once. A failure is returned as an error, so the invocation
// counts as failed (alarms) and EventBridge retries it; sweeping again is
// idempotent.
type Handler struct {
	Sweeper Sweeper
	Log     *slog.Logger
	// Models, if set, closes at each scheduled tick the model requests a
	// function made itself (the reviewer's, *modelreq.Ledger) and lost:
	// open longer than a Lambda can run (15 minutes), so their function
	// is gone. The agent's requests are not its to close.
	Models LostRequests
	// Processes, if set, marks lost at each scheduled tick the managed
	// processes whose supervisor has not reported for process.LostAfter
	// (*process.Service; same shape as LostRequests).
	Processes LostRequests
	// Anchor, if set, writes at each scheduled tick the decision log heads
	// of the sessions that changed since the last anchor to a bucket the
	// table's writers cannot change (*audit.Anchorer over s3anchor).
	Anchor Anchorer
}

// Anchorer anchors decision log heads (*audit.Anchorer).
type Anchorer interface {
	Run(ctx context.Context) (audit.Manifest, error)
}

// LostRequests closes requests open since before cutoff as incomplete
// (*modelreq.Ledger).
type LostRequests interface {
	Sweep(ctx context.Context, cutoff time.Time) (int, error)
}

// maxFunctionRun is Lambda's longest invocation: a request a function
// started longer ago than this has no function left to complete it.
const maxFunctionRun = 15 * time.Minute

// Handle is the Lambda entry point.
func (h Handler) Handle(ctx context.Context, ev events.CloudWatchEvent) (Response, error) {
	log := h.Log
	if log == nil {
		log = slog.Default()
	}
	switch ev.DetailType {
	case detailScheduled:
		rep, err := h.Sweeper.Sweep(ctx)
		out := Response{Trigger: "schedule", Open: len(rep.Actions), Changed: rep.Changed(), Errors: rep.Errors}
		if h.Models != nil {
			n, merr := h.Models.Sweep(ctx, time.Now().Add(-maxFunctionRun))
			if n > 0 {
				log.Info("closed lost model requests as incomplete", "model_requests", n)
			}
			if merr != nil && err == nil {
				err = merr
			}
		}
		if h.Processes != nil {
			n, perr := h.Processes.Sweep(ctx, time.Now().Add(-process.LostAfter))
			if n > 0 {
				log.Warn("managed processes lost (their supervisor stopped reporting)", "processes", n)
			}
			if perr != nil && err == nil {
				err = perr
			}
		}
		if h.Anchor != nil {
			m, aerr := h.Anchor.Run(ctx)
			if len(m.Heads) > 0 {
				log.Info("decision log heads anchored", "sessions", len(m.Heads))
			}
			if aerr != nil && err == nil {
				err = aerr
			}
		}
		log.Info("recovery sweep", "open", out.Open, "changed", out.Changed, "errors", out.Errors)
		if err != nil {
			return out, fmt.Errorf("scheduled sweep: %w", err)
		}
		return out, nil
	case detailStatusChange:
		var d statusChange
		if err := json.Unmarshal(ev.Detail, &d); err != nil {
			return Response{Trigger: "status_change"}, fmt.Errorf("decode status-change detail: %w", err)
		}
		out := Response{Trigger: "status_change", ActionID: ids.ActionID(d.Name)}
		switch d.Status {
		case "FAILED", "TIMED_OUT", "ABORTED":
		default:
			// The rule filters these out; an event that slips through is not an error.
			out.Skipped = "status " + d.Status
			return out, nil
		}
		if err := ids.Validate("execution name", d.Name); err != nil {
			return out, fmt.Errorf("status-change event: %w", err)
		}
		rep, err := h.Sweeper.SweepAction(ctx, out.ActionID)
		out.Open = 1
		if rep.Did != recovery.Left {
			out.Changed = 1
		}
		log.Info("recovery after state machine "+d.Status, "action_id", d.Name, "did", rep.Did, "outcome", rep.Outcome)
		if err != nil {
			out.Errors = 1
			return out, err
		}
		return out, nil
	}
	return Response{Trigger: ev.DetailType}, fmt.Errorf("unexpected event %q from %q", ev.DetailType, ev.Source)
}
