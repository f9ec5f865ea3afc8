package statemachines

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/openprogram/lifecycle/shared/actionflow"
)

type state struct {
	Type       string            `json:"Type"`
	Resource   string            `json:"Resource"`
	Parameters map[string]any    `json:"Parameters"`
	Retry      []json.RawMessage `json:"Retry"`
	Catch      []json.RawMessage `json:"Catch"`
	Next       string            `json:"Next"`
	Default    string            `json:"Default"`
}

type rule struct {
	ErrorEquals []string `json:"ErrorEquals"`
	Next        string   `json:"Next"`
}

func load(t *testing.T) map[string]state {
	var def struct {
		StartAt string           `json:"StartAt"`
		States  map[string]state `json:"States"`
	}
	if err := json.Unmarshal(ActionLifecycle, &def); err != nil {
		t.Fatal(err)
	}
	return def.States
}

// Names AWS itself produces: the States.* errors of the ASL specification
// and the Lambda service exceptions of the Lambda integration.
var awsNames = map[string]bool{
	"States.ALL": true, "States.Timeout": true, "States.TaskFailed": true, "States.HeartbeatTimeout": true,
	"Lambda.ServiceException": true, "Lambda.AWSLambdaException": true, "Lambda.SdkClientException": true,
	"Lambda.TooManyRequestsException": true,
}

func TestEveryPlaceholderHasAHandler(t *testing.T) {
	ph := Placeholders(ActionLifecycle)
	if len(ph) == 0 {
		t.Fatal("no placeholders found")
	}
	for _, p := range ph {
		if _, ok := Functions[p]; !ok {
			t.Errorf("placeholder ${%s} has no function", p)
		}
	}
	for p := range Functions {
		if !strings.Contains(string(ActionLifecycle), "${"+p+"}") {
			t.Errorf("function placeholder %s is not used by the definition", p)
		}
	}
}

func TestEveryErrorNameExistsInTheCode(t *testing.T) {
	known := map[string]bool{}
	for _, n := range actionflow.StepErrorNames {
		known[n] = true
	}
	for name, s := range load(t) {
		for _, raw := range append(append([]json.RawMessage{}, s.Retry...), s.Catch...) {
			var r rule
			if err := json.Unmarshal(raw, &r); err != nil {
				t.Fatal(err)
			}
			for _, e := range r.ErrorEquals {
				if !known[e] && !awsNames[e] {
					t.Errorf("state %s routes on %q, which no handler produces", name, e)
				}
			}
		}
	}
}

// Dispatch may be retried only on errors proven to occur before start
// evidence (NotStartedError) or on the Lambda service's own failures, which
// a re-invoked dispatch turns into "unknown" instead of a second execution.
// DispatchHost also retries a missed heartbeat, for the same reason: the
// re-invoked publish answers a started task unknown at once, and only an
// unclaimed one is published again.
func TestDispatchRetriesOnlyWhatIsSafe(t *testing.T) {
	safe := map[string]bool{"NotStartedError": true, "Lambda.ServiceException": true, "Lambda.AWSLambdaException": true,
		"Lambda.SdkClientException": true, "Lambda.TooManyRequestsException": true}
	states := load(t)
	for _, name := range []string{"DispatchSync", "DispatchHost"} {
		s, ok := states[name]
		if !ok {
			t.Fatalf("no %s state", name)
		}
		for _, raw := range s.Retry {
			var r rule
			json.Unmarshal(raw, &r)
			for _, e := range r.ErrorEquals {
				if !safe[e] && (name != "DispatchHost" || e != "States.HeartbeatTimeout") {
					t.Errorf("%s retries on %s, which may follow a started operation", name, e)
				}
			}
		}
	}
}

// A host worker heartbeats every actionflow.HostHeartbeatEvery; the
// DispatchHost wait must tolerate one lost heartbeat (at least three
// periods), notice a dead worker in minutes (well under its one-hour
// timeout), and neither retry States.Timeout (the hour is over) nor leave a
// missed heartbeat uncaught.
func TestDispatchHostHeartbeat(t *testing.T) {
	var def struct {
		States map[string]struct {
			TimeoutSeconds   int64             `json:"TimeoutSeconds"`
			HeartbeatSeconds int64             `json:"HeartbeatSeconds"`
			Retry            []json.RawMessage `json:"Retry"`
		} `json:"States"`
	}
	if err := json.Unmarshal(ActionLifecycle, &def); err != nil {
		t.Fatal(err)
	}
	st := def.States["DispatchHost"]
	every := int64(actionflow.HostHeartbeatEvery.Seconds())
	if st.HeartbeatSeconds < 3*every || st.HeartbeatSeconds > 300 || st.HeartbeatSeconds >= st.TimeoutSeconds {
		t.Fatalf("DispatchHost HeartbeatSeconds %d: want 3x the worker's %d s heartbeat, at most 5 minutes, under TimeoutSeconds %d",
			st.HeartbeatSeconds, every, st.TimeoutSeconds)
	}
	retried := false
	for _, raw := range st.Retry {
		var r struct {
			ErrorEquals []string `json:"ErrorEquals"`
			MaxAttempts int64    `json:"MaxAttempts"`
		}
		json.Unmarshal(raw, &r)
		for _, e := range r.ErrorEquals {
			switch e {
			case "States.HeartbeatTimeout":
				retried = true
				if total := r.MaxAttempts * st.HeartbeatSeconds; total < st.TimeoutSeconds/2 || total > 2*st.TimeoutSeconds {
					t.Errorf("%d heartbeat retries of %d s wait %d s for a worker; want about TimeoutSeconds (%d)", r.MaxAttempts, st.HeartbeatSeconds, total, st.TimeoutSeconds)
				}
			case "States.Timeout", "States.ALL":
				t.Errorf("DispatchHost retries %s", e)
			}
		}
	}
	if !retried {
		t.Error("DispatchHost does not retry States.HeartbeatTimeout: an unclaimed task would end not_started after one minute without a worker")
	}
}

// Every Task catches States.ALL, so every failure reaches a recorded
// outcome (or, for record/project themselves, a Fail the sweeper repairs).
func TestEveryTaskCatchesEverything(t *testing.T) {
	for name, s := range load(t) {
		if s.Type != "Task" {
			continue
		}
		found := false
		for _, raw := range s.Catch {
			var r rule
			json.Unmarshal(raw, &r)
			for _, e := range r.ErrorEquals {
				found = found || e == "States.ALL"
			}
		}
		if !found {
			t.Errorf("task %s does not catch States.ALL", name)
		}
	}
}
