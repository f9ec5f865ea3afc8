package activity_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/activity"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// exe builds an execution created at minute n.
func exe(id, branch, parent string, n int, st actionflow.ExecutionStatus) actionflow.Execution {
	at := t0.Add(time.Duration(n) * time.Minute)
	return actionflow.Execution{ExecutionID: ids.ExecutionID(id), SessionID: "ses_1", BranchID: branch, ParentID: ids.ExecutionID(parent),
		Kind: "agent_chat", Status: st, CreatedAt: at, UpdatedAt: at, LastActivity: at}
}

func job(id, parent string, n int, st actionflow.ExecutionStatus) actionflow.Execution {
	e := exe(id, id, parent, n, st)
	e.Kind = "job"
	return e
}

var (
	done    = lifecycle.States{Permission: lifecycle.PermissionAllow, Outcome: lifecycle.OutcomeSucceeded, Delivery: lifecycle.DeliveryProjected, Started: true}
	asking  = lifecycle.States{Permission: lifecycle.PermissionAsk, Delivery: lifecycle.DeliveryPending}
	running = lifecycle.States{Permission: lifecycle.PermissionAllow, Delivery: lifecycle.DeliveryPending, Started: true}
	unknown = lifecycle.States{Permission: lifecycle.PermissionAllow, Outcome: lifecycle.OutcomeUnknown, Delivery: lifecycle.DeliveryProjected, Started: true}
	denied  = lifecycle.States{Permission: lifecycle.PermissionDeny, Outcome: lifecycle.OutcomeNotStarted, Delivery: lifecycle.DeliveryProjected}
)

func act(id, exec string, n int, st lifecycle.States) actionflow.Action {
	at := t0.Add(time.Duration(n) * time.Minute)
	return actionflow.Action{ActionID: ids.ActionID(id), ExecutionID: ids.ExecutionID(exec), SessionID: "ses_1", ToolCallID: "c",
		Tool: "Bash", Arguments: json.RawMessage(`{}`), States: st, CreatedAt: at, UpdatedAt: at}
}

func approval(action string, st actionflow.ApprovalStatus) actionflow.Approval {
	return actionflow.Approval{ApprovalID: ids.ApprovalID(action + ".w1"), ActionID: ids.ActionID(action), SessionID: "ses_1", Status: st,
		Reason: actionflow.Reason{Source: "ask_rule", Code: "ask"}}
}

type want struct {
	attention, progress, history int
	// status of the single row (when exactly one row) or of the row of branch statusOf
	statusOf string
	status   string
	// execution count of branch statusOf
	execs int
	// shared executions listed in the details of branch statusOf
	shared int
}

func TestBranchCounting(t *testing.T) {
	cases := []struct {
		name string
		in   activity.Input
		want want
	}{
		{
			name: "one linear conversation: message then continue is one history row",
			in: activity.Input{Executions: []actionflow.Execution{
				exe("e1", "b1", "", 0, actionflow.ExecCompleted), exe("e2", "b1", "", 1, actionflow.ExecCompleted)},
				Actions: []actionflow.Action{act("a1", "e1", 0, done), act("a2", "e2", 1, done)}},
			want: want{history: 1, statusOf: "b1", status: activity.LabelCompleted, execs: 2},
		},
		{
			name: "a conversation with three tips is three history rows",
			in: activity.Input{Executions: []actionflow.Execution{
				exe("e1", "b1", "", 0, actionflow.ExecCompleted), exe("e2", "b1", "", 1, actionflow.ExecCompleted),
				exe("e3", "b2", "e1", 2, actionflow.ExecCompleted), exe("e4", "b3", "e2", 3, actionflow.ExecCompleted)}},
			want: want{history: 3, statusOf: "b3", status: activity.LabelCompleted, execs: 1, shared: 2},
		},
		{
			name: "a later failed execution on the same branch is still one row, failure in details",
			in: activity.Input{Executions: []actionflow.Execution{
				exe("e1", "b1", "", 0, actionflow.ExecCompleted), exe("e2", "b1", "", 1, actionflow.ExecFailed)}},
			want: want{history: 1, statusOf: "b1", status: activity.LabelFailed, execs: 2},
		},
		{
			name: "two branches sharing earlier executions are two rows; shared ones appear in both details",
			in: activity.Input{Executions: []actionflow.Execution{
				exe("e1", "b1", "", 0, actionflow.ExecCompleted), exe("e2", "b1", "", 1, actionflow.ExecCompleted),
				exe("e3", "b1", "", 2, actionflow.ExecCompleted), exe("e4", "b2", "e2", 3, actionflow.ExecCompleted)}},
			want: want{history: 2, statusOf: "b2", status: activity.LabelCompleted, execs: 1, shared: 2},
		},
		{
			name: "a pending approval needs attention, even after a newer execution on the branch",
			in: activity.Input{Executions: []actionflow.Execution{
				exe("e1", "b1", "", 0, actionflow.ExecRunning), exe("e2", "b1", "", 1, actionflow.ExecCompleted)},
				Actions:   []actionflow.Action{act("a1", "e1", 0, asking)},
				Approvals: []actionflow.Approval{approval("a1", actionflow.ApprovalPending)}},
			want: want{attention: 1, statusOf: "b1", status: activity.LabelWaiting, execs: 2},
		},
		{
			name: "a declined wait is history, labelled Declined in details",
			in: activity.Input{Executions: []actionflow.Execution{exe("e1", "b1", "", 0, actionflow.ExecCompleted)},
				Actions:   []actionflow.Action{act("a1", "e1", 0, denied)},
				Approvals: []actionflow.Approval{approval("a1", actionflow.ApprovalDeclinedSt)}},
			want: want{history: 1, statusOf: "b1", status: activity.LabelCompleted, execs: 1},
		},
		{
			name: "an unresolved tool result needs attention; a newer message does not dismiss it",
			in: activity.Input{Executions: []actionflow.Execution{
				exe("e1", "b1", "", 0, actionflow.ExecCompleted), exe("e2", "b1", "", 1, actionflow.ExecCompleted)},
				Actions: []actionflow.Action{act("a1", "e1", 0, unknown), act("a2", "e2", 1, done)}},
			want: want{attention: 1, statusOf: "b1", status: activity.LabelUnresolved, execs: 2},
		},
		{
			name: "a user pause needs attention",
			in:   activity.Input{Executions: []actionflow.Execution{exe("e1", "b1", "", 0, actionflow.ExecPaused)}},
			want: want{attention: 1, statusOf: "b1", status: activity.LabelPaused, execs: 1},
		},
		{
			name: "an open question needs attention",
			in: activity.Input{Executions: []actionflow.Execution{exe("e1", "b1", "", 0, actionflow.ExecRunning)},
				Facts: map[ids.ExecutionID]activity.Facts{"e1": {OpenQuestions: 1}}},
			want: want{attention: 1, statusOf: "b1", status: activity.LabelQuestion, execs: 1},
		},
		{
			name: "a running execution is in progress",
			in:   activity.Input{Executions: []actionflow.Execution{exe("e1", "b1", "", 0, actionflow.ExecRunning)}},
			want: want{progress: 1, statusOf: "b1", status: activity.LabelRunning, execs: 1},
		},
		{
			name: "an action in flight keeps the branch in progress",
			in: activity.Input{Executions: []actionflow.Execution{exe("e1", "b1", "", 0, actionflow.ExecCompleted)},
				Actions: []actionflow.Action{act("a1", "e1", 0, running)}},
			want: want{progress: 1, statusOf: "b1", status: activity.LabelRunning, execs: 1},
		},
		{
			name: "a finished reply with a running child task is in progress, one row",
			in: activity.Input{Executions: []actionflow.Execution{
				exe("e1", "b1", "", 0, actionflow.ExecCompleted), job("j1", "e1", 1, actionflow.ExecRunning)}},
			want: want{progress: 1, statusOf: "b1", status: activity.LabelRunning, execs: 2},
		},
		{
			name: "an owned process still running keeps the branch in progress",
			in: activity.Input{Executions: []actionflow.Execution{exe("e1", "b1", "", 0, actionflow.ExecCompleted)},
				Facts: map[ids.ExecutionID]activity.Facts{"e1": {ActiveProcesses: 1}}},
			want: want{progress: 1, statusOf: "b1", status: activity.LabelRunning, execs: 1},
		},
		{
			name: "owner ended, only the response record missing, an old cancel pending: history, response record incomplete",
			in: activity.Input{Executions: []actionflow.Execution{exe("e1", "b1", "", 0, actionflow.ExecCancelled)},
				Facts: map[ids.ExecutionID]activity.Facts{"e1": {ResponseRecordMissing: true, PendingCommands: []string{"cancel"}}}},
			want: want{history: 1, statusOf: "b1", status: activity.LabelResponseIncomplete, execs: 1},
		},
		{
			name: "response record missing but a non-cancel control pending: not ended",
			in: activity.Input{Executions: []actionflow.Execution{exe("e1", "b1", "", 0, actionflow.ExecCompleted)},
				Facts: map[ids.ExecutionID]activity.Facts{"e1": {ResponseRecordMissing: true, PendingCommands: []string{"continue"}}}},
			want: want{progress: 1, statusOf: "b1", status: activity.LabelControlPending, execs: 1},
		},
		{
			name: "response record missing with a real approval: the approval stays visible",
			in: activity.Input{Executions: []actionflow.Execution{exe("e1", "b1", "", 0, actionflow.ExecCompleted)},
				Actions:   []actionflow.Action{act("a1", "e1", 0, asking)},
				Approvals: []actionflow.Approval{approval("a1", actionflow.ApprovalPending)},
				Facts:     map[ids.ExecutionID]activity.Facts{"e1": {ResponseRecordMissing: true}}},
			want: want{attention: 1, statusOf: "b1", status: activity.LabelWaiting, execs: 1},
		},
		{
			name: "a fork whose parent record is missing keeps its own single row",
			in:   activity.Input{Executions: []actionflow.Execution{exe("e5", "b5", "e_gone", 0, actionflow.ExecCompleted)}},
			want: want{history: 1, statusOf: "b5", status: activity.LabelCompleted, execs: 1},
		},
		{
			name: "a restart-owned pause within its window resumes by itself: in progress",
			in: activity.Input{Now: t0, Executions: []actionflow.Execution{func() actionflow.Execution {
				e := exe("e1", "b1", "", 0, actionflow.ExecPaused)
				e.PauseOwner, e.Restart = "restart", &actionflow.RestartIntent{Reason: "shutdown", At: t0}
				return e
			}()}},
			want: want{progress: 1, statusOf: "b1", status: activity.LabelResuming, execs: 1},
		},
		{
			name: "a restart-owned pause past its deadline needs attention",
			in: activity.Input{Now: t0.Add(3 * time.Hour), Executions: []actionflow.Execution{func() actionflow.Execution {
				e := exe("e1", "b1", "", 0, actionflow.ExecPaused)
				dl := t0.Add(2 * time.Hour)
				e.PauseOwner, e.Restart = "restart", &actionflow.RestartIntent{Deadline: &dl, Reason: "shutdown", At: t0}
				return e
			}()}},
			want: want{attention: 1, statusOf: "b1", status: activity.LabelPaused, execs: 1},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := activity.Build(c.in)
			if got.Counts != (activity.Counts{NeedsAttention: c.want.attention, InProgress: c.want.progress, History: c.want.history}) {
				t.Fatalf("counts %+v, want attention %d progress %d history %d", got.Counts, c.want.attention, c.want.progress, c.want.history)
			}
			var row *activity.Row
			for _, rows := range [][]activity.Row{got.NeedsAttention, got.InProgress, got.History} {
				for i := range rows {
					if rows[i].BranchID == c.want.statusOf {
						row = &rows[i]
					}
				}
			}
			if row == nil {
				t.Fatalf("no row for branch %s: %+v", c.want.statusOf, got)
			}
			if row.Status != c.want.status {
				t.Fatalf("status %q, want %q", row.Status, c.want.status)
			}
			if row.ExecutionCount != c.want.execs {
				t.Fatalf("execution count %d, want %d", row.ExecutionCount, c.want.execs)
			}
			shared := 0
			for _, e := range row.Executions {
				if e.Shared {
					shared++
				}
			}
			if shared != c.want.shared || len(row.Executions) != c.want.execs+c.want.shared {
				t.Fatalf("details list %d executions, %d shared; want %d own + %d shared", len(row.Executions), shared, c.want.execs, c.want.shared)
			}
		})
	}
}

func TestDetailLabels(t *testing.T) {
	in := activity.Input{Executions: []actionflow.Execution{exe("e1", "b1", "", 0, actionflow.ExecRunning)},
		Actions:   []actionflow.Action{act("a1", "e1", 0, asking), act("a2", "e1", 1, denied)},
		Approvals: []actionflow.Approval{approval("a1", actionflow.ApprovalPending), approval("a2", actionflow.ApprovalDeclinedSt)}}
	got := activity.Build(in)
	if len(got.NeedsAttention) != 1 {
		t.Fatalf("%+v", got)
	}
	r := got.NeedsAttention[0]
	labels := map[ids.ActionID]string{}
	for _, a := range r.Executions[0].Actions {
		labels[a.ActionID] = a.Label
	}
	if labels["a1"] != activity.LabelWaiting || labels["a2"] != activity.LabelDeclined {
		t.Fatalf("labels %v", labels)
	}
	if len(r.Attention) != 1 || r.Attention[0].ApprovalID != "a1.w1" {
		t.Fatalf("attention %+v", r.Attention)
	}
}
