package storetest

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/openprogram/lifecycle/shared/store"
)

func testTransact(t *testing.T, open Opener) {
	s := open(t)
	ctx := context.Background()
	p := ns(t)

	t.Run("every part is written and appends are numbered", func(t *testing.T) {
		stream := p + "SESSION#ok"
		_, err := s.Append(ctx, stream, []byte("first"))
		mustNil(t, err, "append")
		base := store.Item{PK: p + "ACTION#ok", SK: "META", Version: 1, GSI1PK: p + "S", GSI1SK: "a", Body: []byte(`{"v":1}`)}
		mustNil(t, s.PutOnce(ctx, base), "put")
		next := base
		next.Version, next.GSI2PK, next.GSI2SK, next.Body = 2, p+"OPEN", "x", []byte(`{"v":2}`)
		fresh := store.Item{PK: p + "ACTION#ok", SK: "IDEMP", Version: 1, Body: []byte(`{}`)}
		seqs, err := s.Transact(ctx, []store.Write{store.CASOf(next, 1, 0), store.PutOnceWrite(fresh), store.AppendOf(stream, []byte("second"))})
		mustNil(t, err, "transact")
		if !slices.Equal(seqs, []int64{0, 0, 2}) {
			t.Fatalf("seqs %v, want [0 0 2]", seqs)
		}
		got, err := s.Get(ctx, next.Key())
		mustNil(t, err, "get")
		sameItem(t, got, next, "CAS part")
		got, err = s.Get(ctx, fresh.Key())
		mustNil(t, err, "get")
		sameItem(t, got, fresh, "put-once part")
		entries, err := s.ReadLog(ctx, stream, 0, 0)
		mustNil(t, err, "read log")
		if len(entries) != 2 || string(entries[1].Body) != "second" || entries[1].Seq != 2 {
			t.Fatalf("log %+v", entries)
		}
	})

	t.Run("a failed condition writes nothing and names its part", func(t *testing.T) {
		stream := p + "SESSION#fail"
		a := store.Item{PK: p + "ACTION#fail", SK: "META", Version: 3, Body: []byte(`{"a":3}`)}
		mustNil(t, s.PutOnce(ctx, a), "put")
		owned := store.Item{PK: p + "ACTION#fail", SK: "OWNED", Version: 1, Body: []byte(`{}`)}
		mustNil(t, s.CompareAndSwap(ctx, owned, 0, 7), "owner write")
		owned.Fence = 7
		fresh := store.Item{PK: p + "ACTION#fail", SK: "NEW", Version: 1, Body: []byte(`{}`)}
		a2 := a
		a2.Version, a2.Body = 4, []byte(`{"a":4}`)

		cases := []struct {
			name   string
			writes []store.Write
			index  int
			check  func(t *testing.T, err error)
		}{
			{"version moved", []store.Write{store.PutOnceWrite(fresh), store.AppendOf(stream, []byte("x")), store.CASOf(a2, 2, 0)}, 2,
				func(t *testing.T, err error) {
					vc := as[*store.VersionConflictError](t, err, "CAS part")
					if vc.Expected != 2 || vc.Actual != 3 {
						t.Fatalf("%+v", vc)
					}
				}},
			{"item exists", []store.Write{store.AppendOf(stream, []byte("x")), store.PutOnceWrite(a), store.PutOnceWrite(fresh)}, 1,
				func(t *testing.T, err error) {
					ce := as[*store.ConflictError](t, err, "put-once part")
					sameItem(t, ce.Existing, a, "existing")
				}},
			{"checked version moved", []store.Write{store.PutOnceWrite(fresh), store.CheckOf(a.Key(), 2)}, 1,
				func(t *testing.T, err error) {
					vc := as[*store.VersionConflictError](t, err, "check part")
					if vc.Expected != 2 || vc.Actual != 3 {
						t.Fatalf("%+v", vc)
					}
				}},
			{"checked item absent", []store.Write{store.CheckOf(store.Key{PK: p + "ACTION#none", SK: "META"}, 1), store.PutOnceWrite(fresh)}, 0,
				func(t *testing.T, err error) {
					vc := as[*store.VersionConflictError](t, err, "check part")
					if vc.Expected != 1 || vc.Actual != 0 {
						t.Fatalf("%+v", vc)
					}
				}},
			{"stale fence", []store.Write{store.PutOnceWrite(fresh), store.CASOf(store.Item{PK: owned.PK, SK: owned.SK, Version: 2, Body: []byte(`{}`)}, 1, 6)}, 1,
				func(t *testing.T, err error) {
					fe := as[*store.FenceError](t, err, "fenced part")
					if fe.Fence != 6 || fe.Stored != 7 {
						t.Fatalf("%+v", fe)
					}
				}},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				_, err := s.Transact(ctx, tc.writes)
				te := as[*store.TransactError](t, err, "transact")
				if te.Index != tc.index {
					t.Fatalf("failed part %d, want %d (%v)", te.Index, tc.index, err)
				}
				is(t, err, store.ErrConflict, "transact")
				tc.check(t, err)
				if _, err := s.Get(ctx, fresh.Key()); !errors.Is(err, store.ErrNotFound) {
					t.Fatalf("the put-once part was written: %v", err)
				}
				got, err := s.Get(ctx, a.Key())
				mustNil(t, err, "get")
				sameItem(t, got, a, "the CAS target")
				got, err = s.Get(ctx, owned.Key())
				mustNil(t, err, "get")
				sameItem(t, got, owned, "the fenced item")
				entries, err := s.ReadLog(ctx, stream, 0, 0)
				mustNil(t, err, "read log")
				if len(entries) != 0 {
					t.Fatalf("the append part was written: %+v", entries)
				}
			})
		}
		// The numbers the undone appends took are free again.
		seq, err := s.Append(ctx, stream, []byte("after"))
		mustNil(t, err, "append")
		if seq != 1 {
			t.Fatalf("append after undone transactions got seq %d, want 1", seq)
		}
	})

	t.Run("a check part holds at the item's version and writes nothing", func(t *testing.T) {
		guard := store.Item{PK: p + "EXEC#chk", SK: "META", Version: 4, Body: []byte(`{"g":4}`)}
		mustNil(t, s.PutOnce(ctx, guard), "put")
		child := store.Item{PK: p + "EXEC#chk", SK: "CHILD#c1", Version: 1, Body: []byte(`{}`)}
		_, err := s.Transact(ctx, []store.Write{store.PutOnceWrite(child), store.CheckOf(guard.Key(), 4)})
		mustNil(t, err, "transact")
		got, err := s.Get(ctx, guard.Key())
		mustNil(t, err, "get")
		sameItem(t, got, guard, "the checked item")
		got, err = s.Get(ctx, child.Key())
		mustNil(t, err, "get")
		sameItem(t, got, child, "the put-once part")
	})

	t.Run("invalid transactions are refused", func(t *testing.T) {
		it := store.Item{PK: p + "ACTION#inv", SK: "META", Version: 1}
		for name, writes := range map[string][]store.Write{
			"empty":                   nil,
			"no part":                 {{}},
			"two in one part":         {{PutOnce: &it, Append: &store.AppendWrite{Stream: p + "s", Body: []byte("x")}}},
			"one item twice":          {store.PutOnceWrite(it), store.CASOf(store.Item{PK: it.PK, SK: it.SK, Version: 2}, 1, 0)},
			"one stream twice":        {store.AppendOf(p+"s", []byte("a")), store.AppendOf(p+"s", []byte("b"))},
			"version not above":       {store.CASOf(store.Item{PK: it.PK, SK: it.SK, Version: 1}, 1, 0)},
			"empty stream":            {store.AppendOf("", []byte("a"))},
			"check of version 0":      {store.PutOnceWrite(it), store.CheckOf(store.Key{PK: it.PK, SK: "OTHER"}, 0)},
			"check of a written item": {store.PutOnceWrite(it), store.CheckOf(it.Key(), 1)},
		} {
			_, err := s.Transact(ctx, writes)
			if !errors.Is(err, store.ErrInvalid) {
				t.Fatalf("%s: %v, want ErrInvalid", name, err)
			}
		}
		if _, err := s.Get(ctx, it.Key()); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a refused transaction wrote: %v", err)
		}
	})
}
