package store

import (
	"context"
	"time"
)

// Key addresses one item of the logical table.
type Key struct {
	PK string
	SK string
}

func (k Key) String() string { return k.PK + "/" + k.SK }

// Item is one row of the logical table. The domain keeps its record in Body
// (a JSON document); the store only reads the attributes it needs for its
// conditions and indexes, so the two adapters never interpret domain JSON.
type Item struct {
	PK string
	SK string
	// Version is the compare-and-swap version. Items written with PutOnce keep
	// the version they were given (usually 1).
	Version int64
	// Fence is the highest fencing token that wrote this item (0 = unfenced).
	Fence int64
	// GSI1 lists items of one session: GSI1PK = "SESSION#<id>", GSI1SK sorts.
	GSI1PK string
	GSI1SK string
	// GSI2 is the sparse "open work" index the recovery sweeper reads:
	// GSI2PK is set only while the item needs attention (e.g. "OPEN#ACTION"),
	// and removed (empty) once it does not.
	GSI2PK string
	GSI2SK string
	// ExpiresAt is the TTL attribute (zero: keep forever). Expired items may
	// still be returned until the backend removes them; callers decide.
	ExpiresAt time.Time
	// Body is the domain record, JSON encoded.
	Body []byte
}

// Key returns the item's primary key.
func (it Item) Key() Key { return Key{PK: it.PK, SK: it.SK} }

// Index names a secondary index.
type Index string

const (
	IndexSession Index = "gsi1" // GSI1PK / GSI1SK
	IndexOpen    Index = "gsi2" // GSI2PK / GSI2SK (sparse)
)

// QueryOptions bound a query. Items come back in ascending sort-key order
// unless Descending is set.
type QueryOptions struct {
	// SKPrefix restricts the sort key (begins_with); empty matches all.
	SKPrefix string
	// After resumes strictly after this sort key (exclusive start); empty starts at the beginning.
	After string
	// Limit caps the page (0 = the adapter's default of 100; at most 1000).
	Limit      int
	Descending bool
}

// Page is one page of a query.
type Page struct {
	Items []Item
	// Next is the sort key to pass as After for the next page; empty when done.
	Next string
}

// LeaseRequest asks for attempt ownership of one resource. Resource is the
// partition key of the lease item (sort key "LEASE"), e.g. "EXEC#<execution_id>"
// for an execution's owner or "ACTION#<action_id>" for one dispatch attempt.
type LeaseRequest struct {
	Resource  string
	AttemptID string
	TTL       time.Duration
	Now       time.Time
}

// Lease is attempt ownership. Fence increases on every acquisition (first
// acquire, takeover after expiry, or re-acquire by the same attempt) and is
// never reused, so a write carrying an older fence can be rejected.
type Lease struct {
	Resource  string
	AttemptID string
	Fence     int64
	ExpiresAt time.Time
}

// CounterOp is one change to a refusal counter.
type CounterOp string

const (
	// CounterBlock counts a classifier block: consecutive+1, total+1.
	CounterBlock CounterOp = "block"
	// CounterAllow records an allowed (or approved fallback) action: consecutive = 0.
	CounterAllow CounterOp = "allow"
	// CounterResetTotal records a completed threshold-triggered approval: consecutive = 0, total = 0.
	CounterResetTotal CounterOp = "reset_total"
)

// CounterKey names one counter item: a session in one policy accounting epoch.
type CounterKey struct {
	SessionID string
	Epoch     string
}

// Counter is the durable refusal counter state.
type Counter struct {
	Consecutive int64
	Total       int64
}

// LogEntry is one entry of an append-only sequence log. Digest and Prev
// are its link in the stream's hash chain (see chain.go), computed by the
// store in the write that appended it; both are nil on entries appended
// before the chain existed.
type LogEntry struct {
	Stream string
	Seq    int64
	At     time.Time
	Body   []byte
	// Digest is SHA-256 of the body's RFC 8785 canonical form.
	Digest []byte
	// Prev is the hash of the entry before (the stream's genesis for the first).
	Prev []byte
}

// Store is the one persistence interface of the lifecycle. Every method is a
// single conditional operation: it either happens completely or returns an
// error and changes nothing. Conditional failures are typed (see errors.go).
//
// Two adapters implement it (sqlitestore, dynamostore) and one contract
// suite (storetest) runs against both.
type Store interface {
	// Get reads one item. A missing item is ErrNotFound.
	Get(ctx context.Context, key Key) (Item, error)

	// PutOnce writes an item that must not exist yet. If it exists the error
	// is a *ConflictError (errors.Is(err, ErrConflict)) carrying the stored item,
	// so the caller can decide whether the existing one is an idempotent repeat.
	PutOnce(ctx context.Context, item Item) error

	// CompareAndSwap replaces an item whose stored Version equals expected.
	// expected == 0 means "must not exist yet". On mismatch it returns a
	// *VersionConflictError{Expected, Actual} (Actual 0 when absent). The
	// written item carries item.Version, which must be greater than expected.
	//
	// fence > 0 makes it an owner write: it is also rejected with a
	// *FenceError when the stored item was written with a higher fence, and
	// the item's Fence becomes fence. fence == 0 leaves Fence as given.
	CompareAndSwap(ctx context.Context, item Item, expected int64, fence int64) error

	// PutOnceIfVersion writes a new item (must not exist: *ConflictError) only
	// if the guard item's Version equals expected (*VersionConflictError
	// otherwise, ErrNotFound-wrapping *VersionConflictError{Actual:0} when the
	// guard is absent). Both conditions hold together or nothing is written.
	// (Commands use it; Transact is the general form.)
	PutOnceIfVersion(ctx context.Context, item Item, guard Key, expected int64) error

	// Query lists the items of one partition.
	Query(ctx context.Context, pk string, opts QueryOptions) (Page, error)

	// QueryIndex lists the items of one secondary-index partition, ordered by
	// the index sort key (After and SKPrefix apply to the index sort key).
	// Index reads are eventually consistent in DynamoDB.
	QueryIndex(ctx context.Context, index Index, pk string, opts QueryOptions) (Page, error)

	// AcquireLease takes ownership of a resource when no lease exists, the
	// lease expired at or before req.Now, or req.AttemptID already holds it.
	// Otherwise it returns a *LeaseHeldError naming the holder. Every
	// successful acquisition returns a fence greater than any before it.
	AcquireLease(ctx context.Context, req LeaseRequest) (Lease, error)

	// RenewLease extends a lease still held by the same attempt with the same
	// fence (and not expired at now); otherwise *LeaseLostError.
	RenewLease(ctx context.Context, lease Lease, ttl time.Duration, now time.Time) (Lease, error)

	// ReleaseLease gives up a lease held by the same attempt and fence
	// (expires it now, keeping the fence so it is never reused). Releasing a
	// lease that is no longer ours is *LeaseLostError.
	ReleaseLease(ctx context.Context, lease Lease) error

	// GetLease reads the current lease of a resource (ErrNotFound if none).
	GetLease(ctx context.Context, resource string) (Lease, error)

	// ApplyCounter applies op for one action at most once per (action, op):
	// member is the action id. If this (member, op) was already applied the
	// counter is returned unchanged with applied == false. Parallel callers
	// with distinct members are each applied exactly once.
	ApplyCounter(ctx context.Context, key CounterKey, member string, op CounterOp) (c Counter, applied bool, err error)

	// GetCounter reads a counter; a counter never written is zero (no error).
	GetCounter(ctx context.Context, key CounterKey) (Counter, error)

	// Append adds an entry to an append-only log stream and returns its
	// sequence number: 1 for the first entry, then consecutive, never
	// renumbered, no gaps, no duplicates, even under parallel appends.
	// The entry is chained (its Digest and Prev, see chain.go) in the same
	// conditional write: it exists chained or not at all.
	Append(ctx context.Context, stream string, body []byte) (seq int64, err error)

	// Transact applies several writes (put-once, compare-and-swap, log
	// append) as one: every condition holds and every write happens, or
	// nothing is written. A failed condition is a *TransactError naming the
	// part, wrapping the error that part alone would have returned. seqs
	// holds, at the index of each Append part, its sequence number (0 for
	// the other parts). An item may be written once per transaction, a
	// stream appended to once. In DynamoDB it is one TransactWriteItems
	// (billed double); in SQLite one transaction.
	Transact(ctx context.Context, writes []Write) (seqs []int64, err error)

	// ReadLog returns entries with Seq > after, ascending, at most limit
	// (0 = 100, at most 1000).
	ReadLog(ctx context.Context, stream string, after int64, limit int) ([]LogEntry, error)

	// Close releases the store's resources.
	Close() error
}
