package actionflow_test

import (
	"context"
	"errors"
	"testing"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/actionflow/flowtest"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/store/dynamostore"
	"github.com/openprogram/lifecycle/shared/store/dynamostore/dynamotest"
)

// projectedEvents lists the session's stored action.projected events of one action.
func projectedEvents(t *testing.T, f fixture, a actionflow.Action) []actionflow.Event {
	t.Helper()
	evs, err := f.svc.ReadEvents(context.Background(), a.SessionID, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var out []actionflow.Event
	for _, ev := range evs {
		if ev.Type == "action.projected" && ev.ActionID == a.ActionID {
			out = append(out, ev)
		}
	}
	return out
}

// dispatched runs an allowed action up to its record step.
func dispatched(t *testing.T, f fixture) (actionflow.Action, actionflow.StepInput) {
	t.Helper()
	ctx := context.Background()
	a := f.submit(t, "noop", `{}`)
	si := in(a)
	if _, err := f.svc.Authorize(ctx, si); err != nil {
		t.Fatal(err)
	}
	si.Mode = "sync"
	res, err := f.svc.Dispatch(ctx, si)
	if err != nil {
		t.Fatal(err)
	}
	si.Mode, si.Result = "", &res
	return a, si
}

// The record step folds the receipt, projects the action and appends its
// action.projected event in one step, then publishes that event; its
// output carries the projected states and the event's position.
func TestRecordProjectsAndPublishes(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name    string
		tool    string
		outcome lifecycle.Outcome
	}{
		{"allowed and dispatched", "noop", lifecycle.OutcomeSucceeded},
		{"denied", "forbidden", lifecycle.OutcomeNotStarted},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			bus := &flowtest.Bus{}
			f := newFixture(t, func(c *actionflow.Config) { c.Publisher = bus })
			a := f.submit(t, tc.tool, `{}`)
			si := in(a)
			d, err := f.svc.Authorize(ctx, si)
			if err != nil {
				t.Fatal(err)
			}
			if d.Permission == lifecycle.PermissionAllow {
				si.Mode = "sync"
				res, err := f.svc.Dispatch(ctx, si)
				if err != nil {
					t.Fatal(err)
				}
				si.Mode, si.Result = "", &res
			}
			out, err := f.svc.Record(ctx, si)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := f.svc.GetAction(ctx, a.ActionID)
			if got.States.Outcome != tc.outcome || got.States.Delivery != lifecycle.DeliveryProjected || !got.States.Terminal() {
				t.Fatalf("states %+v, want %s projected", got.States, tc.outcome)
			}
			if out.States != got.States || out.Delivery != lifecycle.DeliveryProjected || out.Outcome != tc.outcome {
				t.Fatalf("output %+v, stored %+v", out, got.States)
			}
			evs := projectedEvents(t, f, a)
			if len(evs) != 1 || evs[0].Seq != out.Seq {
				t.Fatalf("stored action.projected %+v, output seq %d", evs, out.Seq)
			}
			pub := bus.Published("action.projected")
			if len(pub) != 1 || pub[0].Seq != out.Seq || string(pub[0].Data) != string(evs[0].Data) {
				t.Fatalf("published %+v, stored %+v", pub, evs)
			}
			if ck, _ := f.svc.GetCheckpoint(ctx, a.ExecutionID); ck.Recorded != 1 {
				t.Fatalf("checkpoint folded %d receipts", ck.Recorded)
			}
		})
	}
}

// A failed publish is a TransientError after the transaction stood; the
// step repeated (the state machine's Retry) publishes the stored event
// again, without folding again or appending a second event, and so does
// Project (the recovery sweeper's, or an earlier revision's Project state).
func TestRepeatedRecordPublishesTheStoredEvent(t *testing.T) {
	ctx := context.Background()
	repeats := []struct {
		name string
		step func(f fixture, si actionflow.StepInput) (int64, error)
	}{
		{"record again", func(f fixture, si actionflow.StepInput) (int64, error) {
			out, err := f.svc.Record(ctx, si)
			return out.Seq, err
		}},
		{"recover", func(f fixture, si actionflow.StepInput) (int64, error) {
			out, err := f.svc.Recover(ctx, si)
			return out.Seq, err
		}},
		{"project", func(f fixture, si actionflow.StepInput) (int64, error) {
			out, err := f.svc.Project(ctx, si)
			return out.Seq, err
		}},
	}
	// The stored event is found by a query of the session's log entries:
	// both adapters (DynamoDB on minidyn) must answer it the same way.
	stores := []struct {
		name string
		use  func(t *testing.T, c *actionflow.Config)
	}{
		{"sqlite", func(*testing.T, *actionflow.Config) {}},
		{"dynamodb", func(t *testing.T, c *actionflow.Config) {
			b := dynamotest.New(t)
			c.Store = dynamostore.New(b.Client, b.Table)
		}},
	}
	for _, sc := range stores {
		for _, tc := range repeats {
			t.Run(sc.name+"/"+tc.name, func(t *testing.T) {
				bus := &flowtest.Bus{}
				f := newFixture(t, func(c *actionflow.Config) { c.Publisher = bus; sc.use(t, c) })
				a, si := dispatched(t, f)
				bus.Fail(errors.New("event bus unavailable"))
				_, err := f.svc.Record(ctx, si)
				var te *actionflow.TransientError
				if !errors.As(err, &te) {
					t.Fatalf("record with the bus down: %v, want a TransientError", err)
				}
				if got, _ := f.svc.GetAction(ctx, a.ActionID); got.States.Delivery != lifecycle.DeliveryProjected {
					t.Fatalf("delivery %s: the transaction should stand", got.States.Delivery)
				}
				// Another session's events and this session's later ones sit
				// between the projection and the repeat.
				f.submit(t, "noop", `{}`)
				bus.Fail(nil)
				seq, err := tc.step(f, si)
				if err != nil {
					t.Fatal(err)
				}
				evs := projectedEvents(t, f, a)
				if len(evs) != 1 || evs[0].Seq != seq {
					t.Fatalf("stored action.projected %+v, repeat returned seq %d", evs, seq)
				}
				pub := bus.Published("action.projected")
				if len(pub) != 1 || pub[0].Seq != evs[0].Seq || !pub[0].At.Equal(evs[0].At) {
					t.Fatalf("published %+v, want the stored %+v", pub, evs[0])
				}
				if ck, _ := f.svc.GetCheckpoint(ctx, a.ExecutionID); ck.Recorded != 1 {
					t.Fatalf("checkpoint folded %d receipts", ck.Recorded)
				}
			})
		}
	}
}

// An action an earlier revision's record step left recorded (its Project
// state still to run) is projected by Project, or by the record step run
// again: one transaction, one event, published; never folded twice.
func TestProjectFinishesAnActionLeftRecorded(t *testing.T) {
	ctx := context.Background()
	steps := []struct {
		name string
		step func(f fixture, si actionflow.StepInput) (lifecycle.States, error)
	}{
		{"project", func(f fixture, si actionflow.StepInput) (lifecycle.States, error) {
			out, err := f.svc.Project(ctx, si)
			return out.States, err
		}},
		{"record", func(f fixture, si actionflow.StepInput) (lifecycle.States, error) {
			out, err := f.svc.Record(ctx, si)
			return out.States, err
		}},
	}
	for _, tc := range steps {
		t.Run(tc.name, func(t *testing.T) {
			bus := &flowtest.Bus{}
			faulty := &flowtest.FaultyStore{Rewrite: flowtest.EarlierRecord}
			f := newFixture(t, func(c *actionflow.Config) {
				c.Publisher = bus
				faulty.Store = c.Store
				c.Store = faulty
			})
			a, si := dispatched(t, f)
			bus.Fail(errors.New("the earlier record step published nothing"))
			_, _ = f.svc.Record(ctx, si) // the earlier revision's record step; its Project state then failed
			left, _ := f.svc.GetAction(ctx, a.ActionID)
			if left.States.Delivery != lifecycle.DeliveryRecorded || len(projectedEvents(t, f, a)) != 0 {
				t.Fatalf("set-up: states %+v", left.States)
			}
			faulty.SetRewrite(nil)
			bus.Fail(nil)
			st, err := tc.step(f, si)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := f.svc.GetAction(ctx, a.ActionID)
			if !got.States.Terminal() || st != got.States {
				t.Fatalf("states %+v (step said %+v)", got.States, st)
			}
			evs := projectedEvents(t, f, a)
			if len(evs) != 1 {
				t.Fatalf("stored action.projected %d times", len(evs))
			}
			if pub := bus.Published("action.projected"); len(pub) == 0 || pub[len(pub)-1].Seq != evs[0].Seq {
				t.Fatalf("published %+v", pub)
			}
			if ck, _ := f.svc.GetCheckpoint(ctx, a.ExecutionID); ck.Recorded != 1 {
				t.Fatalf("checkpoint folded %d receipts", ck.Recorded)
			}
		})
	}
}

// The look-back is bounded (200 log entries): a repeat that comes after
// more of the session's events than that appends the event again, as
// every repeat of the project step did, rather than read the whole log.
func TestRepeatPastTheLookBackAppendsTheEventAgain(t *testing.T) {
	ctx := context.Background()
	bus := &flowtest.Bus{}
	f := newFixture(t, func(c *actionflow.Config) { c.Publisher = bus })
	a, si := dispatched(t, f)
	bus.Fail(errors.New("event bus unavailable"))
	if _, err := f.svc.Record(ctx, si); err == nil {
		t.Fatal("record with the bus down succeeded")
	}
	bus.Fail(nil)
	for i := 0; i < 201; i++ { // one action.submitted each
		f.submit(t, "noop", `{}`)
	}
	out, err := f.svc.Record(ctx, si)
	if err != nil {
		t.Fatal(err)
	}
	evs := projectedEvents(t, f, a)
	if len(evs) != 2 || evs[1].Seq != out.Seq || evs[0].Data == nil || string(evs[0].Data) != string(evs[1].Data) {
		t.Fatalf("stored action.projected %+v, repeat seq %d", evs, out.Seq)
	}
	if all, _ := f.svc.ReadEvents(ctx, a.SessionID, 0, 1000); len(all) < 200+3 {
		t.Fatalf("only %d events in the log", len(all))
	}
	if pub := bus.Published("action.projected"); len(pub) != 1 || pub[0].Seq != out.Seq {
		t.Fatalf("published %+v", pub)
	}
}
