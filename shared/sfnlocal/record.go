package sfnlocal

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/openprogram/lifecycle/shared/store"
)

// Execution status values (the Step Functions API strings).
const (
	statusRunning   = "RUNNING"
	statusSucceeded = "SUCCEEDED"
	statusFailed    = "FAILED"
	statusTimedOut  = "TIMED_OUT"
	statusAborted   = "ABORTED"
)

// Phases of a running execution at its current state.
const (
	// phaseRun: at a Task state whose function is to be invoked (or is being
	// invoked). After a restart the function is invoked again.
	phaseRun = "run"
	// phaseWait: in a Wait state until Due.
	phaseWait = "wait"
	// phaseRetry: a Task attempt failed; the next attempt starts at Due.
	phaseRetry = "retry"
	// phaseToken: a .waitForTaskToken function was invoked; waiting for
	// SendTaskSuccess/SendTaskFailure, TimeoutAt or HeartbeatAt.
	phaseToken = "token"
)

// Store keys. One item per execution holds everything needed to resume it;
// history batches go to a log stream; the sparse index lists running
// executions so Start finds them after a restart.
const (
	execPKPrefix  = "SFNEXEC#"
	execSK        = "META"
	histPrefix    = "SFNHIST#"
	openIndexPK   = "OPEN#SFN"
	listPKPrefix  = "SFNSM#"
	maxClosedKept = 16
)

// record is the durable state of one execution (the Body of its META item).
// Times are Unix milliseconds.
type record struct {
	StateMachine string          `json:"sm"`
	Name         string          `json:"name"`
	Input        json.RawMessage `json:"input"`
	Start        int64           `json:"start"`
	Status       string          `json:"status"`
	Stop         int64           `json:"stop,omitempty"`
	Output       json.RawMessage `json:"output,omitempty"`
	Error        string          `json:"error,omitempty"`
	Cause        string          `json:"cause,omitempty"`
	// Deadline is the execution timeout (top-level TimeoutSeconds).
	Deadline int64 `json:"deadline,omitempty"`

	// Position, while RUNNING: the current state, its raw input, when it
	// was entered, the phase and its due time.
	State      string          `json:"state,omitempty"`
	StateInput json.RawMessage `json:"stateInput,omitempty"`
	Entered    int64           `json:"entered,omitempty"`
	// EnteredEvent is the id of the state's entered event (for causes).
	EnteredEvent int64  `json:"enteredEvent,omitempty"`
	Phase        string `json:"phase,omitempty"`
	Due          int64  `json:"due,omitempty"`
	// Retries counts the attempts used per retrier of the current state;
	// RetryCount is their sum ($$.State.RetryCount).
	Retries    []int64 `json:"retries,omitempty"`
	RetryCount int64   `json:"retryCount,omitempty"`

	// The current task token (a .waitForTaskToken attempt), its deadlines,
	// whether the function invocation finished (TaskSubmitted) and an
	// outcome that arrived while the function was still running.
	Token       string   `json:"token,omitempty"`
	TimeoutAt   int64    `json:"timeoutAt,omitempty"`
	HeartbeatAt int64    `json:"heartbeatAt,omitempty"`
	Submitted   bool     `json:"submitted,omitempty"`
	Outcome     *outcome `json:"outcome,omitempty"`
	// Closed remembers the last few tokens that stopped being valid and
	// why, so SendTask* can answer TaskTimedOut rather than TaskDoesNotExist.
	Closed []closedToken `json:"closed,omitempty"`

	// NextEventID is the id of the last history event; Events the events
	// not yet appended to the history log; Logged the last id appended.
	NextEventID int64             `json:"lastEvent"`
	Events      []json.RawMessage `json:"events,omitempty"`
	Logged      int64             `json:"logged,omitempty"`

	// in is StateInput decoded (not persisted).
	in any
	// eventBytes is the size of Events (not persisted).
	eventBytes int
}

// outcome is a task token's result reported through the API.
type outcome struct {
	Success bool            `json:"success"`
	Output  json.RawMessage `json:"output,omitempty"`
	Error   string          `json:"error,omitempty"`
	Cause   string          `json:"cause,omitempty"`
}

type closedToken struct {
	Token    string `json:"token"`
	TimedOut bool   `json:"timedOut,omitempty"`
}

// clone copies the record so a transition can be prepared, persisted, and
// only then made current. Slices that transitions modify are copied.
func (r *record) clone() *record {
	c := *r
	c.Events = append([]json.RawMessage(nil), r.Events...)
	c.Retries = append([]int64(nil), r.Retries...)
	c.Closed = append([]closedToken(nil), r.Closed...)
	return &c
}

// closeToken invalidates the current token, remembering it.
func (r *record) closeToken(timedOut bool) {
	if r.Token == "" {
		return
	}
	r.Closed = append(r.Closed, closedToken{Token: r.Token, TimedOut: timedOut})
	if len(r.Closed) > maxClosedKept {
		r.Closed = r.Closed[len(r.Closed)-maxClosedKept:]
	}
	r.Token, r.TimeoutAt, r.HeartbeatAt, r.Submitted, r.Outcome = "", 0, 0, false, nil
}

// clearPosition forgets the current state once the execution closes.
func (r *record) clearPosition() {
	r.State, r.StateInput, r.in, r.Entered, r.EnteredEvent, r.Phase, r.Due = "", nil, nil, 0, 0, "", 0
	r.Retries, r.RetryCount = nil, 0
}

func ms(t time.Time) int64 { return t.UnixMilli() }

func fromMS(v int64) time.Time { return time.UnixMilli(v).UTC() }

// item builds the store item of the record at the given version.
func (r *record) item(version int64) (store.Item, error) {
	body, err := json.Marshal(r)
	if err != nil {
		return store.Item{}, fmt.Errorf("encode execution %s: %w", r.Name, err)
	}
	sortKey := fmt.Sprintf("%013d#%s", r.Start, r.Name)
	it := store.Item{
		PK:      execPKPrefix + r.Name,
		SK:      execSK,
		Version: version,
		GSI1PK:  listPKPrefix + r.StateMachine,
		GSI1SK:  sortKey,
		Body:    body,
	}
	if r.Status == statusRunning {
		it.GSI2PK, it.GSI2SK = openIndexPK, sortKey
	}
	return it, nil
}

func decodeRecord(it store.Item) (*record, error) {
	r := &record{}
	if err := json.Unmarshal(it.Body, r); err != nil {
		return nil, fmt.Errorf("decode execution item %s: %w", it.Key(), err)
	}
	for _, e := range r.Events {
		r.eventBytes += len(e)
	}
	return r, nil
}

func execKey(name string) store.Key { return store.Key{PK: execPKPrefix + name, SK: execSK} }
