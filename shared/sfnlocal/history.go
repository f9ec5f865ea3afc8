package sfnlocal

import (
	"encoding/json"
	"strconv"
	"time"
)

// event is one execution history event in the wire shape of the Step
// Functions API (GetExecutionHistory): timestamp, type, id, previousEventId
// and one "...EventDetails" object. Each event is encoded once, when it
// happens, and kept as JSON from then on.
type event struct {
	Timestamp epochSeconds `json:"timestamp"`
	Type      string       `json:"type"`
	ID        int64        `json:"id"`
	Previous  int64        `json:"previousEventId"`

	ExecutionStarted   *execStartedDetails `json:"executionStartedEventDetails,omitempty"`
	ExecutionSucceeded *outputDetails      `json:"executionSucceededEventDetails,omitempty"`
	ExecutionFailed    *errorDetails       `json:"executionFailedEventDetails,omitempty"`
	ExecutionAborted   *errorDetails       `json:"executionAbortedEventDetails,omitempty"`
	ExecutionTimedOut  *errorDetails       `json:"executionTimedOutEventDetails,omitempty"`

	StateEntered *stateDetails `json:"stateEnteredEventDetails,omitempty"`
	StateExited  *stateDetails `json:"stateExitedEventDetails,omitempty"`

	LambdaScheduled *lambdaScheduledDetails `json:"lambdaFunctionScheduledEventDetails,omitempty"`
	LambdaSucceeded *outputDetails          `json:"lambdaFunctionSucceededEventDetails,omitempty"`
	LambdaFailed    *errorDetails           `json:"lambdaFunctionFailedEventDetails,omitempty"`
	LambdaTimedOut  *errorDetails           `json:"lambdaFunctionTimedOutEventDetails,omitempty"`

	TaskScheduled *taskScheduledDetails `json:"taskScheduledEventDetails,omitempty"`
	TaskStarted   *taskDetails          `json:"taskStartedEventDetails,omitempty"`
	TaskSubmitted *taskDetails          `json:"taskSubmittedEventDetails,omitempty"`
	TaskSucceeded *taskDetails          `json:"taskSucceededEventDetails,omitempty"`
	TaskFailed    *taskDetails          `json:"taskFailedEventDetails,omitempty"`
	TaskTimedOut  *taskDetails          `json:"taskTimedOutEventDetails,omitempty"`
}

type dataDetails struct {
	Truncated bool `json:"truncated"`
}

var notTruncated = &dataDetails{}

type execStartedDetails struct {
	Input        string       `json:"input"`
	InputDetails *dataDetails `json:"inputDetails"`
	RoleArn      string       `json:"roleArn"`
}

type outputDetails struct {
	Output        string       `json:"output"`
	OutputDetails *dataDetails `json:"outputDetails"`
}

type errorDetails struct {
	Error string `json:"error,omitempty"`
	Cause string `json:"cause,omitempty"`
}

type stateDetails struct {
	Name          string       `json:"name"`
	Input         *string      `json:"input,omitempty"`
	InputDetails  *dataDetails `json:"inputDetails,omitempty"`
	Output        *string      `json:"output,omitempty"`
	OutputDetails *dataDetails `json:"outputDetails,omitempty"`
}

type lambdaScheduledDetails struct {
	Resource         string       `json:"resource"`
	Input            string       `json:"input"`
	InputDetails     *dataDetails `json:"inputDetails"`
	TimeoutInSeconds int64        `json:"timeoutInSeconds,omitempty"`
}

type taskScheduledDetails struct {
	ResourceType       string `json:"resourceType"`
	Resource           string `json:"resource"`
	Region             string `json:"region"`
	Parameters         string `json:"parameters"`
	TimeoutInSeconds   int64  `json:"timeoutInSeconds,omitempty"`
	HeartbeatInSeconds int64  `json:"heartbeatInSeconds,omitempty"`
}

type taskDetails struct {
	ResourceType  string       `json:"resourceType"`
	Resource      string       `json:"resource"`
	Output        *string      `json:"output,omitempty"`
	OutputDetails *dataDetails `json:"outputDetails,omitempty"`
	Error         string       `json:"error,omitempty"`
	Cause         string       `json:"cause,omitempty"`
}

// epochSeconds encodes a time as the AWS JSON protocols do: seconds since
// the epoch, with milliseconds.
type epochSeconds time.Time

func (t epochSeconds) MarshalJSON() ([]byte, error) {
	ms := time.Time(t).UnixMilli()
	return []byte(strconv.FormatFloat(float64(ms)/1000, 'f', 3, 64)), nil
}

func (t *epochSeconds) UnmarshalJSON(b []byte) error {
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return err
	}
	*t = epochSeconds(time.UnixMilli(int64(f*1000 + 0.5)))
	return nil
}

func strp(s string) *string { return &s }

// maxEventBytes bounds one encoded history event. Data embedded as a JSON
// string can double in size through escaping; beyond this the data is left
// out and marked truncated (inputDetails/outputDetails), as Step Functions
// does with data it cannot show, so every event fits in one store item.
const maxEventBytes = 160 << 10

// addEvent appends an event to the record's not-yet-logged history,
// assigning its id and previous event id.
func (r *record) addEvent(at time.Time, ev event) {
	r.NextEventID++
	ev.ID = r.NextEventID
	ev.Previous = ev.ID - 1
	ev.Timestamp = epochSeconds(at)
	b, err := json.Marshal(ev)
	if err == nil && len(b) > maxEventBytes {
		ev.truncate()
		b, err = json.Marshal(ev)
	}
	if err != nil {
		// Every field is a plain string, number or struct of them.
		panic("encode history event: " + err.Error())
	}
	r.Events = append(r.Events, b)
}

var truncated = &dataDetails{Truncated: true}

// truncate drops the data of an event that is too large to keep.
func (ev *event) truncate() {
	if d := ev.ExecutionStarted; d != nil {
		d.Input, d.InputDetails = "", truncated
	}
	for _, d := range []*outputDetails{ev.ExecutionSucceeded, ev.LambdaSucceeded} {
		if d != nil {
			d.Output, d.OutputDetails = "", truncated
		}
	}
	for _, d := range []*stateDetails{ev.StateEntered, ev.StateExited} {
		if d == nil {
			continue
		}
		if d.Input != nil {
			d.Input, d.InputDetails = strp(""), truncated
		}
		if d.Output != nil {
			d.Output, d.OutputDetails = strp(""), truncated
		}
	}
	if d := ev.LambdaScheduled; d != nil {
		d.Input, d.InputDetails = "", truncated
	}
	if d := ev.TaskScheduled; d != nil {
		d.Parameters = ""
	}
	for _, d := range []*taskDetails{ev.TaskSubmitted, ev.TaskSucceeded} {
		if d != nil && d.Output != nil {
			d.Output, d.OutputDetails = strp(""), truncated
		}
	}
	for _, d := range []*errorDetails{ev.ExecutionFailed, ev.ExecutionAborted, ev.ExecutionTimedOut, ev.LambdaFailed, ev.LambdaTimedOut} {
		if d != nil && len(d.Cause) > maxEventBytes/4 {
			d.Cause = d.Cause[:maxEventBytes/4]
		}
	}
	for _, d := range []*taskDetails{ev.TaskFailed, ev.TaskTimedOut} {
		if d != nil && len(d.Cause) > maxEventBytes/4 {
			d.Cause = d.Cause[:maxEventBytes/4]
		}
	}
}

// stateEventType names the entered/exited events of a state type.
func stateEventType(typ string, exited bool) string {
	if exited {
		return typ + "StateExited"
	}
	return typ + "StateEntered"
}
