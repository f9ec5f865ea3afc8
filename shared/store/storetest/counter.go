package storetest

import (
	"testing"

	"github.com/openprogram/lifecycle/shared/store"
)

func testCounter(t *testing.T, open Opener) {
	s := open(t)
	ctx := t.Context()
	p := ns(t)
	key := store.CounterKey{SessionID: p + "s1", Epoch: "policy-7"}

	t.Run("a counter never written reads as zero", func(t *testing.T) {
		c, err := s.GetCounter(ctx, key)
		mustNil(t, err, "get counter")
		if c != (store.Counter{}) {
			t.Fatalf("fresh counter %+v, want zero", c)
		}
	})

	// One counter through the sequence the permission fallback produces.
	steps := []struct {
		name        string
		member      string
		op          store.CounterOp
		wantApplied bool
		want        store.Counter
	}{
		{"first block", "a1", store.CounterBlock, true, store.Counter{Consecutive: 1, Total: 1}},
		{"second block", "a2", store.CounterBlock, true, store.Counter{Consecutive: 2, Total: 2}},
		{"the same block again is not counted", "a2", store.CounterBlock, false, store.Counter{Consecutive: 2, Total: 2}},
		{"allow resets the consecutive count only", "a3", store.CounterAllow, true, store.Counter{Consecutive: 0, Total: 2}},
		{"block after allow", "a4", store.CounterBlock, true, store.Counter{Consecutive: 1, Total: 3}},
		{"a replayed allow does not reset again", "a3", store.CounterAllow, false, store.Counter{Consecutive: 1, Total: 3}},
		{"another op for the same action applies", "a4", store.CounterAllow, true, store.Counter{Consecutive: 0, Total: 3}},
		{"block", "a5", store.CounterBlock, true, store.Counter{Consecutive: 1, Total: 4}},
		{"reset_total clears both", "a5", store.CounterResetTotal, true, store.Counter{}},
		{"reset_total again is not applied", "a5", store.CounterResetTotal, false, store.Counter{}},
		{"counting resumes", "a6", store.CounterBlock, true, store.Counter{Consecutive: 1, Total: 1}},
	}
	for _, st := range steps {
		ok := t.Run(st.name, func(t *testing.T) {
			c, applied, err := s.ApplyCounter(ctx, key, st.member, st.op)
			mustNil(t, err, "apply counter")
			if applied != st.wantApplied || c != st.want {
				t.Fatalf("got %+v applied=%v, want %+v applied=%v", c, applied, st.want, st.wantApplied)
			}
			got, err := s.GetCounter(ctx, key)
			mustNil(t, err, "get counter")
			if got != st.want {
				t.Fatalf("stored %+v, want %+v", got, st.want)
			}
		})
		if !ok {
			return
		}
	}

	t.Run("counters of other epochs and sessions are separate", func(t *testing.T) {
		other := store.CounterKey{SessionID: key.SessionID, Epoch: "policy-8"}
		c, applied, err := s.ApplyCounter(ctx, other, "a1", store.CounterBlock)
		mustNil(t, err, "apply counter")
		if !applied || c != (store.Counter{Consecutive: 1, Total: 1}) {
			t.Fatalf("new epoch: %+v applied=%v", c, applied)
		}
		c, err = s.GetCounter(ctx, store.CounterKey{SessionID: p + "s2", Epoch: key.Epoch})
		mustNil(t, err, "get counter")
		if c != (store.Counter{}) {
			t.Fatalf("other session: %+v", c)
		}
	})

	t.Run("the counter is an item of the session partition", func(t *testing.T) {
		_, err := s.Get(ctx, store.CounterItemKey(key))
		mustNil(t, err, "get counter item")
	})
}
