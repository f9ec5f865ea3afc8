package storetest

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/store"
)

// Opener returns the store under test. It may return a fresh store per call
// or the same one: every test uses its own keys.
type Opener func(t *testing.T) store.Store

// Run runs the whole contract suite.
func Run(t *testing.T, open Opener) {
	RunSequential(t, open)
	t.Run("Concurrency", func(t *testing.T) {
		testConcurrency(t, open)
		t.Run("Chain", func(t *testing.T) { testChainParallel(t, open) })
	})
}

// RunSequential runs every part of the suite that issues one request at a
// time: all of it but Concurrency (one lease winner, counted-once counters,
// one receipt winner, gap-free parallel appends and transactions under
// racing callers). It
// is for a backend that is not safe under concurrent requests, such as
// moto's DynamoDB.
func RunSequential(t *testing.T, open Opener) {
	t.Run("Items", func(t *testing.T) { testItems(t, open) })
	t.Run("CompareAndSwap", func(t *testing.T) { testCompareAndSwap(t, open) })
	t.Run("FencedCompareAndSwap", func(t *testing.T) { testFencedCompareAndSwap(t, open) })
	t.Run("PutOnceIfVersion", func(t *testing.T) { testPutOnceIfVersion(t, open) })
	t.Run("Query", func(t *testing.T) { testQuery(t, open) })
	t.Run("QueryIndex", func(t *testing.T) { testQueryIndex(t, open) })
	t.Run("Lease", func(t *testing.T) { testLease(t, open) })
	t.Run("LeaseTimePrecision", func(t *testing.T) { testLeaseTimePrecision(t, open) })
	t.Run("Counter", func(t *testing.T) { testCounter(t, open) })
	t.Run("Log", func(t *testing.T) { testLog(t, open) })
	t.Run("Chain", func(t *testing.T) { testChain(t, open) })
	t.Run("Transact", func(t *testing.T) { testTransact(t, open) })
	t.Run("Invalid", func(t *testing.T) { testInvalid(t, open) })
}

// ns is a fresh key namespace: every partition key a test writes starts
// with it, so tests never see each other's items.
func ns(t *testing.T) string {
	t.Helper()
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return "T" + hex.EncodeToString(b[:]) + "-"
}

// t0 is the base of every test clock: far enough in the future that no
// backend treats a lease time as already past.
var t0 = time.Date(2031, 3, 4, 5, 6, 7, 0, time.UTC)

func mustNil(t *testing.T, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: unexpected error: %v", what, err)
	}
}

// as asserts err is (or wraps) a *E and returns it.
func as[E error](t *testing.T, err error, what string) E {
	t.Helper()
	var target E
	if err == nil {
		t.Fatalf("%s: got nil error, want %T", what, target)
	}
	if !errors.As(err, &target) {
		t.Fatalf("%s: got %T (%v), want %T", what, err, err, target)
	}
	return target
}

func is(t *testing.T, err, target error, what string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: got %v, want errors.Is %v", what, err, target)
	}
}

// sameItem compares the fields a store must round-trip.
func sameItem(t *testing.T, got, want store.Item, what string) {
	t.Helper()
	if err := diffItem(got, want); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func diffItem(got, want store.Item) error {
	switch {
	case got.PK != want.PK || got.SK != want.SK:
		return fmt.Errorf("key %s, want %s", got.Key(), want.Key())
	case got.Version != want.Version:
		return fmt.Errorf("%s: version %d, want %d", want.Key(), got.Version, want.Version)
	case got.Fence != want.Fence:
		return fmt.Errorf("%s: fence %d, want %d", want.Key(), got.Fence, want.Fence)
	case got.GSI1PK != want.GSI1PK || got.GSI1SK != want.GSI1SK:
		return fmt.Errorf("%s: gsi1 %q/%q, want %q/%q", want.Key(), got.GSI1PK, got.GSI1SK, want.GSI1PK, want.GSI1SK)
	case got.GSI2PK != want.GSI2PK || got.GSI2SK != want.GSI2SK:
		return fmt.Errorf("%s: gsi2 %q/%q, want %q/%q", want.Key(), got.GSI2PK, got.GSI2SK, want.GSI2PK, want.GSI2SK)
	case !got.ExpiresAt.Equal(want.ExpiresAt.Truncate(time.Second)):
		return fmt.Errorf("%s: expires %v, want %v", want.Key(), got.ExpiresAt, want.ExpiresAt)
	case !bytes.Equal(got.Body, want.Body):
		return fmt.Errorf("%s: body %q, want %q", want.Key(), got.Body, want.Body)
	}
	return nil
}

// IndexSettle bounds how long an index read may lag the write before it:
// DynamoDB's GSIs are eventually consistent (usually well under a second).
// The embedded store and minidyn are consistent, so there the first read
// decides.
const IndexSettle = 10 * time.Second

// eventually retries check until it returns nil or IndexSettle passes.
func eventually(t *testing.T, check func() error) {
	t.Helper()
	deadline := time.Now().Add(IndexSettle)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func keysOf(items []store.Item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.SK
	}
	return out
}
