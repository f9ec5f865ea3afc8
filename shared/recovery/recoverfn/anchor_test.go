package recoverfn

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/openprogram/lifecycle/shared/audit"
)

type fakeAnchor struct {
	runs int
	err  error
}

func (f *fakeAnchor) Run(context.Context) (audit.Manifest, error) {
	f.runs++
	return audit.Manifest{Heads: []audit.Head{{Stream: "SESSION#s", Seq: 3}}}, f.err
}

// TestScheduleAnchorsDecisionLogHeads: each scheduled tick (and only it)
// anchors the decision log heads, and a failed anchor fails the tick
// (alarms, retry) after the sweep ran.
func TestScheduleAnchorsDecisionLogHeads(t *testing.T) {
	cases := []struct {
		name    string
		ev      events.CloudWatchEvent
		err     error
		runs    int
		wantErr bool
	}{
		{"the schedule", sample(t, "schedule-tick.json"), nil, 1, false},
		{"a failed machine", sample(t, "sfn-status-change-failed.json"), nil, 0, false},
		{"the bucket refuses", sample(t, "schedule-tick.json"), errors.New("access denied"), 1, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := &fakeAnchor{err: tc.err}
			sw := &fakeSweeper{}
			_, err := (Handler{Sweeper: sw, Anchor: a}).Handle(context.Background(), tc.ev)
			if a.runs != tc.runs || (err != nil) != tc.wantErr {
				t.Fatalf("%d anchor runs, err %v; want %d runs, error %v", a.runs, err, tc.runs, tc.wantErr)
			}
			if tc.wantErr && sw.swept != 1 {
				t.Fatal("the sweep did not run before the failed anchor")
			}
		})
	}
}
