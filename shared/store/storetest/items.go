package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/store"
)

func testItems(t *testing.T, open Opener) {
	s := open(t)
	ctx := t.Context()
	p := ns(t)

	t.Run("get missing is ErrNotFound", func(t *testing.T) {
		_, err := s.Get(ctx, store.Key{PK: p + "EXEC#none", SK: "META"})
		is(t, err, store.ErrNotFound, "get missing")
		if errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrUnavailable) {
			t.Fatalf("get missing: %v also matches conflict/unavailable", err)
		}
	})

	full := store.Item{
		PK: p + "EXEC#e1", SK: "RECEIPT#a1", Version: 1, Fence: 3,
		GSI1PK: p + "SESSION#s1", GSI1SK: "RECEIPT#2031-03-04T05:06:07Z#a1",
		GSI2PK: p + "OPEN#RECEIPT", GSI2SK: "2031-03-04T05:06:07Z#a1",
		ExpiresAt: t0.Add(90*24*time.Hour + 500*time.Millisecond),
		Body:      []byte(`{"outcome":"succeeded","digest":"abc"}`),
	}
	t.Run("put once then get round-trips every field", func(t *testing.T) {
		mustNil(t, s.PutOnce(ctx, full), "put once")
		got, err := s.Get(ctx, full.Key())
		mustNil(t, err, "get")
		sameItem(t, got, full, "get after put once")
		if !got.ExpiresAt.Equal(full.ExpiresAt.Truncate(time.Second)) || got.ExpiresAt.Nanosecond() != 0 {
			t.Fatalf("ExpiresAt %v: want whole seconds %v", got.ExpiresAt, full.ExpiresAt.Truncate(time.Second))
		}
	})

	t.Run("put once of an existing key is ConflictError with the stored item", func(t *testing.T) {
		again := full
		again.Body = []byte(`{"outcome":"failed","digest":"other"}`)
		again.Version = 7
		err := s.PutOnce(ctx, again)
		ce := as[*store.ConflictError](t, err, "second put once")
		is(t, err, store.ErrConflict, "second put once")
		if ce.Key != full.Key() {
			t.Fatalf("ConflictError.Key %s, want %s", ce.Key, full.Key())
		}
		sameItem(t, ce.Existing, full, "ConflictError.Existing")
		got, err := s.Get(ctx, full.Key())
		mustNil(t, err, "get")
		sameItem(t, got, full, "stored item after the losing put once")
	})

	t.Run("minimal item has no index keys, no expiry, no body", func(t *testing.T) {
		bare := store.Item{PK: p + "EXEC#e1", SK: "CKPT", Version: 1}
		mustNil(t, s.PutOnce(ctx, bare), "put once")
		got, err := s.Get(ctx, bare.Key())
		mustNil(t, err, "get")
		sameItem(t, got, bare, "minimal item")
		if !got.ExpiresAt.IsZero() || len(got.Body) != 0 {
			t.Fatalf("minimal item: ExpiresAt %v body %q, want zero", got.ExpiresAt, got.Body)
		}
	})
}

func testCompareAndSwap(t *testing.T, open Opener) {
	s := open(t)
	ctx := t.Context()
	p := ns(t)
	key := store.Key{PK: p + "EXEC#e1", SK: "CKPT"}
	item := func(version int64, body string) store.Item {
		return store.Item{PK: key.PK, SK: key.SK, Version: version, Body: []byte(body)}
	}

	// Steps run in order against one item; each names the stored state it expects after.
	steps := []struct {
		name        string
		write       store.Item
		expected    int64
		wantErr     error // nil, or a typed error to match with errors.As
		wantActual  int64 // for *VersionConflictError
		wantVersion int64 // stored version after the step (0: absent)
		wantBody    string
	}{
		{name: "update of a missing item is VersionConflict with Actual 0", write: item(2, "x"), expected: 1,
			wantErr: &store.VersionConflictError{}, wantActual: 0},
		{name: "expected 0 creates", write: item(1, "v1"), expected: 0, wantVersion: 1, wantBody: "v1"},
		{name: "expected 0 on an existing item is VersionConflict", write: item(1, "again"), expected: 0,
			wantErr: &store.VersionConflictError{}, wantActual: 1, wantVersion: 1, wantBody: "v1"},
		{name: "matching version replaces", write: item(2, "v2"), expected: 1, wantVersion: 2, wantBody: "v2"},
		{name: "stale version is VersionConflict with Expected and Actual", write: item(2, "stale"), expected: 1,
			wantErr: &store.VersionConflictError{}, wantActual: 2, wantVersion: 2, wantBody: "v2"},
		{name: "version may jump", write: item(10, "v10"), expected: 2, wantVersion: 10, wantBody: "v10"},
		{name: "version not above expected is ErrInvalid", write: item(10, "same"), expected: 10,
			wantErr: store.ErrInvalid, wantVersion: 10, wantBody: "v10"},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			err := s.CompareAndSwap(ctx, st.write, st.expected, 0)
			switch st.wantErr.(type) {
			case nil:
				mustNil(t, err, "compare-and-swap")
			case *store.VersionConflictError:
				vc := as[*store.VersionConflictError](t, err, "compare-and-swap")
				is(t, err, store.ErrConflict, "compare-and-swap")
				if vc.Key != key || vc.Expected != st.expected || vc.Actual != st.wantActual {
					t.Fatalf("got %+v, want key %s expected %d actual %d", vc, key, st.expected, st.wantActual)
				}
			default:
				is(t, err, st.wantErr, "compare-and-swap")
			}
			got, err := s.Get(ctx, key)
			if st.wantVersion == 0 {
				is(t, err, store.ErrNotFound, "get after a failed create")
				return
			}
			mustNil(t, err, "get")
			if got.Version != st.wantVersion || string(got.Body) != st.wantBody {
				t.Fatalf("stored version %d body %q, want %d %q", got.Version, got.Body, st.wantVersion, st.wantBody)
			}
		})
	}

	t.Run("replace clears what the new item does not set", func(t *testing.T) {
		k := store.Key{PK: p + "EXEC#e2", SK: "ACTION#a1"}
		first := store.Item{PK: k.PK, SK: k.SK, Version: 1, GSI1PK: p + "SESSION#s", GSI1SK: "A#1",
			GSI2PK: p + "OPEN#ACTION", GSI2SK: "1", ExpiresAt: t0, Body: []byte("1")}
		mustNil(t, s.CompareAndSwap(ctx, first, 0, 0), "create")
		second := store.Item{PK: k.PK, SK: k.SK, Version: 2, Body: []byte("2")}
		mustNil(t, s.CompareAndSwap(ctx, second, 1, 0), "replace")
		got, err := s.Get(ctx, k)
		mustNil(t, err, "get")
		sameItem(t, got, second, "replaced item")
	})
}

func testFencedCompareAndSwap(t *testing.T, open Opener) {
	s := open(t)
	ctx := t.Context()
	p := ns(t)
	key := store.Key{PK: p + "EXEC#e1", SK: "CKPT"}
	write := func(version int64, body string) store.Item {
		// Fence in the item is ignored for owner writes: the fence argument wins.
		return store.Item{PK: key.PK, SK: key.SK, Version: version, Fence: 999, Body: []byte(body)}
	}
	steps := []struct {
		name      string
		item      store.Item
		expected  int64
		fence     int64
		wantFence bool // want *FenceError
		wantVC    bool // want *VersionConflictError
		stored    int64
		storedVer int64
	}{
		{name: "owner create records the fence", item: write(1, "a"), expected: 0, fence: 5, stored: 5, storedVer: 1},
		{name: "same fence writes", item: write(2, "b"), expected: 1, fence: 5, stored: 5, storedVer: 2},
		{name: "older fence is FenceError", item: write(3, "old owner"), expected: 2, fence: 4, wantFence: true, stored: 5, storedVer: 2},
		{name: "older fence with a stale version is still FenceError", item: write(2, "old owner"), expected: 1, fence: 4, wantFence: true, stored: 5, storedVer: 2},
		{name: "older fence creating over an existing item is FenceError", item: write(1, "x"), expected: 0, fence: 4, wantFence: true, stored: 5, storedVer: 2},
		{name: "newer fence takes over and is recorded", item: write(3, "c"), expected: 2, fence: 7, stored: 7, storedVer: 3},
		{name: "newer fence with a stale version is VersionConflict", item: write(4, "d"), expected: 2, fence: 8, wantVC: true, stored: 7, storedVer: 3},
		{name: "the replaced owner is now fenced out", item: write(4, "e"), expected: 3, fence: 5, wantFence: true, stored: 7, storedVer: 3},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			err := s.CompareAndSwap(ctx, st.item, st.expected, st.fence)
			switch {
			case st.wantFence:
				fe := as[*store.FenceError](t, err, "fenced write")
				is(t, err, store.ErrConflict, "fenced write")
				if fe.Key != key || fe.Fence != st.fence || fe.Stored != st.stored {
					t.Fatalf("got %+v, want fence %d stored %d", fe, st.fence, st.stored)
				}
			case st.wantVC:
				vc := as[*store.VersionConflictError](t, err, "fenced write")
				if vc.Expected != st.expected || vc.Actual != st.storedVer {
					t.Fatalf("got %+v, want expected %d actual %d", vc, st.expected, st.storedVer)
				}
			default:
				mustNil(t, err, "fenced write")
			}
			got, err := s.Get(ctx, key)
			mustNil(t, err, "get")
			if got.Fence != st.stored || got.Version != st.storedVer {
				t.Fatalf("stored fence %d version %d, want %d %d", got.Fence, got.Version, st.stored, st.storedVer)
			}
		})
	}

	t.Run("fence 0 is not an owner write and keeps the item's Fence", func(t *testing.T) {
		k := store.Key{PK: p + "EXEC#e2", SK: "CKPT"}
		mustNil(t, s.CompareAndSwap(ctx, store.Item{PK: k.PK, SK: k.SK, Version: 1, Fence: 9}, 0, 0), "create")
		mustNil(t, s.CompareAndSwap(ctx, store.Item{PK: k.PK, SK: k.SK, Version: 2, Fence: 3}, 1, 0), "unfenced write over a higher fence")
		got, err := s.Get(ctx, k)
		mustNil(t, err, "get")
		if got.Fence != 3 || got.Version != 2 {
			t.Fatalf("stored fence %d version %d, want 3 2", got.Fence, got.Version)
		}
	})
}

func testPutOnceIfVersion(t *testing.T, open Opener) {
	s := open(t)
	ctx := t.Context()
	p := ns(t)
	meta := store.Item{PK: p + "EXEC#e1", SK: "META", Version: 4, Body: []byte(`{"status":"running"}`)}
	cmd := func(id, body string) store.Item {
		return store.Item{PK: meta.PK, SK: "CMD#" + id, Version: 1, Body: []byte(body)}
	}

	t.Run("guard missing is ErrNotFound and VersionConflict with Actual 0", func(t *testing.T) {
		c := cmd("c0", "pause")
		err := s.PutOnceIfVersion(ctx, c, meta.Key(), 4)
		is(t, err, store.ErrNotFound, "missing guard")
		is(t, err, store.ErrConflict, "missing guard")
		vc := as[*store.VersionConflictError](t, err, "missing guard")
		if vc.Key != meta.Key() || vc.Expected != 4 || vc.Actual != 0 {
			t.Fatalf("got %+v, want key %s expected 4 actual 0", vc, meta.Key())
		}
		_, err = s.Get(ctx, c.Key())
		is(t, err, store.ErrNotFound, "command after a failed guarded put")
	})

	mustNil(t, s.PutOnce(ctx, meta), "put guard")

	cases := []struct {
		name     string
		item     store.Item
		expected int64
		want     string // "", "version", "conflict"
		actual   int64
	}{
		{name: "stale guard version is VersionConflict and writes nothing", item: cmd("c1", "pause"), expected: 3, want: "version", actual: 4},
		{name: "matching guard version writes", item: cmd("c1", "pause"), expected: 4},
		{name: "existing item is ConflictError with the stored item", item: cmd("c1", "cancel"), expected: 4, want: "conflict"},
		{name: "existing item wins over a stale guard", item: cmd("c1", "cancel"), expected: 1, want: "conflict"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before, beforeErr := s.Get(ctx, tc.item.Key())
			err := s.PutOnceIfVersion(ctx, tc.item, meta.Key(), tc.expected)
			switch tc.want {
			case "":
				mustNil(t, err, "guarded put")
				got, err := s.Get(ctx, tc.item.Key())
				mustNil(t, err, "get")
				sameItem(t, got, tc.item, "written item")
				return
			case "version":
				vc := as[*store.VersionConflictError](t, err, "guarded put")
				if vc.Key != meta.Key() || vc.Expected != tc.expected || vc.Actual != tc.actual {
					t.Fatalf("got %+v, want expected %d actual %d", vc, tc.expected, tc.actual)
				}
				if errors.Is(err, store.ErrNotFound) {
					t.Fatalf("a present guard must not match ErrNotFound: %v", err)
				}
			case "conflict":
				ce := as[*store.ConflictError](t, err, "guarded put")
				sameItem(t, ce.Existing, before, "ConflictError.Existing")
			}
			// Nothing written: the item is as before, the guard unchanged.
			after, afterErr := s.Get(ctx, tc.item.Key())
			if (beforeErr == nil) != (afterErr == nil) {
				t.Fatalf("item presence changed by a failed write: before %v, after %v", beforeErr, afterErr)
			}
			if beforeErr == nil {
				sameItem(t, after, before, "item after a failed guarded put")
			}
			g, err := s.Get(ctx, meta.Key())
			mustNil(t, err, "get guard")
			sameItem(t, g, meta, "guard after a guarded put")
		})
	}
}

func testInvalid(t *testing.T, open Opener) {
	s := open(t)
	ctx := t.Context()
	p := ns(t)
	pk := p + "EXEC#e1"
	cases := []struct {
		name string
		call func() error
	}{
		{"put once with an empty sort key", func() error { return s.PutOnce(ctx, store.Item{PK: pk, Version: 1}) }},
		{"put once on the lease key", func() error { return s.PutOnce(ctx, store.Item{PK: pk, SK: store.LeaseSK, Version: 1}) }},
		{"put once on a log key", func() error {
			return s.PutOnce(ctx, store.Item{PK: pk, SK: store.LogSK(1), Version: 1})
		}},
		{"compare-and-swap on a counter key", func() error {
			return s.CompareAndSwap(ctx, store.Item{PK: pk, SK: store.CounterSKPrefix + "e", Version: 1}, 0, 0)
		}},
		{"index key without its sort key", func() error {
			return s.PutOnce(ctx, store.Item{PK: pk, SK: "X", Version: 1, GSI2PK: p + "OPEN#X"})
		}},
		{"body over the size limit", func() error {
			return s.PutOnce(ctx, store.Item{PK: pk, SK: "BIG", Version: 1, Body: make([]byte, store.MaxBodyBytes+1)})
		}},
		{"guard equal to the item", func() error {
			return s.PutOnceIfVersion(ctx, store.Item{PK: pk, SK: "A", Version: 1}, store.Key{PK: pk, SK: "A"}, 1)
		}},
		{"unknown index", func() error { _, err := s.QueryIndex(ctx, "gsi9", pk, store.QueryOptions{}); return err }},
		{"unknown counter op", func() error {
			_, _, err := s.ApplyCounter(ctx, store.CounterKey{SessionID: p + "s", Epoch: "1"}, "a1", "double")
			return err
		}},
		{"lease without a TTL", func() error {
			_, err := s.AcquireLease(ctx, store.LeaseRequest{Resource: p + "e", AttemptID: "a", Now: t0})
			return err
		}},
		{"append to no stream", func() error { _, err := s.Append(ctx, "", []byte("x")); return err }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			is(t, tc.call(), store.ErrInvalid, tc.name)
		})
	}
	t.Run("refused writes wrote nothing", func(t *testing.T) {
		page, err := s.Query(ctx, pk, store.QueryOptions{})
		mustNil(t, err, "query")
		if len(page.Items) != 0 {
			t.Fatalf("refused writes left items: %v", keysOf(page.Items))
		}
	})
}
