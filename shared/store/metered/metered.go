package metered

import (
	"context"
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
	BytesWritten  int64
}

// Sub returns u - o.
func (u Usage) Sub(o Usage) Usage {
	return Usage{Reads: u.Reads - o.Reads, Writes: u.Writes - o.Writes, WriteRequests: u.WriteRequests - o.WriteRequests,
		RCU: u.RCU - o.RCU, WCU: u.WCU - o.WCU, BytesWritten: u.BytesWritten - o.BytesWritten}
}

// Store counts usage of an underlying store.
type Store struct {
	store.Store
	reads, writes, bytes atomic.Int64
	requests             atomic.Int64
	rcuHalf, wcu         atomic.Int64 // rcu in half units
}

var _ store.Store = (*Store)(nil)

// Wrap meters s.
func Wrap(s store.Store) *Store { return &Store{Store: s} }

// Usage returns the counts so far.
func (m *Store) Usage() Usage {
	return Usage{Reads: m.reads.Load(), Writes: m.writes.Load(), WriteRequests: m.requests.Load(), RCU: float64(m.rcuHalf.Load()) / 2,
		WCU: float64(m.wcu.Load()), BytesWritten: m.bytes.Load()}
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

func units(size, per int) int64 {
	if size <= 0 {
		return 1
	}
	return int64((size + per - 1) / per)
}

// write counts a write request of one item.
func (m *Store) write(size int, factor int64) {
	m.requests.Add(1)
	m.item(size, factor)
}

// item counts one item written (factor 2: a transaction's part).
func (m *Store) item(size int, factor int64) {
	m.writes.Add(1)
	m.bytes.Add(int64(size))
	m.wcu.Add(units(size, 1024) * factor)
}

// read counts strongly consistent reads of size bytes (eventual: half).
func (m *Store) read(size int, eventual bool) {
	m.reads.Add(1)
	u := units(size, 4096) * 2
	if eventual {
		u /= 2
	}
	m.rcuHalf.Add(u)
}

func (m *Store) Get(ctx context.Context, key store.Key) (store.Item, error) {
	it, err := m.Store.Get(ctx, key)
	m.read(itemSize(it), false)
	return it, err
}

func (m *Store) PutOnce(ctx context.Context, it store.Item) error {
	m.write(itemSize(it), 1)
	return m.Store.PutOnce(ctx, it)
}

func (m *Store) CompareAndSwap(ctx context.Context, it store.Item, expected, fence int64) error {
	m.write(itemSize(it), 1)
	return m.Store.CompareAndSwap(ctx, it, expected, fence)
}

func (m *Store) PutOnceIfVersion(ctx context.Context, it store.Item, guard store.Key, expected int64) error {
	// TransactWriteItems bills each item as two writes; the condition check counts as a write too.
	m.write(itemSize(it), 2)
	m.item(len(guard.PK)+len(guard.SK)+16, 2)
	return m.Store.PutOnceIfVersion(ctx, it, guard, expected)
}

func (m *Store) Transact(ctx context.Context, writes []store.Write) ([]int64, error) {
	m.requests.Add(1)
	for _, w := range writes {
		switch {
		case w.PutOnce != nil:
			m.item(itemSize(*w.PutOnce), 2)
		case w.CAS != nil:
			m.item(itemSize(w.CAS.Item), 2)
		case w.Check != nil:
			m.item(len(w.Check.Key.PK)+len(w.Check.Key.SK)+16, 2) // a ConditionCheck is billed as a write
		case w.Append != nil:
			m.read(4096, false) // the last entry, to find the next sequence number
			m.item(logEntrySize(w.Append.Stream, w.Append.Body), 2)
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
	m.read(pageSize(p), false)
	return p, err
}

func (m *Store) QueryIndex(ctx context.Context, ix store.Index, pk string, o store.QueryOptions) (store.Page, error) {
	p, err := m.Store.QueryIndex(ctx, ix, pk, o)
	m.read(pageSize(p), true)
	return p, err
}

const smallItem = 200

func (m *Store) AcquireLease(ctx context.Context, r store.LeaseRequest) (store.Lease, error) {
	m.write(smallItem, 1)
	return m.Store.AcquireLease(ctx, r)
}

func (m *Store) RenewLease(ctx context.Context, l store.Lease, ttl time.Duration, now time.Time) (store.Lease, error) {
	m.write(smallItem, 1)
	return m.Store.RenewLease(ctx, l, ttl, now)
}

func (m *Store) ReleaseLease(ctx context.Context, l store.Lease) error {
	m.write(smallItem, 1)
	return m.Store.ReleaseLease(ctx, l)
}

func (m *Store) GetLease(ctx context.Context, r string) (store.Lease, error) {
	m.read(smallItem, false)
	return m.Store.GetLease(ctx, r)
}

func (m *Store) ApplyCounter(ctx context.Context, k store.CounterKey, member string, op store.CounterOp) (store.Counter, bool, error) {
	m.write(smallItem+len(member), 1)
	return m.Store.ApplyCounter(ctx, k, member, op)
}

func (m *Store) GetCounter(ctx context.Context, k store.CounterKey) (store.Counter, error) {
	m.read(smallItem, false)
	return m.Store.GetCounter(ctx, k)
}

func (m *Store) Append(ctx context.Context, stream string, body []byte) (int64, error) {
	m.read(4096, false) // the last entry, to find the next sequence number
	m.write(logEntrySize(stream, body), 1)
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
	m.read(n, false)
	return es, err
}
