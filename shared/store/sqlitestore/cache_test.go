package sqlitestore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/openprogram/lifecycle/shared/store"
	"github.com/openprogram/lifecycle/shared/store/sqlitestore"
)

// Under concurrent compare-and-swap writers and readers, a read that
// starts after a write returned sees that write or a later one: the cache
// never serves an older version than the database holds.
func TestItemCacheNeverGoesBack(t *testing.T) {
	s := openTemp(t, sqlitestore.WithItemCache(8))
	ctx := context.Background()
	const keys, rounds = 16, 200
	for k := 0; k < keys; k++ {
		if err := s.PutOnce(ctx, store.Item{PK: "P", SK: fmt.Sprint(k), Version: 1, Body: []byte("1")}); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	floor := map[string]int64{} // version each key is known to have reached
	var wg sync.WaitGroup
	for k := 0; k < keys; k++ {
		wg.Add(2)
		go func(k int) { // writer
			defer wg.Done()
			for v := int64(1); v < rounds; v++ {
				if err := s.CompareAndSwap(ctx, store.Item{PK: "P", SK: fmt.Sprint(k), Version: v + 1, Body: []byte(fmt.Sprint(v + 1))}, v, 0); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				floor[fmt.Sprint(k)] = v + 1
				mu.Unlock()
			}
		}(k)
		go func(k int) { // reader
			defer wg.Done()
			key := store.Key{PK: "P", SK: fmt.Sprint(k)}
			for i := 0; i < rounds; i++ {
				mu.Lock()
				min := floor[key.SK]
				mu.Unlock()
				it, err := s.Get(ctx, key)
				if err != nil {
					t.Error(err)
					return
				}
				if it.Version < min || string(it.Body) != fmt.Sprint(it.Version) {
					t.Errorf("key %s: read version %d (body %q) after %d was written", key.SK, it.Version, it.Body, min)
					return
				}
			}
		}(k)
	}
	wg.Wait()
}
