package metered

import (
	"context"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/openprogram/lifecycle/shared/store"
)

// Usage is a snapshot of what was counted.
type Usage struct {
	Reads, Writes int64 // operations; Writes counts each item a transaction writes
	// WriteRequests counts write calls: a transaction of several items is
	// one (one round trip, one commit).
	WriteRequests int64
	RCU, WCU      float64 // capacity units as DynamoDB would bill them
	// IndexWCU are the write units the table's global secondary indexes
	// would consume besides WCU: both project all attributes, so an item
	// carrying an index's keys is written there too, at 1 unit per started
	// KB (a transaction does not double them). Removing an item from an
	// index (a write without the keys it had) costs a unit more that is
	// not counted: the wrapper does not see the old item.
	IndexWCU     float64
	BytesWritten int64
}

// Sub returns u - o.
func (u Usage) Sub(o Usage) Usage {
	return Usage{Reads: u.Reads - o.Reads, Writes: u.Writes - o.Writes, WriteRequests: u.WriteRequests - o.WriteRequests,
		RCU: u.RCU - o.RCU, WCU: u.WCU - o.WCU, IndexWCU: u.IndexWCU - o.IndexWCU, BytesWritten: u.BytesWritten - o.BytesWritten}
}

// Store counts usage of an underlying store.
type Store struct {
	store.Store
	reads, writes, bytes atomic.Int64
	requests             atomic.Int64
	rcuHalf, wcu         atomic.Int64 // rcu in half units
	indexWCU             atomic.Int64

	mu    sync.Mutex
	kinds map[string]*Usage // by Kind
}

var _ store.Store = (*Store)(nil)

// Wrap meters s.
func Wrap(s store.Store) *Store { return &Store{Store: s} }

// Usage returns the counts so far.
func (m *Store) Usage() Usage {
	return Usage{Reads: m.reads.Load(), Writes: m.writes.Load(), WriteRequests: m.requests.Load(), RCU: float64(m.rcuHalf.Load()) / 2,
		WCU: float64(m.wcu.Load()), IndexWCU: float64(m.indexWCU.Load()), BytesWritten: m.bytes.Load()}
}

// Kind names the record an item is, for the breakdown: the partition
// key's prefix and the sort key's prefix, each up to its first '#'
// ("ACTION/META", "SESSION/EVT", "SFNEXEC/META"). A read of an index is
// "gsi1:" or "gsi2:" and the partition key's prefix (the whole key for the
// open-work partitions, "gsi2:OPEN#SFN").
func Kind(pk, sk string) string {
	if i := strings.IndexByte(pk, '#'); i >= 0 {
		pk = pk[:i]
	}
	if i := strings.IndexByte(sk, '#'); i >= 0 {
		sk = sk[:i]
	}
	return pk + "/" + sk
}

// ByKind returns the usage counted for each kind of record (see Kind),
// sorted by kind. The kinds' sums are Usage, except that a transaction's
// request is counted once overall and once for each kind it writes.
func (m *Store) ByKind() []KindUsage {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]KindUsage, 0, len(m.kinds))
	for k, u := range m.kinds {
		out = append(out, KindUsage{Kind: k, Usage: *u})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Kind < out[j].Kind })
	return out
}

// KindUsage is the usage of one kind of record.
type KindUsage struct {
	Kind string
	Usage
}

// SubKinds returns a - b kind by kind (kinds only in b are left out).
func SubKinds(a, b []KindUsage) []KindUsage {
	prev := map[string]Usage{}
	for _, k := range b {
		prev[k.Kind] = k.Usage
	}
	out := make([]KindUsage, 0, len(a))
	for _, k := range a {
		out = append(out, KindUsage{Kind: k.Kind, Usage: k.Usage.Sub(prev[k.Kind])})
	}
	return out
}

func (m *Store) kind(k string, f func(u *Usage)) {
	m.mu.Lock()
	if m.kinds == nil {
		m.kinds = map[string]*Usage{}
	}
	u := m.kinds[k]
	if u == nil {
		u = &Usage{}
		m.kinds[k] = u
	}
	f(u)
	m.mu.Unlock()
}

// itemSize approximates DynamoDB's item size: attribute names and values.
func itemSize(it store.Item) int {
	n := len("pk") + len(it.PK) + len("sk") + len(it.SK) + len("body") + len(it.Body) + len("version") + 8
	if it.Fence != 0 {
		n += len("fence") + 8
	}
	if it.GSI1PK != "" {
		n += len("gsi1pk") + len(it.GSI1PK) + len("gsi1sk") + len(it.GSI1SK)
	}
	if it.GSI2PK != "" {
		n += len("gsi2pk") + len(it.GSI2PK) + len("gsi2sk") + len(it.GSI2SK)
	}
	if !it.ExpiresAt.IsZero() {
		n += len("expires_at") + 8
	}
	return n
}

// indexed counts the index writes of an item written.
func (m *Store) indexed(it store.Item) {
	n := int64(0)
	if it.GSI1PK != "" {
		n++
	}
	if it.GSI2PK != "" {
		n++
	}
	if n == 0 {
		return
	}
	w := n * units(itemSize(it), 1024)
	m.indexWCU.Add(w)
	m.kind(Kind(it.PK, it.SK), func(u *Usage) { u.IndexWCU += float64(w) })
}

func units(size, per int) int64 {
	if size <= 0 {
		return 1
	}
	return int64((size + per - 1) / per)
}

// write counts a write request of one item of kind k.
func (m *Store) write(k string, size int, factor int64) {
	m.requests.Add(1)
	m.kind(k, func(u *Usage) { u.WriteRequests++ })
	m.item(k, size, factor)
}

// item counts one item of kind k written (factor 2: a transaction's part).
func (m *Store) item(k string, size int, factor int64) {
	w := units(size, 1024) * factor
	m.writes.Add(1)
	m.bytes.Add(int64(size))
	m.wcu.Add(w)
	m.kind(k, func(u *Usage) { u.Writes++; u.BytesWritten += int64(size); u.WCU += float64(w) })
}

// read counts strongly consistent reads of size bytes of kind k (eventual: half).
func (m *Store) read(k string, size int, eventual bool) {
	m.reads.Add(1)
	u := units(size, 4096) * 2
	if eventual {
		u /= 2
	}
	m.rcuHalf.Add(u)
	m.kind(k, func(ku *Usage) { ku.Reads++; ku.RCU += float64(u) / 2 })
}

func (m *Store) Get(ctx context.Context, key store.Key) (store.Item, error) {
	it, err := m.Store.Get(ctx, key)
	m.read(Kind(key.PK, key.SK), itemSize(it), false)
	return it, err
}

func (m *Store) PutOnce(ctx context.Context, it store.Item) error {
	m.write(Kind(it.PK, it.SK), itemSize(it), 1)
	m.indexed(it)
	return m.Store.PutOnce(ctx, it)
}

func (m *Store) CompareAndSwap(ctx context.Context, it store.Item, expected, fence int64) error {
	m.write(Kind(it.PK, it.SK), itemSize(it), 1)
	m.indexed(it)
	return m.Store.CompareAndSwap(ctx, it, expected, fence)
}

func (m *Store) PutOnceIfVersion(ctx context.Context, it store.Item, guard store.Key, expected int64) error {
	// TransactWriteItems bills each item as two writes; the condition check counts as a write too.
	m.write(Kind(it.PK, it.SK), itemSize(it), 2)
	m.indexed(it)
	m.item(Kind(guard.PK, guard.SK), len(guard.PK)+len(guard.SK)+16, 2)
	return m.Store.PutOnceIfVersion(ctx, it, guard, expected)
}

func (m *Store) Transact(ctx context.Context, writes []store.Write) ([]int64, error) {
	m.requests.Add(1)
	seen := map[string]bool{}
	for _, w := range writes {
		var k string
		switch {
		case w.PutOnce != nil:
			k = Kind(w.PutOnce.PK, w.PutOnce.SK)
			m.item(k, itemSize(*w.PutOnce), 2)
			m.indexed(*w.PutOnce)
		case w.CAS != nil:
			k = Kind(w.CAS.Item.PK, w.CAS.Item.SK)
			m.item(k, itemSize(w.CAS.Item), 2)
			m.indexed(w.CAS.Item)
		case w.Check != nil:
			k = Kind(w.Check.Key.PK, w.Check.Key.SK)
			m.item(k, len(w.Check.Key.PK)+len(w.Check.Key.SK)+16, 2) // a ConditionCheck is billed as a write
		case w.Append != nil:
			k = Kind(w.Append.Stream, "EVT")
			m.read(k, 4096, false) // the last entry, to find the next sequence number
			m.item(k, logEntrySize(w.Append.Stream, w.Append.Body), 2)
		}
		if k != "" && !seen[k] {
			seen[k] = true
			m.kind(k, func(u *Usage) { u.WriteRequests++ })
		}
	}
	return m.Store.Transact(ctx, writes)
}

func pageSize(p store.Page) int {
	n := 0
	for _, it := range p.Items {
		n += itemSize(it)
	}
	return n
}

func (m *Store) Query(ctx context.Context, pk string, o store.QueryOptions) (store.Page, error) {
	p, err := m.Store.Query(ctx, pk, o)
	m.read(Kind(pk, o.SKPrefix), pageSize(p), false)
	return p, err
}

func (m *Store) QueryIndex(ctx context.Context, ix store.Index, pk string, o store.QueryOptions) (store.Page, error) {
	p, err := m.Store.QueryIndex(ctx, ix, pk, o)
	k := pk // the open-work index's partitions are a few fixed names (OPEN#ACTION, OPEN#SFN...)
	if !strings.HasPrefix(pk, "OPEN#") {
		k = Kind(pk, "")
	}
	m.read(string(ix)+":"+k, pageSize(p), true)
	return p, err
}

const smallItem = 200

func (m *Store) AcquireLease(ctx context.Context, r store.LeaseRequest) (store.Lease, error) {
	m.write(Kind(r.Resource, "LEASE"), smallItem, 1)
	return m.Store.AcquireLease(ctx, r)
}

func (m *Store) RenewLease(ctx context.Context, l store.Lease, ttl time.Duration, now time.Time) (store.Lease, error) {
	m.write(Kind(l.Resource, "LEASE"), smallItem, 1)
	return m.Store.RenewLease(ctx, l, ttl, now)
}

func (m *Store) ReleaseLease(ctx context.Context, l store.Lease) error {
	m.write(Kind(l.Resource, "LEASE"), smallItem, 1)
	return m.Store.ReleaseLease(ctx, l)
}

func (m *Store) GetLease(ctx context.Context, r string) (store.Lease, error) {
	m.read(Kind(r, "LEASE"), smallItem, false)
	return m.Store.GetLease(ctx, r)
}

func (m *Store) ApplyCounter(ctx context.Context, k store.CounterKey, member string, op store.CounterOp) (store.Counter, bool, error) {
	m.write("SESSION/COUNTER", smallItem+len(member), 1)
	return m.Store.ApplyCounter(ctx, k, member, op)
}

func (m *Store) GetCounter(ctx context.Context, k store.CounterKey) (store.Counter, error) {
	m.read("SESSION/COUNTER", smallItem, false)
	return m.Store.GetCounter(ctx, k)
}

func (m *Store) Append(ctx context.Context, stream string, body []byte) (int64, error) {
	k := Kind(stream, "EVT")
	m.read(k, 4096, false) // the last entry, to find the next sequence number
	m.write(k, logEntrySize(stream, body), 1)
	return m.Store.Append(ctx, stream, body)
}

// logEntrySize approximates a stored log entry: keys, body, the numbers
// and append tag (40), and its hash-chain link.
func logEntrySize(stream string, body []byte) int {
	return len(stream) + len(body) + 40 + store.ChainAttrBytes
}

func (m *Store) ReadLog(ctx context.Context, stream string, after int64, limit int) ([]store.LogEntry, error) {
	es, err := m.Store.ReadLog(ctx, stream, after, limit)
	n := 0
	for _, e := range es {
		n += logEntrySize(stream, e.Body)
	}
	m.read(Kind(stream, "EVT"), n, false)
	return es, err
}
