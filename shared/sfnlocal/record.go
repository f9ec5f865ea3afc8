package sfnlocal

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"

	"github.com/klauspost/compress/s2"

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

// Store layout (see doc.go):
//
//	SFNEXEC#<name> / META   the execution item: written when the execution
//	                        starts and when it closes (PutOnce, then one
//	                        CompareAndSwap). While it runs it is listed in
//	                        the sparse index GSI2PK=OPEN#SFN.
//	SFNHIST#<name>          a log stream: one entry per boundary written in
//	                        between, holding the history events since the
//	                        previous write and the position reached.
const (
	execPKPrefix  = "SFNEXEC#"
	execSK        = "META"
	histPrefix    = "SFNHIST#"
	openIndexPK   = "OPEN#SFN"
	listPKPrefix  = "SFNSM#"
	maxClosedKept = 16
)

// record is an execution: its identity and outcome, its position, and the
// history events not yet written anywhere durable. Times are Unix ms.
type record struct {
	StateMachine string `json:"sm"`
	Name         string `json:"name"`
	// Input is kept as given (not re-encoded): a repeated StartExecution
	// compares it byte for byte, and DescribeExecution returns it unchanged.
	Input  string          `json:"input"`
	Start  int64           `json:"start"`
	Status string          `json:"status"`
	Stop   int64           `json:"stop,omitempty"`
	Output json.RawMessage `json:"output,omitempty"`
	Error  string          `json:"error,omitempty"`
	Cause  string          `json:"cause,omitempty"`
	// Deadline is the execution timeout (top-level TimeoutSeconds).
	Deadline int64 `json:"deadline,omitempty"`
	// Def names the definition the execution runs (SFNDEF#<Def>): the one
	// current, or of its version, when it started. Empty in executions
	// written before definitions were stored.
	Def string `json:"def,omitempty"`
	// Ver is the state machine version it started on (0: the state machine
	// itself), Alias the alias it started through ("": none).
	Ver   int64  `json:"ver,omitempty"`
	Alias string `json:"alias,omitempty"`

	position

	// Events are history events not yet in the log (ids Logged+1 ..
	// NextEventID). In the execution item they are the events of its write.
	// Stored as "packed" when large (see spliceEvents).
	Events []json.RawMessage `json:"events,omitempty"`
	Packed []byte            `json:"packed,omitempty"`
	Logged int64             `json:"logged,omitempty"`

	// in is StateInput decoded (not stored).
	in any
}

// position is where a running execution is: everything needed to resume it.
// Each log entry carries the position reached at that boundary.
type position struct {
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

	// NextEventID is the id of the last history event.
	NextEventID int64 `json:"lastEvent"`
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

// logEntry is one entry of an execution's log stream: the history events
// From..To (none when From is 0) and the position after them.
type logEntry struct {
	From   int64             `json:"from,omitempty"`
	To     int64             `json:"to,omitempty"`
	Events []json.RawMessage `json:"events,omitempty"`
	Packed []byte            `json:"packed,omitempty"`
	Pos    *position         `json:"pos,omitempty"`
}

// encode encodes the entry (its events are already JSON).
func (le logEntry) encode() ([]byte, error) {
	events := le.Events
	le.Events = nil
	b, err := json.Marshal(le)
	if err != nil {
		return nil, fmt.Errorf("encode log entry: %w", err)
	}
	return spliceEvents(b, events), nil
}

// clone copies the record so a transition can be prepared, written, and
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

// firstEventID is the id of Events[0].
func (r *record) firstEventID() int64 { return r.NextEventID - int64(len(r.Events)) + 1 }

func ms(t time.Time) int64 { return t.UnixMilli() }

func fromMS(v int64) time.Time { return time.UnixMilli(v).UTC() }

// item builds the execution item at the given version.
func (r *record) item(version int64) (store.Item, error) {
	if err := r.unpack(); err != nil { // events are packed anew below
		return store.Item{}, err
	}
	events := r.Events
	r.Events = nil
	body, err := json.Marshal(r)
	r.Events = events
	if err != nil {
		return store.Item{}, fmt.Errorf("encode execution %s: %w", r.Name, err)
	}
	body = spliceEvents(body, events)
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
	return r, nil
}

// unpack decompresses the events of a record read from the store (a
// listing or a description never needs them, so decodeRecord leaves them).
func (r *record) unpack() error {
	if err := unpackEvents(&r.Events, &r.Packed); err != nil {
		return fmt.Errorf("execution item %s: %w", r.Name, err)
	}
	return nil
}

func decodeLogEntry(b []byte) (logEntry, error) {
	var le logEntry
	if err := json.Unmarshal(b, &le); err != nil {
		return le, err
	}
	return le, unpackEvents(&le.Events, &le.Packed)
}

// packAbove is the size of history from which it is stored compressed.
// Every event repeats the state's data (input, output, parameters), so a
// closed execution's history shrinks about tenfold: a lifecycle action's
// 13 KB fits in one database page instead of a chain of overflow pages.
const packAbove = 2 << 10

// unpackEvents replaces packed events (an S2 block of the JSON array) by
// the events themselves.
func unpackEvents(events *[]json.RawMessage, packed *[]byte) error {
	if len(*packed) == 0 {
		return nil
	}
	raw, err := s2.Decode(nil, *packed)
	if err != nil {
		return fmt.Errorf("packed history: %w", err)
	}
	*packed = nil
	if err := json.Unmarshal(raw, events); err != nil {
		return fmt.Errorf("packed history: %w", err)
	}
	return nil
}

// spliceEvents adds "events":[...] to an encoded object, or, when they
// are larger than packAbove, "packed":"<base64 of an S2 block of the
// array>". The events are already compact JSON; json.Marshal would scan
// and copy each again.
func spliceEvents(obj []byte, events []json.RawMessage) []byte {
	if len(events) == 0 {
		return obj
	}
	n := len(`[]`) + len(events)
	for _, e := range events {
		n += len(e)
	}
	arr := make([]byte, 0, n)
	arr = append(arr, '[')
	for i, e := range events {
		if i > 0 {
			arr = append(arr, ',')
		}
		arr = append(arr, e...)
	}
	arr = append(arr, ']')
	name := `"events":`
	if len(arr) > packAbove {
		packed := s2.Encode(nil, arr)
		name = `"packed":"`
		enc := base64.StdEncoding
		arr = enc.AppendEncode(make([]byte, 0, enc.EncodedLen(len(packed))+1), packed)
		arr = append(arr, '"')
	}
	out := make([]byte, 0, len(obj)+len(name)+len(arr)+2)
	out = append(out, obj[:len(obj)-1]...)
	if len(obj) > 2 {
		out = append(out, ',')
	}
	out = append(out, name...)
	out = append(out, arr...)
	return append(out, '}')
}

func execKey(name string) store.Key { return store.Key{PK: execPKPrefix + name, SK: execSK} }
