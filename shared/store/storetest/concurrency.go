package storetest

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/store"
)

// Racers is how many goroutines race in each concurrency test.
const Racers = 32

// race runs fn(i) for i in [0, Racers) as close to simultaneously as
// goroutines allow and returns their errors by index.
func race(fn func(i int) error) []error {
	errs := make([]error, Racers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range Racers {
		wg.Go(func() {
			<-start
			errs[i] = fn(i)
		})
	}
	close(start)
	wg.Wait()
	return errs
}

func testConcurrency(t *testing.T, open Opener) {
	s := open(t)
	ctx := t.Context()
	p := ns(t)

	t.Run("one lease, many attempts: exactly one winner", func(t *testing.T) {
		exec := p + "lease"
		fences := make([]int64, Racers)
		errs := race(func(i int) error {
			l, err := s.AcquireLease(ctx, store.LeaseRequest{Resource: exec, AttemptID: fmt.Sprintf("att-%02d", i), TTL: time.Minute, Now: t0})
			fences[i] = l.Fence
			return err
		})
		winners := 0
		for i, err := range errs {
			if err == nil {
				winners++
				if fences[i] != 1 {
					t.Errorf("winner att-%02d got fence %d, want 1", i, fences[i])
				}
				continue
			}
			as[*store.LeaseHeldError](t, err, fmt.Sprintf("att-%02d", i))
		}
		if winners != 1 {
			t.Fatalf("%d winners, want exactly 1", winners)
		}
	})

	t.Run("one counter, distinct members: each counted exactly once", func(t *testing.T) {
		key := store.CounterKey{SessionID: p + "s-distinct", Epoch: "1"}
		errs := race(func(i int) error {
			_, applied, err := s.ApplyCounter(ctx, key, fmt.Sprintf("a%02d", i), store.CounterBlock)
			if err == nil && !applied {
				return fmt.Errorf("distinct member a%02d not applied", i)
			}
			return err
		})
		for _, err := range errs {
			mustNil(t, err, "apply counter")
		}
		c, err := s.GetCounter(ctx, key)
		mustNil(t, err, "get counter")
		if c != (store.Counter{Consecutive: Racers, Total: Racers}) {
			t.Fatalf("counter %+v, want %d/%d", c, Racers, Racers)
		}
	})

	t.Run("one counter, one member: counted once", func(t *testing.T) {
		key := store.CounterKey{SessionID: p + "s-same", Epoch: "1"}
		applied := make([]bool, Racers)
		errs := race(func(i int) error {
			var err error
			_, applied[i], err = s.ApplyCounter(ctx, key, "a1", store.CounterBlock)
			return err
		})
		n := 0
		for i, err := range errs {
			mustNil(t, err, "apply counter")
			if applied[i] {
				n++
			}
		}
		c, err := s.GetCounter(ctx, key)
		mustNil(t, err, "get counter")
		if n != 1 || c != (store.Counter{Consecutive: 1, Total: 1}) {
			t.Fatalf("applied %d times, counter %+v; want once, 1/1", n, c)
		}
	})

	t.Run("one receipt, many writers: exactly one winner", func(t *testing.T) {
		key := store.Key{PK: p + "EXEC#e1", SK: "RECEIPT#a1"}
		errs := race(func(i int) error {
			return s.PutOnce(ctx, store.Item{PK: key.PK, SK: key.SK, Version: 1, Body: fmt.Appendf(nil, "writer-%02d", i)})
		})
		winner := -1
		for i, err := range errs {
			if err == nil {
				if winner >= 0 {
					t.Fatalf("writers %d and %d both won", winner, i)
				}
				winner = i
				continue
			}
			as[*store.ConflictError](t, err, fmt.Sprintf("writer %d", i))
		}
		if winner < 0 {
			t.Fatal("no writer won")
		}
		got, err := s.Get(ctx, key)
		mustNil(t, err, "get receipt")
		if string(got.Body) != fmt.Sprintf("writer-%02d", winner) {
			t.Fatalf("stored receipt %q, winner was %d", got.Body, winner)
		}
		for i, err := range errs {
			if i != winner && err != nil {
				ce := as[*store.ConflictError](t, err, "loser")
				if string(ce.Existing.Body) != string(got.Body) {
					t.Fatalf("loser %d saw Existing %q, stored %q", i, ce.Existing.Body, got.Body)
				}
			}
		}
	})

	t.Run("parallel appends: 1..N, no gaps, no duplicates", func(t *testing.T) {
		stream := p + "EXEC#log"
		seqs := make([]int64, Racers)
		errs := race(func(i int) error {
			var err error
			seqs[i], err = s.Append(ctx, stream, fmt.Appendf(nil, "%d", i))
			return err
		})
		for _, err := range errs {
			mustNil(t, err, "append")
		}
		checkRacedLog(t, s, stream, seqs)
	})

	t.Run("parallel transactions appending to one stream: 1..N, each with its item", func(t *testing.T) {
		stream := p + "SESSION#txrace"
		seqs := make([]int64, Racers)
		errs := race(func(i int) error {
			got, err := s.Transact(ctx, []store.Write{
				store.PutOnceWrite(store.Item{PK: fmt.Sprintf("%sACTION#tx%02d", p, i), SK: "META", Version: 1, Body: fmt.Appendf(nil, "%d", i)}),
				store.AppendOf(stream, fmt.Appendf(nil, "%d", i)),
			})
			if err == nil {
				seqs[i] = got[1]
			}
			return err
		})
		for _, err := range errs {
			mustNil(t, err, "transact")
		}
		checkRacedLog(t, s, stream, seqs)
	})

	t.Run("one version, many compare-and-swaps: exactly one winner", func(t *testing.T) {
		key := store.Key{PK: p + "EXEC#e1", SK: "CKPT"}
		mustNil(t, s.PutOnce(ctx, store.Item{PK: key.PK, SK: key.SK, Version: 1}), "create")
		errs := race(func(i int) error {
			return s.CompareAndSwap(ctx, store.Item{PK: key.PK, SK: key.SK, Version: 2, Body: fmt.Appendf(nil, "%d", i)}, 1, 0)
		})
		winners := 0
		for _, err := range errs {
			if err == nil {
				winners++
				continue
			}
			vc := as[*store.VersionConflictError](t, err, "loser")
			if vc.Actual != 2 {
				t.Fatalf("loser saw actual %d, want 2", vc.Actual)
			}
		}
		if winners != 1 {
			t.Fatalf("%d winners, want 1", winners)
		}
	})
}

// checkRacedLog checks a stream that Racers appenders wrote, appender i
// with body "i", each told seqs[i]: the numbers are 1..Racers, and each
// entry holds the body of the appender told its number.
func checkRacedLog(t *testing.T, s store.Store, stream string, seqs []int64) {
	t.Helper()
	sorted := slices.Clone(seqs)
	slices.Sort(sorted)
	for i, seq := range sorted {
		if seq != int64(i+1) {
			t.Fatalf("sequence numbers %v: want 1..%d", sorted, Racers)
		}
	}
	entries, err := s.ReadLog(t.Context(), stream, 0, 0)
	mustNil(t, err, "read log")
	if len(entries) != Racers {
		t.Fatalf("%d entries in the log, want %d", len(entries), Racers)
	}
	for _, e := range entries {
		var i int
		fmt.Sscanf(string(e.Body), "%d", &i)
		if seqs[i] != e.Seq {
			t.Fatalf("entry %d holds the body of appender %d, which was told seq %d", e.Seq, i, seqs[i])
		}
	}
}
