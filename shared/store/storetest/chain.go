package storetest

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/openprogram/lifecycle/shared/audit"
	"github.com/openprogram/lifecycle/shared/store"
)

// readAll reads a whole stream in small pages (so paging is exercised).
func readAll(t *testing.T, s store.Store, stream string) []store.LogEntry {
	t.Helper()
	var all []store.LogEntry
	for after := int64(0); ; {
		page, err := s.ReadLog(t.Context(), stream, after, 7)
		mustNil(t, err, "read log")
		if len(page) == 0 {
			return all
		}
		all = append(all, page...)
		after = page[len(page)-1].Seq
	}
}

// checkChain asserts every entry of entries is chained after the one
// before it (the first after the stream's genesis) and digests its body.
func checkChain(t *testing.T, stream string, entries []store.LogEntry) {
	t.Helper()
	prev := store.ChainGenesis(stream)
	for i, e := range entries {
		if e.Seq != int64(i+1) {
			t.Fatalf("entry %d has seq %d", i+1, e.Seq)
		}
		if !e.Chained() {
			t.Fatalf("entry %d is not chained: digest %x prev %x", e.Seq, e.Digest, e.Prev)
		}
		if !bytes.Equal(e.Digest, store.ChainDigest(e.Body)) {
			t.Fatalf("entry %d: digest %x is not the digest of its body %q", e.Seq, e.Digest, e.Body)
		}
		if !bytes.Equal(e.Prev, prev) {
			t.Fatalf("entry %d: prev %x, want %x (the hash of entry %d)", e.Seq, e.Prev, prev, e.Seq-1)
		}
		prev = e.Hash()
	}
}

func toAudit(entries []store.LogEntry) []audit.Entry {
	out := make([]audit.Entry, len(entries))
	for i, e := range entries {
		out[i] = audit.FromLog(e)
	}
	return out
}

func testChain(t *testing.T, open Opener) {
	s := open(t)
	ctx := t.Context()
	p := ns(t)

	t.Run("appends and transaction appends form one chain", func(t *testing.T) {
		stream := p + "SESSION#mixed"
		for i := 1; i <= 6; i++ {
			body := fmt.Appendf(nil, `{"n":%d, "type":"t"}`, i)
			if i%2 == 0 {
				_, err := s.Transact(ctx, []store.Write{store.PutOnceWrite(store.Item{PK: p + "X", SK: fmt.Sprint(i), Version: 1}),
					store.AppendOf(stream, body)})
				mustNil(t, err, "transact")
			} else {
				_, err := s.Append(ctx, stream, body)
				mustNil(t, err, "append")
			}
		}
		checkChain(t, stream, readAll(t, s, stream))
	})

	t.Run("the digest is of the canonical form", func(t *testing.T) {
		a, b := store.ChainDigest([]byte(`{"b":1,"a":[1.0,"x"]}`)), store.ChainDigest([]byte("{ \"a\": [1, \"x\"],\n \"b\": 1e0 }"))
		if !bytes.Equal(a, b) {
			t.Fatalf("two encodings of one JSON value digest differently: %x %x", a, b)
		}
		if bytes.Equal(a, store.ChainDigest([]byte(`{"b":2,"a":[1,"x"]}`))) {
			t.Fatal("two different values digest the same")
		}
	})

	t.Run("bodies that are not JSON are chained too", func(t *testing.T) {
		stream := p + "EXEC#raw"
		for _, body := range [][]byte{[]byte("x"), nil, []byte("{not json")} {
			_, err := s.Append(ctx, stream, body)
			mustNil(t, err, "append")
		}
		checkChain(t, stream, readAll(t, s, stream))
	})

	t.Run("a failed transaction leaves the head where it was", func(t *testing.T) {
		stream := p + "SESSION#failed"
		key := store.Item{PK: p + "Y", SK: "META", Version: 1}
		mustNil(t, s.PutOnce(ctx, key), "put")
		_, err := s.Append(ctx, stream, []byte(`{"n":1}`))
		mustNil(t, err, "append")
		// The append part comes first, so the adapter has computed its link
		// before the put-once part fails.
		_, err = s.Transact(ctx, []store.Write{store.AppendOf(stream, []byte(`{"n":"lost"}`)), store.PutOnceWrite(key)})
		as[*store.TransactError](t, err, "transact on an existing item")
		_, err = s.Append(ctx, stream, []byte(`{"n":2}`))
		mustNil(t, err, "append")
		entries := readAll(t, s, stream)
		if len(entries) != 2 {
			t.Fatalf("%d entries, want 2", len(entries))
		}
		checkChain(t, stream, entries)
	})

}

// LogTamper writes a stream's entries as they are stored, around the
// store's operations: what someone with write access to the table (not
// to the service) can do. Each adapter's test provides one.
type LogTamper interface {
	// PutLogEntry stores e as entry e.Seq of e.Stream (replacing one),
	// with its At, Body, Digest and Prev as given.
	PutLogEntry(ctx context.Context, e store.LogEntry) error
	// DeleteLogEntry removes entry seq.
	DeleteLogEntry(ctx context.Context, stream string, seq int64) error
}

// RunTamper tampers with a chain each way through the backend and checks
// that audit.Verify names the entry that was changed, removed, reordered
// or inserted (and, with an anchor, a truncated tail).
func RunTamper(t *testing.T, open Opener, tamper func(store.Store) LogTamper) {
	s := open(t)
	tm := tamper(s)
	ctx := t.Context()
	const n = 8
	fresh := func(t *testing.T) (string, []store.LogEntry) {
		stream := ns(t) + "SESSION#tampered"
		for i := 1; i <= n; i++ {
			_, err := s.Append(ctx, stream, fmt.Appendf(nil, `{"type":"action.decided","n":%d}`, i))
			mustNil(t, err, "append")
		}
		entries := readAll(t, s, stream)
		checkChain(t, stream, entries)
		return stream, entries
	}
	put := func(t *testing.T, e store.LogEntry) { mustNil(t, tm.PutLogEntry(ctx, e), "tamper: put") }
	moved := func(e store.LogEntry, seq int64) store.LogEntry { e.Seq = seq; return e }
	cases := []struct {
		name   string
		tamper func(t *testing.T, stream string, es []store.LogEntry)
		anchor bool
		want   audit.Problem
	}{
		{"a body changed", func(t *testing.T, _ string, es []store.LogEntry) {
			e := es[3]
			e.Body = []byte(`{"type":"action.decided","n":400}`)
			put(t, e)
		}, false, audit.Problem{Seq: 4, Kind: audit.Changed}},
		{"a body changed with its digest recomputed", func(t *testing.T, _ string, es []store.LogEntry) {
			e := es[3]
			e.Body = []byte(`{"type":"action.decided","n":400}`)
			e.Digest = store.ChainDigest(e.Body)
			put(t, e)
		}, false, audit.Problem{Seq: 4, Kind: audit.Changed}},
		{"an entry removed", func(t *testing.T, stream string, _ []store.LogEntry) {
			mustNil(t, tm.DeleteLogEntry(ctx, stream, 5), "tamper: delete")
		}, false, audit.Problem{Seq: 5, Kind: audit.Removed}},
		{"two entries swapped", func(t *testing.T, _ string, es []store.LogEntry) {
			put(t, moved(es[2], 4))
			put(t, moved(es[3], 3))
		}, false, audit.Problem{Seq: 3, Kind: audit.Reordered}},
		{"an entry inserted, the rest renumbered", func(t *testing.T, _ string, es []store.LogEntry) {
			for i := n - 1; i >= 5; i-- {
				put(t, moved(es[i], es[i].Seq+1))
			}
			// A forger who knows the scheme chains the new entry after entry 5.
			body := []byte(`{"type":"approval.approved","n":"forged"}`)
			link := store.NextLink(es[0].Stream, es[4].Hash(), 6, store.UnixMicro(es[4].At), body)
			put(t, store.LogEntry{Stream: es[0].Stream, Seq: 6, At: es[4].At, Body: body, Digest: link.Digest, Prev: link.Prev})
		}, false, audit.Problem{Seq: 6, Kind: audit.Inserted}},
		{"the last entry removed (caught by the anchor)", func(t *testing.T, stream string, _ []store.LogEntry) {
			mustNil(t, tm.DeleteLogEntry(ctx, stream, n), "tamper: delete")
		}, true, audit.Problem{Seq: n, Kind: audit.Removed}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			stream, before := fresh(t)
			var anchors []audit.Anchor
			if tc.anchor {
				anchors = append(anchors, audit.Anchor{Seq: n, Hash: fmt.Sprintf("%x", before[n-1].Hash())})
			}
			if res, err := audit.Verify(toAudit(before), anchors...); err != nil || !res.OK {
				t.Fatalf("before tampering: %+v, %v", res, err)
			}
			tc.tamper(t, stream, before)
			res, err := audit.Verify(toAudit(readAll(t, s, stream)), anchors...)
			mustNil(t, err, "verify")
			if res.OK || res.Problem == nil || res.Problem.Seq != tc.want.Seq || res.Problem.Kind != tc.want.Kind {
				t.Fatalf("verify after tampering: %+v (problem %+v), want entry %d %s", res, res.Problem, tc.want.Seq, tc.want.Kind)
			}
			t.Logf("verify: %v", res.Problem)
		})
	}
}

// testChainParallel: appenders racing on one stream (appends and
// transactions) leave one gap-free chain. Part of Concurrency: a backend
// unsafe under concurrent requests (moto) runs the rest of Chain only.
func testChainParallel(t *testing.T, open Opener) {
	s := open(t)
	ctx := t.Context()
	p := ns(t)
	t.Run("parallel appenders keep one chain", func(t *testing.T) {
		stream := p + "SESSION#parallel"
		const workers, each = 6, 5
		var wg sync.WaitGroup
		errs := make(chan error, workers*each)
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range each {
					body := fmt.Appendf(nil, `{"w":%d,"i":%d}`, w, i)
					var err error
					if i%2 == 0 {
						_, err = s.Append(ctx, stream, body)
					} else {
						_, err = s.Transact(ctx, []store.Write{store.AppendOf(stream, body)})
					}
					errs <- err
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			mustNil(t, err, "parallel append")
		}
		entries := readAll(t, s, stream)
		if len(entries) != workers*each {
			t.Fatalf("%d entries, want %d", len(entries), workers*each)
		}
		checkChain(t, stream, entries)
		res, err := audit.Verify(toAudit(entries))
		mustNil(t, err, "verify")
		if !res.OK || res.Head != fmt.Sprintf("%x", entries[len(entries)-1].Hash()) {
			t.Fatalf("verify: %+v", res)
		}
	})
}
