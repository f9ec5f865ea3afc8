package activity

import (
	"sort"
	"time"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/sandbox"
)

// Section of the Activity view.
type Section string

const (
	NeedsAttention Section = "needs_attention"
	InProgress     Section = "in_progress"
	History        Section = "history"
)

// Labels shown to people. They are part of the contract with the UI.
const (
	LabelWaiting            = "Waiting for your response"
	LabelDeclined           = "Declined"
	LabelExpired            = "Expired"
	LabelPaused             = "Paused"
	LabelQuestion           = "Question waiting"
	LabelUnresolved         = "Unresolved tool result"
	LabelProcessLost        = "Background process lost"
	LabelRunning            = "Running"
	LabelResuming           = "Resuming after restart"
	LabelControlPending     = "Control pending"
	LabelCompleted          = "Completed"
	LabelFailed             = "Failed"
	LabelCancelled          = "Cancelled"
	LabelResponseIncomplete = "Ended · response record incomplete"
)

// Facts are what an execution's lifecycle records do not hold: supplied by
// the control service and the model loop. The zero value claims nothing.
type Facts struct {
	// OpenQuestions counts questions waiting for the user.
	OpenQuestions int `json:"open_questions,omitempty"`
	// PendingCommands lists the types of commands accepted but not applied
	// ("pause", "cancel", ...).
	PendingCommands []string `json:"pending_commands,omitempty"`
	// ResponseRecordMissing: the model response record was never written
	// (a model request of the execution was closed incomplete: no
	// terminal event).
	ResponseRecordMissing bool `json:"response_record_missing,omitempty"`
	// ModelRequests are the execution's model requests, oldest first.
	ModelRequests []ModelRequestRow `json:"model_requests,omitempty"`
	// ActiveProcesses counts managed processes the execution owns that still run.
	ActiveProcesses int `json:"active_processes,omitempty"`
	// LostProcesses are the execution's managed processes whose supervisor
	// is gone (not yet acknowledged): each needs the user's attention.
	LostProcesses []LostProcess `json:"lost_processes,omitempty"`
	// Processes are the managed processes the execution started, oldest
	// first (each with its own output and stop control).
	Processes []ProcessRow `json:"processes,omitempty"`
}

// ProcessRow is one managed process of an execution (package process's
// record, as the UI shows it).
type ProcessRow struct {
	ProcessID string       `json:"process_id"`
	ActionID  ids.ActionID `json:"action_id"`
	Command   string       `json:"command"`
	Status    string       `json:"status"` // running | exited | stopped | lost
	ExitCode  *int         `json:"exit_code,omitempty"`
	StartedAt time.Time    `json:"started_at"`
	EndedAt   *time.Time   `json:"ended_at,omitempty"`
}

// LostProcess is a managed process whose supervisor is gone.
type LostProcess struct {
	ProcessID string       `json:"process_id"`
	ActionID  ids.ActionID `json:"action_id"`
	Command   string       `json:"command"`
	Reason    string       `json:"reason"`
}

// ModelRequestRow is one model request of an execution (package modelreq's
// record, as the UI shows it).
type ModelRequestRow struct {
	RequestID   string     `json:"request_id"`
	Provider    string     `json:"provider"`
	Model       string     `json:"model"`
	Purpose     string     `json:"purpose"` // agent | reviewer
	Status      string     `json:"status"`  // open | completed | failed | cancelled | incomplete
	Usage       TokenUsage `json:"usage"`
	ErrorCode   string     `json:"error_code,omitempty"`
	StartedAt   time.Time  `json:"started_at"`
	CompletedAt *time.Time `json:"completed_at,omitempty"`
}

// TokenUsage is a model request's reported token usage.
type TokenUsage struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
}

// Input is everything Build reads.
type Input struct {
	SessionID ids.SessionID
	// Now decides whether a restart-owned pause may still resume itself.
	Now        time.Time
	Executions []actionflow.Execution
	Actions    []actionflow.Action
	Approvals  []actionflow.Approval
	Receipts   []actionflow.Receipt
	Facts      map[ids.ExecutionID]Facts
}

// FromRecords makes an Input from a session's records.
func FromRecords(session ids.SessionID, now time.Time, r actionflow.SessionRecords, facts map[ids.ExecutionID]Facts) Input {
	return Input{SessionID: session, Now: now, Executions: r.Executions, Actions: r.Actions,
		Approvals: r.Approvals, Receipts: r.Receipts, Facts: facts}
}

// Activity is a session's view.
type Activity struct {
	SessionID      ids.SessionID `json:"session_id"`
	NeedsAttention []Row         `json:"needs_attention"`
	InProgress     []Row         `json:"in_progress"`
	History        []Row         `json:"history"`
	Counts         Counts        `json:"counts"`
}

// Counts are the number of branches per section.
type Counts struct {
	NeedsAttention int `json:"needs_attention"`
	InProgress     int `json:"in_progress"`
	History        int `json:"history"`
}

// Row is one conversation branch.
type Row struct {
	BranchID string  `json:"branch_id"`
	Heading  string  `json:"heading"`
	Section  Section `json:"section"`
	Status   string  `json:"status"`
	// Attention lists what needs the user (needs_attention rows only).
	Attention []Attention `json:"attention,omitempty"`
	// ExecutionCount counts the branch's own executions (not shared ones).
	ExecutionCount int            `json:"execution_count"`
	Executions     []ExecutionRow `json:"executions"`
	UpdatedAt      time.Time      `json:"updated_at"`
}

// Attention is one thing that needs the user.
type Attention struct {
	Kind        string          `json:"kind"` // approval | question | pause | unresolved_result | process_lost
	ExecutionID ids.ExecutionID `json:"execution_id"`
	ActionID    ids.ActionID    `json:"action_id,omitempty"`
	ApprovalID  ids.ApprovalID  `json:"approval_id,omitempty"`
	ProcessID   string          `json:"process_id,omitempty"`
	Label       string          `json:"label"`
	Detail      string          `json:"detail,omitempty"`
}

// ExecutionRow is one execution in a branch's details.
type ExecutionRow struct {
	ExecutionID ids.ExecutionID            `json:"execution_id"`
	RunID       ids.RunID                  `json:"run_id,omitempty"`
	ParentID    ids.ExecutionID            `json:"parent_id,omitempty"`
	Kind        string                     `json:"kind"`
	Status      actionflow.ExecutionStatus `json:"status"`
	Label       string                     `json:"label"`
	// Heading is the execution's own short heading: its title, else what
	// its source is about (fork, retry), else its first tool call, with
	// " · fork" or " · retry" when it is one.
	Heading string `json:"heading"`
	// Title is the title the client gave when it started (absent: none).
	Title string `json:"title,omitempty"`
	// Shared: an earlier execution of the branch this one forked from.
	Shared    bool        `json:"shared,omitempty"`
	Actions   []ActionRow `json:"actions"`
	CreatedAt time.Time   `json:"created_at"`
	UpdatedAt time.Time   `json:"updated_at"`

	// ModelRequests are the execution's model requests (Facts).
	ModelRequests []ModelRequestRow `json:"model_requests"`
	// Processes are the managed processes it started (omitted: none).
	Processes []ProcessRow `json:"processes,omitempty"`
}

// ActionRow is one tool call in an execution's details.
type ActionRow struct {
	ActionID   ids.ActionID   `json:"action_id"`
	ToolCallID ids.ToolCallID `json:"tool_call_id"`
	Tool       string         `json:"tool"`
	// Summary is a one-line summary of the arguments ("npm test",
	// "src/main.go"); see Summary.
	Summary    string           `json:"summary,omitempty"`
	States     lifecycle.States `json:"states"`
	Label      string           `json:"label"`
	ApprovalID ids.ApprovalID   `json:"approval_id,omitempty"`
	Reason     string           `json:"reason,omitempty"`
	CreatedAt  time.Time        `json:"created_at"`
	// Sandbox is the host tool's sandbox profile in brief: "bwrap",
	// "bwrap+network" or "off": the receipt's (what ran) once recorded,
	// else the decided one; empty for other tools.
	Sandbox string `json:"sandbox,omitempty"`
}

// index holds the input keyed for lookups.
type index struct {
	in        Input
	execs     map[ids.ExecutionID]actionflow.Execution
	actions   map[ids.ExecutionID][]actionflow.Action
	approvals map[ids.ActionID]actionflow.Approval
	receipts  map[ids.ActionID]actionflow.Receipt
	branch    map[ids.ExecutionID]string
}

// Build computes the Activity view.
func Build(in Input) Activity {
	x := &index{in: in, execs: map[ids.ExecutionID]actionflow.Execution{}, actions: map[ids.ExecutionID][]actionflow.Action{},
		approvals: map[ids.ActionID]actionflow.Approval{}, receipts: map[ids.ActionID]actionflow.Receipt{}, branch: map[ids.ExecutionID]string{}}
	for _, e := range in.Executions {
		x.execs[e.ExecutionID] = e
	}
	for _, a := range in.Actions {
		x.actions[a.ExecutionID] = append(x.actions[a.ExecutionID], a)
	}
	for _, ap := range in.Approvals {
		x.approvals[ap.ActionID] = ap
	}
	for _, rc := range in.Receipts {
		x.receipts[rc.ActionID] = rc
	}
	members := map[string][]actionflow.Execution{}
	for _, e := range in.Executions {
		b := x.branchOf(e.ExecutionID, 0)
		members[b] = append(members[b], e)
	}
	out := Activity{SessionID: in.SessionID, NeedsAttention: []Row{}, InProgress: []Row{}, History: []Row{}}
	for b, es := range members {
		r := x.row(b, es)
		switch r.Section {
		case NeedsAttention:
			out.NeedsAttention = append(out.NeedsAttention, r)
		case InProgress:
			out.InProgress = append(out.InProgress, r)
		default:
			out.History = append(out.History, r)
		}
	}
	for _, rows := range [][]Row{out.NeedsAttention, out.InProgress, out.History} {
		sort.Slice(rows, func(i, j int) bool {
			if !rows[i].UpdatedAt.Equal(rows[j].UpdatedAt) {
				return rows[i].UpdatedAt.After(rows[j].UpdatedAt)
			}
			return rows[i].BranchID < rows[j].BranchID
		})
	}
	out.Counts = Counts{NeedsAttention: len(out.NeedsAttention), InProgress: len(out.InProgress), History: len(out.History)}
	return out
}

// isChildTask: a job or function started by another execution. It belongs
// to its starter's branch; a fork or retry of a chat keeps its own branch.
func isChildTask(e actionflow.Execution) bool {
	return e.ParentID != "" && e.Kind != "" && e.Kind != "agent_chat"
}

// branchOf is the branch an execution counts in. A child task whose
// starter is missing keeps its own branch id: a missing record never
// moves an execution into a guessed branch.
func (x *index) branchOf(id ids.ExecutionID, depth int) string {
	if b, ok := x.branch[id]; ok {
		return b
	}
	e := x.execs[id]
	b := e.BranchID
	if b == "" {
		b = string(e.ExecutionID)
	}
	if _, ok := x.execs[e.ParentID]; ok && isChildTask(e) && depth < 64 {
		b = x.branchOf(e.ParentID, depth+1)
	}
	x.branch[id] = b
	return b
}

func (x *index) row(branch string, own []actionflow.Execution) Row {
	sort.Slice(own, func(i, j int) bool { return older(own[i], own[j]) })
	r := Row{BranchID: branch, ExecutionCount: len(own)}
	// The chat executions carry the branch's status; child tasks only add
	// activity. A branch of only child tasks (starter missing) uses them.
	newest := own[len(own)-1]
	for i := len(own) - 1; i >= 0; i-- {
		if !isChildTask(own[i]) {
			newest = own[i]
			break
		}
	}
	for _, e := range x.shared(own[0], branch) {
		r.Executions = append(r.Executions, x.execRow(e, true))
	}
	busy, controlPending := false, false
	for _, e := range own {
		r.Executions = append(r.Executions, x.execRow(e, false))
		r.Attention = append(r.Attention, x.attention(e)...)
		if e.UpdatedAt.After(r.UpdatedAt) {
			r.UpdatedAt = e.UpdatedAt
		}
		f := x.in.Facts[e.ExecutionID]
		if e.Status == actionflow.ExecRunning || e.Status == actionflow.ExecCancelling || f.ActiveProcesses > 0 || x.restartResumable(e) {
			busy = true
		}
		for _, c := range f.PendingCommands {
			if c != "cancel" {
				controlPending = true
			}
		}
		for _, a := range x.actions[e.ExecutionID] {
			if a.UpdatedAt.After(r.UpdatedAt) {
				r.UpdatedAt = a.UpdatedAt
			}
			if x.inFlight(a) {
				busy = true
			}
		}
	}
	r.Heading = x.branchHeading(own)
	switch {
	case len(r.Attention) > 0:
		r.Section, r.Status = NeedsAttention, r.Attention[0].Label
	case busy:
		r.Section, r.Status = InProgress, LabelRunning
		if newest.Status == actionflow.ExecPaused && x.restartResumable(newest) {
			r.Status = LabelResuming
		}
	case controlPending:
		r.Section, r.Status = InProgress, LabelControlPending
	default:
		r.Section, r.Status = History, endedLabel(newest)
		if x.in.Facts[newest.ExecutionID].ResponseRecordMissing && ended(newest.Status) {
			r.Status = LabelResponseIncomplete
		}
	}
	if len(r.Attention) == 0 {
		r.Attention = nil
	}
	return r
}

func older(a, b actionflow.Execution) bool {
	if !a.CreatedAt.Equal(b.CreatedAt) {
		return a.CreatedAt.Before(b.CreatedAt)
	}
	return a.ExecutionID < b.ExecutionID
}

// shared lists the earlier executions a fork shares with the branch it
// came from: the fork point and everything before it on that branch,
// recursively. They are details only, never rows.
func (x *index) shared(first actionflow.Execution, branch string) []actionflow.Execution {
	var out []actionflow.Execution
	seen := map[ids.ExecutionID]bool{}
	cur := first
	for depth := 0; depth < 64; depth++ {
		p, ok := x.execs[cur.ParentID]
		if !ok || cur.ParentID == "" {
			break
		}
		pb := x.branchOf(p.ExecutionID, 0)
		if pb == branch {
			break
		}
		var chain []actionflow.Execution
		for _, e := range x.in.Executions {
			if x.branchOf(e.ExecutionID, 0) == pb && !older(p, e) && !seen[e.ExecutionID] {
				chain = append(chain, e)
				seen[e.ExecutionID] = true
			}
		}
		sort.Slice(chain, func(i, j int) bool { return older(chain[i], chain[j]) })
		out = append(chain, out...)
		if len(chain) == 0 {
			break
		}
		cur = chain[0]
	}
	return out
}

func (x *index) restartResumable(e actionflow.Execution) bool {
	if e.Status != actionflow.ExecPaused || e.PauseOwner != "restart" || e.Restart == nil {
		return false
	}
	return e.Restart.Deadline == nil || x.in.Now.Before(*e.Restart.Deadline)
}

func (x *index) attention(e actionflow.Execution) []Attention {
	var out []Attention
	for _, a := range x.actions[e.ExecutionID] {
		if ap, ok := x.approvals[a.ActionID]; ok && ap.Status == actionflow.ApprovalPending {
			out = append(out, Attention{Kind: "approval", ExecutionID: e.ExecutionID, ActionID: a.ActionID, ApprovalID: ap.ApprovalID,
				Label: LabelWaiting, Detail: a.Tool + ": " + ap.Reason.Code})
		}
	}
	if q := x.in.Facts[e.ExecutionID].OpenQuestions; q > 0 {
		out = append(out, Attention{Kind: "question", ExecutionID: e.ExecutionID, Label: LabelQuestion})
	}
	if e.Status == actionflow.ExecPaused && !x.restartResumable(e) {
		out = append(out, Attention{Kind: "pause", ExecutionID: e.ExecutionID, Label: LabelPaused, Detail: "paused by " + pauseOwner(e)})
	}
	for _, a := range x.actions[e.ExecutionID] {
		if x.outcome(a) == lifecycle.OutcomeUnknown {
			out = append(out, Attention{Kind: "unresolved_result", ExecutionID: e.ExecutionID, ActionID: a.ActionID,
				Label: LabelUnresolved, Detail: a.Tool + ": the operation may have started; check its effects"})
		}
	}
	for _, p := range x.in.Facts[e.ExecutionID].LostProcesses {
		out = append(out, Attention{Kind: "process_lost", ExecutionID: e.ExecutionID, ActionID: p.ActionID, ProcessID: p.ProcessID,
			Label: LabelProcessLost, Detail: p.Command + ": " + p.Reason + "; it may still run, unsupervised"})
	}
	return out
}

func pauseOwner(e actionflow.Execution) string {
	if e.PauseOwner == "" {
		return "user"
	}
	return e.PauseOwner
}

// outcome is the best known outcome: the sealed receipt wins over the
// action's projected states (projection may lag the receipt).
func (x *index) outcome(a actionflow.Action) lifecycle.Outcome {
	if rc, ok := x.receipts[a.ActionID]; ok {
		if a.States.Outcome.Known() {
			return a.States.Outcome // reconciled after the receipt
		}
		return rc.Outcome
	}
	return a.States.Outcome
}

// inFlight: an action whose lifecycle has not finished and that is not
// waiting for a person (a pending approval is attention, not progress).
func (x *index) inFlight(a actionflow.Action) bool {
	if a.States.Terminal() {
		return false
	}
	if ap, ok := x.approvals[a.ActionID]; ok && ap.Status == actionflow.ApprovalPending {
		return false
	}
	return x.outcome(a) != lifecycle.OutcomeUnknown
}

func (x *index) execRow(e actionflow.Execution, shared bool) ExecutionRow {
	er := ExecutionRow{ExecutionID: e.ExecutionID, RunID: e.RunID, ParentID: e.ParentID, Kind: e.Kind, Status: e.Status,
		Shared: shared, Actions: []ActionRow{}, CreatedAt: e.CreatedAt, UpdatedAt: e.UpdatedAt, Label: execLabel(e),
		Heading: x.execHeading(e), Title: e.Title,
		ModelRequests: append([]ModelRequestRow{}, x.in.Facts[e.ExecutionID].ModelRequests...),
		Processes:     x.in.Facts[e.ExecutionID].Processes}
	if x.in.Facts[e.ExecutionID].ResponseRecordMissing && ended(e.Status) {
		er.Label = LabelResponseIncomplete
	}
	as := append([]actionflow.Action(nil), x.actions[e.ExecutionID]...)
	sort.Slice(as, func(i, j int) bool {
		if !as[i].CreatedAt.Equal(as[j].CreatedAt) {
			return as[i].CreatedAt.Before(as[j].CreatedAt)
		}
		return as[i].ActionID < as[j].ActionID
	})
	for _, a := range as {
		ar := ActionRow{ActionID: a.ActionID, ToolCallID: a.ToolCallID, Tool: a.Tool, Summary: Summary(a.Tool, a.Arguments),
			States: a.States, CreatedAt: a.CreatedAt}
		ap, hasAp := x.approvals[a.ActionID]
		if hasAp {
			ar.ApprovalID = ap.ApprovalID
		}
		if a.Decision != nil {
			ar.Reason = a.Decision.Reason.Code
			ar.Sandbox = sandboxBrief(a.Decision.Sandbox)
		}
		if rc, ok := x.receipts[a.ActionID]; ok && rc.Sandbox != nil {
			ar.Sandbox = sandboxBrief(rc.Sandbox) // what actually ran
		}
		ar.Label = x.actionLabel(a, ap, hasAp)
		er.Actions = append(er.Actions, ar)
	}
	return er
}

func (x *index) actionLabel(a actionflow.Action, ap actionflow.Approval, hasAp bool) string {
	if hasAp {
		switch ap.Status {
		case actionflow.ApprovalPending:
			return LabelWaiting
		case actionflow.ApprovalDeclinedSt:
			return LabelDeclined
		case actionflow.ApprovalExpired:
			return LabelExpired
		}
	}
	switch x.outcome(a) {
	case lifecycle.OutcomeSucceeded:
		return "Succeeded"
	case lifecycle.OutcomeFailed:
		return "Failed"
	case lifecycle.OutcomeUnknown:
		return LabelUnresolved
	case lifecycle.OutcomeNotStarted:
		if a.States.Permission == lifecycle.PermissionDeny {
			return "Denied"
		}
		return "Not started"
	}
	switch {
	case a.States.Started:
		return LabelRunning
	case a.States.Permission == lifecycle.PermissionAllow:
		return "Authorized"
	}
	return "Deciding"
}

func ended(s actionflow.ExecutionStatus) bool {
	return s == actionflow.ExecCompleted || s == actionflow.ExecFailed || s == actionflow.ExecCancelled
}

func execLabel(e actionflow.Execution) string {
	switch e.Status {
	case actionflow.ExecRunning:
		return LabelRunning
	case actionflow.ExecPaused:
		return LabelPaused
	case actionflow.ExecCancelling:
		return "Cancelling"
	}
	return endedLabel(e)
}

func endedLabel(e actionflow.Execution) string {
	switch e.Status {
	case actionflow.ExecCompleted:
		return LabelCompleted
	case actionflow.ExecFailed:
		return LabelFailed
	case actionflow.ExecCancelled:
		return LabelCancelled
	}
	return string(e.Status)
}

// sandboxBrief is a profile as Activity shows it.
func sandboxBrief(p *sandbox.Profile) string {
	switch {
	case p == nil:
		return ""
	case p.Mode == sandbox.ModeOff:
		return sandbox.ModeOff
	case p.Network:
		return p.Mode + "+network"
	}
	return p.Mode
}
