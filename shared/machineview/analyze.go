package machineview

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/openprogram/lifecycle/shared/asl"
)

// Definition is what Analyze reads of an ASL document: the states and
// their transitions. Fields it does not need are ignored, so a definition
// the embedded engine would refuse (Parallel, Map) is still traced.
type Definition struct {
	StartAt string           `json:"StartAt"`
	States  map[string]State `json:"States"`
}

// State is one state's type and transitions.
type State struct {
	Type     string `json:"Type"`
	Next     string `json:"Next"`
	End      bool   `json:"End"`
	Default  string `json:"Default"`
	Resource string `json:"Resource"`
	Choices  []struct {
		Next string `json:"Next"`
	} `json:"Choices"`
	Catch []struct {
		ErrorEquals []string `json:"ErrorEquals"`
		Next        string   `json:"Next"`
	} `json:"Catch"`
	Retry []struct {
		ErrorEquals []string `json:"ErrorEquals"`
	} `json:"Retry"`
}

// ParseDefinition reads the states of an ASL document.
func ParseDefinition(def []byte) (Definition, error) {
	var d Definition
	if err := json.Unmarshal(def, &d); err != nil {
		return Definition{}, fmt.Errorf("read the state machine definition: %w", err)
	}
	if d.StartAt == "" || len(d.States) == 0 {
		return Definition{}, fmt.Errorf("read the state machine definition: no StartAt or no States")
	}
	if _, ok := d.States[d.StartAt]; !ok {
		return Definition{}, fmt.Errorf("read the state machine definition: StartAt %q names no state", d.StartAt)
	}
	return d, nil
}

// How a step was reached (Step.Via).
const (
	ViaStart   = "start"   // the definition's StartAt
	ViaNext    = "next"    // the previous state's Next
	ViaChoice  = "choice"  // a Choice rule (Step.Rule is its index)
	ViaDefault = "default" // the Choice's Default
	ViaCatch   = "catch"   // a Catch entry (Step.Rule) caught Step.Error
)

// What an open execution's current state is doing (Current.Waiting).
const (
	WaitingTaskToken = "task_token" // a callback Task (.waitForTaskToken): someone must send its token
	WaitingTask      = "task"       // a Task whose function is running
	WaitingRetry     = "retry"      // a Task that failed, before its Retry runs it again
	WaitingTimer     = "wait"       // a Wait state
)

// Analysis is what the history says about the definition.
type Analysis struct {
	// Path is every state entered, in order (a state entered twice is
	// listed twice).
	Path []Step `json:"path"`
	// Current is the state an open execution is in (nil when it ended).
	Current *Current `json:"current,omitempty"`
}

// Step is one state entered.
type Step struct {
	State string `json:"state"`
	Type  string `json:"type"`
	// Via says how it was reached from From.
	Via  string `json:"via"`
	From string `json:"from,omitempty"`
	// Rule is the index of the Choice rule or Catch entry taken.
	Rule *int `json:"rule,omitempty"`
	// Error is the error a Catch caught (Via "catch").
	Error          string     `json:"error,omitempty"`
	EnteredEventID int64      `json:"entered_event_id"`
	EnteredAt      time.Time  `json:"entered_at"`
	ExitedEventID  int64      `json:"exited_event_id,omitempty"`
	ExitedAt       *time.Time `json:"exited_at,omitempty"`
	// Retries are the failed attempts a Retry entry ran again.
	Retries []Retry `json:"retries,omitempty"`
	// FailedWith is the error that ended the execution in this state
	// (uncaught, retries exhausted, or a Fail state).
	FailedWith string `json:"failed_with,omitempty"`

	lastFailure   string // error of the last attempt, "" after a success
	lastFailureID int64
}

// Retry is one failed attempt run again.
type Retry struct {
	Error string `json:"error"`
	// Retrier is the index of the Retry entry that matched (-1: none did,
	// which Step Functions would not do; kept rather than hidden).
	Retrier int   `json:"retrier"`
	EventID int64 `json:"event_id"`
}

// Current is where an open execution is.
type Current struct {
	State   string    `json:"state"`
	Type    string    `json:"type"`
	Since   time.Time `json:"since"`
	Waiting string    `json:"waiting,omitempty"`
	// WaitingForTaskToken: a callback Task whose token nobody sent yet
	// (an approval, a question, a host worker).
	WaitingForTaskToken bool `json:"waiting_for_task_token"`
	// Error is the failure a pending retry follows.
	Error string `json:"error,omitempty"`
}

// Analyze traces the history events (oldest first) of an execution with
// the given status through its definition.
func Analyze(def Definition, status string, events []Event) Analysis {
	a := Analysis{Path: []Step{}}
	var cur *Step
	for _, ev := range events {
		switch {
		case strings.HasSuffix(ev.Type, "StateEntered"):
			st := def.States[ev.State]
			step := Step{State: ev.State, Type: st.Type, Via: ViaStart, EnteredEventID: ev.ID, EnteredAt: ev.Timestamp}
			if cur != nil {
				step.From = cur.State
				via(def.States[cur.State], cur.lastFailure, &step)
			}
			a.Path = append(a.Path, step)
			cur = &a.Path[len(a.Path)-1]
		case cur == nil:
		case strings.HasSuffix(ev.Type, "StateExited"):
			t := ev.Timestamp
			cur.ExitedEventID, cur.ExitedAt = ev.ID, &t
		case isScheduled(ev.Type):
			if cur.lastFailure != "" {
				cur.Retries = append(cur.Retries, Retry{Error: cur.lastFailure, Retrier: retrier(def.States[cur.State], cur.lastFailure), EventID: cur.lastFailureID})
			}
			cur.lastFailure = ""
		case isFailure(ev.Type):
			cur.lastFailure, cur.lastFailureID = errorName(ev), ev.ID
		case isSuccess(ev.Type):
			cur.lastFailure = ""
		case ev.Type == "ExecutionFailed" || ev.Type == "ExecutionTimedOut" || ev.Type == "ExecutionAborted":
			if cur.ExitedAt == nil || cur.Type == "Fail" {
				cur.FailedWith = errorName(ev)
			}
		}
	}
	if status == "RUNNING" && cur != nil && cur.ExitedAt == nil {
		c := &Current{State: cur.State, Type: cur.Type, Since: cur.EnteredAt}
		st := def.States[cur.State]
		switch {
		case cur.Type == "Wait":
			c.Waiting = WaitingTimer
		case cur.Type != "Task":
		case cur.lastFailure != "":
			c.Waiting, c.Error = WaitingRetry, cur.lastFailure
		case strings.HasSuffix(st.Resource, ".waitForTaskToken"):
			c.Waiting, c.WaitingForTaskToken = WaitingTaskToken, true
		default:
			c.Waiting = WaitingTask
		}
		a.Current = c
	}
	return a
}

// via names the transition from the state from (whose last attempt failed
// with failure, "" if none) to step.
func via(from State, failure string, step *Step) {
	if failure != "" {
		// The first Catch entry that matches the error decides; its Next is
		// the state entered.
		for i, c := range from.Catch {
			if asl.MatchesError(c.ErrorEquals, failure) && c.Next == step.State {
				step.Via, step.Rule, step.Error = ViaCatch, &i, failure
				return
			}
		}
	}
	if from.Type == "Choice" {
		for i, c := range from.Choices {
			if c.Next == step.State {
				step.Via, step.Rule = ViaChoice, &i
				return
			}
		}
		if from.Default == step.State {
			step.Via = ViaDefault
			return
		}
	}
	step.Via = ViaNext
}

func retrier(st State, name string) int {
	for i, r := range st.Retry {
		if asl.MatchesError(r.ErrorEquals, name) {
			return i
		}
	}
	return -1
}

func isScheduled(t string) bool {
	return t == "TaskScheduled" || t == "LambdaFunctionScheduled" || t == "ActivityScheduled"
}

func isTaskEvent(t string) bool {
	return strings.HasPrefix(t, "Task") || strings.HasPrefix(t, "LambdaFunction") || strings.HasPrefix(t, "Activity")
}

func isFailure(t string) bool {
	return isTaskEvent(t) && !strings.Contains(t, "State") &&
		(strings.HasSuffix(t, "Failed") || strings.HasSuffix(t, "TimedOut"))
}

func isSuccess(t string) bool {
	return isTaskEvent(t) && !strings.Contains(t, "State") && strings.HasSuffix(t, "Succeeded")
}

// errorName is an event's error, or the name Step Functions gives a failure
// of that kind when the event names none.
func errorName(ev Event) string {
	if ev.Error != "" {
		return ev.Error
	}
	if strings.HasSuffix(ev.Type, "TimedOut") {
		return asl.ErrTimeout
	}
	return asl.ErrTaskFailed
}
