package sqlitestore

import (
	"hash/maphash"
	"sync"

	"github.com/openprogram/lifecycle/shared/store"
)

// itemCache is the optional write-through cache of items (WithItemCache).
//
// It is coherent because this Store is the only writer of its file (the
// option's contract; the embedded stack holds an exclusive lock on the
// state directory): every item write goes through the writer goroutine,
// which puts the stored item into the cache after the commit that made it
// durable and before the write returns. A read that misses fills the cache
// only if no write to a key of the same stripe committed while it read, so
// a slow read can never put back an older item. Leases, counters and log
// entries are never cached.
type itemCache struct {
	mu    sync.RWMutex
	items map[store.Key]store.Item
	max   int
	seed  maphash.Seed
	seq   [1024]uint64 // per stripe: bumped by every cached write
}

func newItemCache(max int) *itemCache {
	return &itemCache{items: make(map[store.Key]store.Item, max), max: max, seed: maphash.MakeSeed()}
}

func (c *itemCache) stripe(k store.Key) int {
	return int(maphash.String(c.seed, k.PK+"\x00"+k.SK) % uint64(len(c.seq)))
}

func cloneItem(it store.Item) store.Item {
	if it.Body != nil {
		it.Body = append([]byte(nil), it.Body...)
	}
	return it
}

// get returns a copy of a cached item, and the stripe's sequence to pass
// to fill after a miss.
func (c *itemCache) get(k store.Key) (store.Item, bool, uint64) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	it, ok := c.items[k]
	if ok {
		return cloneItem(it), true, 0
	}
	return store.Item{}, false, c.seq[c.stripe(k)]
}

// peek returns a cached item without copying its body (callers must not
// keep or change the body).
func (c *itemCache) peek(k store.Key) (store.Item, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	it, ok := c.items[k]
	return it, ok
}

// fill caches an item read from the database, unless a write of the same
// stripe committed since the read began (seq is what get returned).
func (c *itemCache) fill(it store.Item, seq uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seq[c.stripe(it.Key())] != seq {
		return
	}
	c.putLocked(cloneItem(it))
}

// stored records items a committed write stored.
func (c *itemCache) stored(items []store.Item) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, it := range items {
		c.seq[c.stripe(it.Key())]++
		c.putLocked(cloneItem(it))
	}
}

func (c *itemCache) putLocked(it store.Item) {
	if _, ok := c.items[it.Key()]; !ok && len(c.items) >= c.max {
		// Evict about an eighth, in map order (effectively random).
		n := c.max/8 + 1
		for k := range c.items {
			delete(c.items, k)
			if n--; n == 0 {
				break
			}
		}
	}
	c.items[it.Key()] = it
}

// asStored is the item as the database holds it after a successful write
// (what scanItem would read back).
func asStored(it store.Item) store.Item {
	it.ExpiresAt = store.ExpiresAtTime(store.ExpiresAtSeconds(it.ExpiresAt))
	if len(it.Body) == 0 {
		it.Body = nil
	}
	return it
}
