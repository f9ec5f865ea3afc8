package machineview_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/machineview"
)

const def = `{"StartAt":"A","States":{
 "A":{"Type":"Task","Resource":"arn:fn","Retry":[{"ErrorEquals":["Busy"]},{"ErrorEquals":["States.ALL"]}],
      "Catch":[{"ErrorEquals":["Boom"],"Next":"Z"},{"ErrorEquals":["States.ALL"],"Next":"C"}],"Next":"C"},
 "C":{"Type":"Choice","Choices":[{"Variable":"$.x","StringEquals":"w","Next":"W"},{"Variable":"$.x","StringEquals":"t","Next":"T"}],"Default":"Z"},
 "W":{"Type":"Wait","Seconds":5,"Next":"T"},
 "T":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke.waitForTaskToken","Parameters":{"Payload":{"token.$":"$$.Task.Token"}},"Next":"Z"},
 "Z":{"Type":"Succeed"}}}`

// ev builds a history: "A>" entered, "A<" exited, "A!Boom" a failed
// attempt, "A+" a scheduled attempt, "A=" a success, "X!" execution failed.
func history(spec ...string) []machineview.Event {
	var out []machineview.Event
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, s := range spec {
		ev := machineview.Event{ID: int64(i + 1), PreviousID: int64(i), Timestamp: t0.Add(time.Duration(i) * time.Second)}
		name, op := s[:1], s[1:2]
		switch op {
		case ">":
			ev.Type, ev.State = "StateEntered", name
		case "<":
			ev.Type, ev.State = "StateExited", name
		case "+":
			ev.Type = "TaskScheduled"
		case "=":
			ev.Type = "TaskSucceeded"
		case "!":
			ev.Type, ev.Error = "TaskFailed", s[2:]
			if name == "X" {
				ev.Type = "ExecutionFailed"
			}
		}
		out = append(out, ev)
	}
	return out
}

type step struct {
	State, Via, Error string
	Rule              int // -1: none
	Retries           []string
}

func TestAnalyze(t *testing.T) {
	d, err := machineview.ParseDefinition([]byte(def))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		status  string
		events  []machineview.Event
		want    []step
		current *machineview.Current
	}{
		{name: "next and a choice rule", status: "SUCCEEDED",
			events: history("A>", "A+", "A=", "A<", "C>", "C<", "T>", "T+", "T=", "T<", "Z>", "Z<"),
			want:   []step{{"A", "start", "", -1, nil}, {"C", "next", "", -1, nil}, {"T", "choice", "", 1, nil}, {"Z", "next", "", -1, nil}}},
		{name: "the choice's default", status: "SUCCEEDED",
			events: history("A>", "A+", "A=", "A<", "C>", "C<", "Z>"),
			want:   []step{{"A", "start", "", -1, nil}, {"C", "next", "", -1, nil}, {"Z", "default", "", -1, nil}}},
		{name: "retries, then the first matching catch", status: "SUCCEEDED",
			events: history("A>", "A+", "A!Busy", "A+", "A!Other", "A+", "A!Boom", "A<", "Z>"),
			want:   []step{{"A", "start", "", -1, []string{"Busy:0", "Other:1"}}, {"Z", "catch", "Boom", 0, nil}}},
		{name: "a catch whose next is also the state's next", status: "SUCCEEDED",
			events: history("A>", "A+", "A!Other", "A<", "C>", "C<", "Z>"),
			want:   []step{{"A", "start", "", -1, nil}, {"C", "catch", "Other", 1, nil}, {"Z", "default", "", -1, nil}}},
		{name: "waiting for a task token", status: "RUNNING",
			events:  history("A>", "A+", "A=", "A<", "C>", "C<", "T>", "T+"),
			want:    []step{{"A", "start", "", -1, nil}, {"C", "next", "", -1, nil}, {"T", "choice", "", 1, nil}},
			current: &machineview.Current{State: "T", Type: "Task", Waiting: "task_token", WaitingForTaskToken: true}},
		{name: "waiting to retry", status: "RUNNING",
			events:  history("A>", "A+", "A!Busy"),
			want:    []step{{"A", "start", "", -1, nil}},
			current: &machineview.Current{State: "A", Type: "Task", Waiting: "retry", Error: "Busy"}},
		{name: "in a wait state", status: "RUNNING",
			events:  history("A>", "A+", "A=", "A<", "C>", "C<", "W>"),
			want:    []step{{"A", "start", "", -1, nil}, {"C", "next", "", -1, nil}, {"W", "choice", "", 0, nil}},
			current: &machineview.Current{State: "W", Type: "Wait", Waiting: "wait"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := machineview.Analyze(d, tc.status, tc.events)
			var got []step
			for _, st := range a.Path {
				g := step{State: st.State, Via: st.Via, Error: st.Error, Rule: -1}
				if st.Rule != nil {
					g.Rule = *st.Rule
				}
				for _, r := range st.Retries {
					g.Retries = append(g.Retries, r.Error+":"+string(rune('0'+r.Retrier)))
				}
				got = append(got, g)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("path\n got %+v\nwant %+v", got, tc.want)
			}
			if a.Current != nil {
				a.Current.Since = time.Time{}
			}
			if !reflect.DeepEqual(a.Current, tc.current) {
				t.Errorf("current %+v, want %+v", a.Current, tc.current)
			}
		})
	}
}

func TestHideTaskTokens(t *testing.T) {
	in := func(s string) *string { return &s }
	events := []machineview.Event{
		{ID: 1, Type: "TaskScheduled", Input: in(`{"FunctionName":"f","Payload":{"token":"AAAA/secret+token=="}}`)},
		{ID: 2, Type: "TaskSubmitted", Output: in(`{"echo":"AAAA\/secret+token=="}`)},
		{ID: 3, Type: "TaskFailed", Cause: "token AAAA/secret+token== is gone"},
	}
	machineview.HideTaskTokens([]byte(def), events)
	b, _ := json.Marshal(events)
	if strings.Contains(string(b), "secret") {
		t.Fatalf("a task token is left: %s", b)
	}
	if n := strings.Count(string(b), machineview.TaskTokenHidden); n != 3 {
		t.Fatalf("%d tokens marked hidden: %s", n, b)
	}
}
