package recoverfn

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/recovery"
)

type fakeSweeper struct {
	swept  int
	action ids.ActionID
	err    error
}

func (f *fakeSweeper) Sweep(ctx context.Context) (recovery.Report, error) {
	f.swept++
	return recovery.Report{Actions: []recovery.ActionReport{{Did: recovery.Left}, {Did: recovery.Sealed}}}, f.err
}

func (f *fakeSweeper) SweepAction(ctx context.Context, id ids.ActionID) (recovery.ActionReport, error) {
	f.action = id
	return recovery.ActionReport{ActionID: id, Did: recovery.Rebuilt}, f.err
}

func sample(t *testing.T, name string) events.CloudWatchEvent {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "events", "eventbridge", name))
	if err != nil {
		t.Fatal(err)
	}
	var ev events.CloudWatchEvent
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatal(err)
	}
	return ev
}

func TestHandlerRoutesEachTrigger(t *testing.T) {
	failed := sample(t, "sfn-status-change-failed.json")
	succeeded := failed
	succeeded.Detail = json.RawMessage(`{"name":"act_1","status":"SUCCEEDED"}`)
	badName := failed
	badName.Detail = json.RawMessage(`{"name":"a b#c","status":"ABORTED"}`)
	unknown := failed
	unknown.DetailType = "Object Created"
	cases := []struct {
		name       string
		ev         events.CloudWatchEvent
		sweepErr   error
		wantSwept  int
		wantAction ids.ActionID
		wantErr    bool
		want       Response
	}{
		{"schedule sweeps everything", sample(t, "schedule-tick.json"), nil, 1, "", false,
			Response{Trigger: "schedule", Open: 2, Changed: 1}},
		{"a failed machine sweeps its action", failed, nil, 0, "act_01jd9x3q8m2k7w5t4r6y8p0n1b", false,
			Response{Trigger: "status_change", ActionID: "act_01jd9x3q8m2k7w5t4r6y8p0n1b", Open: 1, Changed: 1}},
		{"a succeeded machine is skipped", succeeded, nil, 0, "", false,
			Response{Trigger: "status_change", ActionID: "act_1", Skipped: "status SUCCEEDED"}},
		{"an invalid execution name is an error", badName, nil, 0, "", true,
			Response{Trigger: "status_change", ActionID: "a b#c"}},
		{"a sweep failure is returned", sample(t, "schedule-tick.json"), errors.New("store down"), 1, "", true,
			Response{Trigger: "schedule", Open: 2, Changed: 1}},
		{"an unexpected event is an error", unknown, nil, 0, "", true, Response{Trigger: "Object Created"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sw := &fakeSweeper{err: tc.sweepErr}
			got, err := Handler{Sweeper: sw}.Handle(context.Background(), tc.ev)
			if (err != nil) != tc.wantErr || got != tc.want || sw.swept != tc.wantSwept || sw.action != tc.wantAction {
				t.Fatalf("got %+v, %v (swept %d, action %q)", got, err, sw.swept, sw.action)
			}
		})
	}
}

type fakeLost struct{ cutoffs []time.Time }

func (f *fakeLost) Sweep(_ context.Context, cutoff time.Time) (int, error) {
	f.cutoffs = append(f.cutoffs, cutoff)
	return 1, nil
}

// TestScheduleClosesLostModelRequests: each scheduled tick (and only it)
// closes the model requests open for longer than a function can run.
func TestScheduleClosesLostModelRequests(t *testing.T) {
	cases := []struct {
		name  string
		ev    events.CloudWatchEvent
		calls int
	}{
		{"the schedule", sample(t, "schedule-tick.json"), 1},
		{"a failed machine", sample(t, "sfn-status-change-failed.json"), 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lost := &fakeLost{}
			before := time.Now()
			if _, err := (Handler{Sweeper: &fakeSweeper{}, Models: lost}).Handle(context.Background(), tc.ev); err != nil {
				t.Fatal(err)
			}
			if len(lost.cutoffs) != tc.calls {
				t.Fatalf("%d model request sweeps, want %d", len(lost.cutoffs), tc.calls)
			}
			for _, c := range lost.cutoffs {
				if age := before.Sub(c); age < maxFunctionRun-time.Second || age > maxFunctionRun+time.Minute {
					t.Fatalf("cutoff %s before the tick, want %s", age, maxFunctionRun)
				}
			}
		})
	}
}
