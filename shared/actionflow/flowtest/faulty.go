package flowtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/openprogram/lifecycle/shared/actionflow"
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
	// Rewrite, if set, replaces a transaction's writes before they are
	// checked and made (e.g. EarlierRecord).
	Rewrite func(writes []store.Write) []store.Write
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
	f.mu.Lock()
	rewrite := f.Rewrite
	f.mu.Unlock()
	if rewrite != nil {
		writes = rewrite(writes)
	}
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

// SetRewrite replaces the transaction rewrite (nil: none).
func (f *FaultyStore) SetRewrite(rewrite func([]store.Write) []store.Write) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Rewrite = rewrite
}

// EarlierRecord rewrites the record step's transaction (the one that
// moves an action to delivery projected with its action.projected event)
// into what the record step of an earlier revision wrote, whose own
// Project state then failed: the checkpoint fold and the action left
// delivery recorded, still in the open-work index, no event. Other
// transactions pass unchanged.
func EarlierRecord(writes []store.Write) []store.Write {
	var out []store.Write
	projected := false
	for _, w := range writes {
		if w.CAS == nil || !strings.HasPrefix(w.CAS.Item.PK, "ACTION#") || w.CAS.Item.SK != "META" {
			continue
		}
		js, err := actionflow.ActionJSON(w.CAS.Item.Body)
		if err == nil && bytes.Contains(js, []byte(`"delivery":"projected"`)) {
			projected = true
		}
	}
	if !projected {
		return writes
	}
	for _, w := range writes {
		switch {
		case w.Append != nil:
			continue // the event was Project's to append
		case w.CAS != nil && strings.HasPrefix(w.CAS.Item.PK, "ACTION#") && w.CAS.Item.SK == "META":
			js, _ := actionflow.ActionJSON(w.CAS.Item.Body)
			var a actionflow.Action
			_ = json.Unmarshal(js, &a)
			cas := *w.CAS
			cas.Item.Body = bytes.Replace(js, []byte(`"delivery":"projected"`), []byte(`"delivery":"recorded"`), 1)
			cas.Item.GSI2PK, cas.Item.GSI2SK = "OPEN#ACTION", a.CreatedAt.UTC().Format(time.RFC3339Nano)+"#"+string(a.ActionID)
			w = store.Write{CAS: &cas}
		}
		out = append(out, w)
	}
	return out
}
