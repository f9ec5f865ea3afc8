package storetest

import (
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/store"
)

func testLease(t *testing.T, open Opener) {
	s := open(t)
	ctx := t.Context()
	p := ns(t)
	exec := p + "e1"
	const ttl = 30 * time.Second
	acquire := func(attempt string, now time.Time) (store.Lease, error) {
		return s.AcquireLease(ctx, store.LeaseRequest{Resource: exec, AttemptID: attempt, TTL: ttl, Now: now})
	}

	t.Run("get lease of an execution never leased is ErrNotFound", func(t *testing.T) {
		_, err := s.GetLease(ctx, exec)
		is(t, err, store.ErrNotFound, "get lease")
	})

	// One execution, one story: each step depends on the ones before it.
	var a1, a2, a3 store.Lease
	steps := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"acquire when absent gives fence 1", func(t *testing.T) {
			var err error
			a1, err = acquire("att-1", t0)
			mustNil(t, err, "acquire")
			want := store.Lease{Resource: exec, AttemptID: "att-1", Fence: 1, ExpiresAt: t0.Add(ttl)}
			sameLease(t, a1, want)
			got, err := s.GetLease(ctx, exec)
			mustNil(t, err, "get lease")
			sameLease(t, got, want)
		}},
		{"another attempt while held is LeaseHeldError naming the holder", func(t *testing.T) {
			_, err := acquire("att-2", t0.Add(ttl-time.Microsecond))
			lh := as[*store.LeaseHeldError](t, err, "acquire held lease")
			is(t, err, store.ErrConflict, "acquire held lease")
			if lh.Resource != exec || lh.Holder != "att-1" || !lh.ExpiresAt.Equal(t0.Add(ttl)) {
				t.Fatalf("got %+v, want holder att-1 until %v", lh, t0.Add(ttl))
			}
		}},
		{"renew by the holder extends", func(t *testing.T) {
			got, err := s.RenewLease(ctx, a1, ttl, t0.Add(10*time.Second))
			mustNil(t, err, "renew")
			a1.ExpiresAt = t0.Add(10*time.Second + ttl)
			sameLease(t, got, a1)
			_, err = acquire("att-2", t0.Add(ttl)) // the old expiry has passed, the renewed one has not
			as[*store.LeaseHeldError](t, err, "acquire after renew")
		}},
		{"re-acquire by the same attempt raises the fence", func(t *testing.T) {
			got, err := acquire("att-1", t0.Add(11*time.Second))
			mustNil(t, err, "re-acquire")
			sameLease(t, got, store.Lease{Resource: exec, AttemptID: "att-1", Fence: 2, ExpiresAt: t0.Add(11*time.Second + ttl)})
			a1 = got
		}},
		{"renew with the superseded fence is LeaseLostError", func(t *testing.T) {
			stale := a1
			stale.Fence = 1
			_, err := s.RenewLease(ctx, stale, ttl, t0.Add(12*time.Second))
			ll := as[*store.LeaseLostError](t, err, "renew stale fence")
			is(t, err, store.ErrConflict, "renew stale fence")
			if ll.Resource != exec || ll.AttemptID != "att-1" || ll.Fence != 1 {
				t.Fatalf("got %+v", ll)
			}
		}},
		{"renew after expiry is LeaseLostError", func(t *testing.T) {
			_, err := s.RenewLease(ctx, a1, ttl, a1.ExpiresAt)
			as[*store.LeaseLostError](t, err, "renew at expiry")
		}},
		{"takeover at the expiry instant raises the fence", func(t *testing.T) {
			var err error
			a2, err = acquire("att-2", a1.ExpiresAt)
			mustNil(t, err, "takeover")
			sameLease(t, a2, store.Lease{Resource: exec, AttemptID: "att-2", Fence: 3, ExpiresAt: a1.ExpiresAt.Add(ttl)})
		}},
		{"the replaced owner cannot renew or release", func(t *testing.T) {
			_, err := s.RenewLease(ctx, a1, ttl, a1.ExpiresAt)
			as[*store.LeaseLostError](t, err, "renew after takeover")
			err = s.ReleaseLease(ctx, a1)
			as[*store.LeaseLostError](t, err, "release after takeover")
			got, err := s.GetLease(ctx, exec)
			mustNil(t, err, "get lease")
			sameLease(t, got, a2)
		}},
		{"release keeps the fence and frees the lease at once", func(t *testing.T) {
			mustNil(t, s.ReleaseLease(ctx, a2), "release")
			mustNil(t, s.ReleaseLease(ctx, a2), "release again")
			got, err := s.GetLease(ctx, exec)
			mustNil(t, err, "get lease")
			if got.AttemptID != "att-2" || got.Fence != 3 || !got.ExpiresAt.IsZero() {
				t.Fatalf("released lease %+v: want att-2, fence 3, zero ExpiresAt", got)
			}
			// A released lease is free even at a time before its old expiry.
			a3, err = acquire("att-3", a2.ExpiresAt.Add(-time.Second))
			mustNil(t, err, "acquire after release")
			if a3.Fence != 4 {
				t.Fatalf("fence after release %d, want 4 (never reused)", a3.Fence)
			}
		}},
		{"renew of a released lease is LeaseLostError", func(t *testing.T) {
			_, err := s.RenewLease(ctx, a2, ttl, a2.ExpiresAt.Add(-time.Second))
			as[*store.LeaseLostError](t, err, "renew released")
		}},
		{"renew or release of a lease never taken is LeaseLostError", func(t *testing.T) {
			ghost := store.Lease{Resource: p + "ghost", AttemptID: "att-1", Fence: 1, ExpiresAt: t0.Add(ttl)}
			_, err := s.RenewLease(ctx, ghost, ttl, t0)
			as[*store.LeaseLostError](t, err, "renew missing")
			as[*store.LeaseLostError](t, s.ReleaseLease(ctx, ghost), "release missing")
		}},
		{"the lease is an item of the execution partition", func(t *testing.T) {
			it, err := s.Get(ctx, store.LeaseKey(exec))
			mustNil(t, err, "get lease item")
			if it.Fence != a3.Fence {
				t.Fatalf("lease item fence %d, want %d", it.Fence, a3.Fence)
			}
		}},
	}
	for _, st := range steps {
		if !t.Run(st.name, st.run) {
			return // later steps depend on this one
		}
	}
}

// testLeaseTimePrecision: both adapters keep lease times to the
// microsecond (store.UnixMicro), so what GetLease returns is what
// AcquireLease returned.
func testLeaseTimePrecision(t *testing.T, open Opener) {
	s := open(t)
	ctx := t.Context()
	exec := ns(t) + "e-precise"
	now := t0.Add(123456789 * time.Nanosecond)
	l, err := s.AcquireLease(ctx, store.LeaseRequest{Resource: exec, AttemptID: "a", TTL: 1500 * time.Millisecond, Now: now})
	mustNil(t, err, "acquire")
	want := now.Add(1500 * time.Millisecond).Truncate(time.Microsecond)
	if !l.ExpiresAt.Equal(want) {
		t.Fatalf("ExpiresAt %v, want %v", l.ExpiresAt, want)
	}
	got, err := s.GetLease(ctx, exec)
	mustNil(t, err, "get lease")
	sameLease(t, got, l)
	// Held until the last microsecond, free at it.
	_, err = s.AcquireLease(ctx, store.LeaseRequest{Resource: exec, AttemptID: "b", TTL: time.Second, Now: want.Add(-time.Microsecond)})
	as[*store.LeaseHeldError](t, err, "acquire a microsecond before expiry")
	_, err = s.AcquireLease(ctx, store.LeaseRequest{Resource: exec, AttemptID: "b", TTL: time.Second, Now: want})
	mustNil(t, err, "acquire at expiry")
}

func sameLease(t *testing.T, got, want store.Lease) {
	t.Helper()
	if got.Resource != want.Resource || got.AttemptID != want.AttemptID || got.Fence != want.Fence || !got.ExpiresAt.Equal(want.ExpiresAt) {
		t.Fatalf("lease %+v, want %+v", got, want)
	}
}
