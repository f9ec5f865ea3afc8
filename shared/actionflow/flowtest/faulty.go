package flowtest

import (
	"context"
	"errors"
	"sync"

	"github.com/openprogram/lifecycle/shared/store"
)

// FaultyStore fails chosen item writes the way an unavailable backend
// does (*store.UnavailableError: nothing written, retry is safe), and can
// run a racing writer just before a chosen write.
type FaultyStore struct {
	store.Store
	mu sync.Mutex
	// Fail says whether to fail a write; op is "put" (also a put-once part
	// of a transaction), "cas" (also a compare-and-swap part) or "guarded"
	// (PutOnceIfVersion).
	Fail func(op string, it store.Item) bool
	// Before runs before every write that is not failed.
	Before func(op string, it store.Item)
}

// Set replaces the failure rule (nil: fail nothing).
func (f *FaultyStore) Set(fail func(op string, it store.Item) bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Fail = fail
}

func (f *FaultyStore) check(op string, it store.Item) error {
	f.mu.Lock()
	fail, before := f.Fail, f.Before
	f.mu.Unlock()
	if fail != nil && fail(op, it) {
		return &store.UnavailableError{Op: op + " " + it.Key().String(), Err: errors.New("injected failure")}
	}
	if before != nil {
		before(op, it)
	}
	return nil
}

func (f *FaultyStore) PutOnce(ctx context.Context, it store.Item) error {
	if err := f.check("put", it); err != nil {
		return err
	}
	return f.Store.PutOnce(ctx, it)
}

func (f *FaultyStore) CompareAndSwap(ctx context.Context, it store.Item, expected, fence int64) error {
	if err := f.check("cas", it); err != nil {
		return err
	}
	return f.Store.CompareAndSwap(ctx, it, expected, fence)
}

func (f *FaultyStore) PutOnceIfVersion(ctx context.Context, it store.Item, guard store.Key, expected int64) error {
	if err := f.check("guarded", it); err != nil {
		return err
	}
	return f.Store.PutOnceIfVersion(ctx, it, guard, expected)
}

// Transact fails as a whole when any of its item parts is to fail ("put"
// or "cas"), as the backend would.
func (f *FaultyStore) Transact(ctx context.Context, writes []store.Write) ([]int64, error) {
	for _, w := range writes {
		var err error
		switch {
		case w.PutOnce != nil:
			err = f.check("put", *w.PutOnce)
		case w.CAS != nil:
			err = f.check("cas", w.CAS.Item)
		}
		if err != nil {
			return nil, err
		}
	}
	return f.Store.Transact(ctx, writes)
}
