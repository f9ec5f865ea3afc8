package store

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The store owns three record kinds beside the domain's items: leases,
// counters and log entries. They live in the same logical table as every
// other item (so a Query of a partition sees the same rows in every
// adapter), under sort keys the item writes may not use: a PutOnce or
// CompareAndSwap that could overwrite a lease would let a fence be reused.
const (
	// LeaseSK is the sort key of a lease, under its resource's partition.
	LeaseSK = "LEASE"
	// CounterSKPrefix starts the sort key of a refusal counter, under SessionPK.
	CounterSKPrefix = "COUNTER#"
	// LogSKPrefix starts the sort key of a log entry; the stream is the partition key.
	LogSKPrefix = "EVT#"
)

// Limits shared by both adapters, so the embedded store refuses what
// DynamoDB would refuse instead of letting a test pass that AWS fails.
const (
	// DefaultLimit is the page size when QueryOptions.Limit (or a ReadLog limit) is 0.
	DefaultLimit = 100
	// MaxLimit caps every page.
	MaxLimit = 1000
	// MaxBodyBytes keeps an item under DynamoDB's 400 KB item limit with
	// room for keys and attributes. Larger results belong in a blob store.
	MaxBodyBytes = 384 << 10
	// logSeqDigits zero-pads log sequence numbers so they sort as strings.
	logSeqDigits = 20
)

// ExecPK is the partition key of one execution's items.
func ExecPK(executionID string) string { return "EXEC#" + executionID }

// SessionPK is the partition key of one session's items.
func SessionPK(sessionID string) string { return "SESSION#" + sessionID }

// LeaseKey addresses the lease item of a resource (the resource string is
// the partition key, e.g. "EXEC#<execution_id>" or "ACTION#<action_id>").
func LeaseKey(resource string) Key { return Key{PK: resource, SK: LeaseSK} }

// CounterItemKey addresses the item that holds one counter.
func CounterItemKey(k CounterKey) Key {
	return Key{PK: SessionPK(k.SessionID), SK: CounterSKPrefix + k.Epoch}
}

// LogSK is the sort key of log entry seq: zero-padded so string order is
// numeric order.
func LogSK(seq int64) string { return fmt.Sprintf("%s%0*d", LogSKPrefix, logSeqDigits, seq) }

// ParseLogSK returns the sequence number of a log sort key.
func ParseLogSK(sk string) (int64, error) {
	digits, ok := strings.CutPrefix(sk, LogSKPrefix)
	if !ok || len(digits) != logSeqDigits {
		return 0, fmt.Errorf("%w: %q is not a log sort key", ErrInvalid, sk)
	}
	seq, err := strconv.ParseInt(digits, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %q is not a log sort key: %v", ErrInvalid, sk, err)
	}
	return seq, nil
}

// CounterMember is the identity under which one counter change is
// remembered: the op is part of it, because an action's block and its later
// reset are two different changes that must each apply once.
func CounterMember(op CounterOp, member string) string { return string(op) + ":" + member }

// Apply returns the counter after op (see the CounterOp constants).
func (c Counter) Apply(op CounterOp) (Counter, error) {
	switch op {
	case CounterBlock:
		return Counter{Consecutive: c.Consecutive + 1, Total: c.Total + 1}, nil
	case CounterAllow:
		return Counter{Consecutive: 0, Total: c.Total}, nil
	case CounterResetTotal:
		return Counter{}, nil
	}
	return c, fmt.Errorf("%w: unknown counter op %q", ErrInvalid, op)
}

// ReservedSK reports whether sk belongs to a record kind the store owns
// (lease, counter, log entry), which item writes must not touch.
func ReservedSK(sk string) bool {
	return sk == LeaseSK || strings.HasPrefix(sk, CounterSKPrefix) || strings.HasPrefix(sk, LogSKPrefix)
}

// ValidateItem checks an item before an adapter writes it. Both adapters
// call it so they refuse exactly the same items.
func ValidateItem(it Item) error {
	switch {
	case it.PK == "" || it.SK == "":
		return fmt.Errorf("%w: item %s needs a partition and a sort key", ErrInvalid, it.Key())
	case ReservedSK(it.SK):
		return fmt.Errorf("%w: item %s: sort key is reserved for leases, counters and logs", ErrInvalid, it.Key())
	case (it.GSI1PK == "") != (it.GSI1SK == ""):
		// DynamoDB leaves an item out of an index unless both index keys are
		// present; requiring both or neither keeps the embedded store equal.
		return fmt.Errorf("%w: item %s: GSI1PK and GSI1SK are set together or not at all", ErrInvalid, it.Key())
	case (it.GSI2PK == "") != (it.GSI2SK == ""):
		return fmt.Errorf("%w: item %s: GSI2PK and GSI2SK are set together or not at all", ErrInvalid, it.Key())
	case it.Version < 0 || it.Fence < 0:
		return fmt.Errorf("%w: item %s: negative version or fence", ErrInvalid, it.Key())
	case len(it.Body) > MaxBodyBytes:
		return fmt.Errorf("%w: item %s: body of %d bytes exceeds %d", ErrInvalid, it.Key(), len(it.Body), MaxBodyBytes)
	}
	return nil
}

// ValidateKey checks a key before a read or a guard.
func ValidateKey(k Key) error {
	if k.PK == "" || k.SK == "" {
		return fmt.Errorf("%w: key %s needs a partition and a sort key", ErrInvalid, k)
	}
	return nil
}

// ValidateLeaseRequest checks an AcquireLease request.
func ValidateLeaseRequest(req LeaseRequest) error {
	if req.Resource == "" || req.AttemptID == "" || req.TTL <= 0 || req.Now.IsZero() {
		return fmt.Errorf("%w: lease request needs a resource, an attempt, a positive TTL and a time", ErrInvalid)
	}
	return nil
}

// ValidateCounter checks an ApplyCounter request.
func ValidateCounter(key CounterKey, member string, op CounterOp) error {
	if key.SessionID == "" || key.Epoch == "" || member == "" {
		return fmt.Errorf("%w: counter change needs a session, an epoch and a member", ErrInvalid)
	}
	if _, err := (Counter{}).Apply(op); err != nil {
		return err
	}
	return nil
}

// PageLimit applies the default and the cap to a requested page size.
func PageLimit(n int) int {
	switch {
	case n <= 0:
		return DefaultLimit
	case n > MaxLimit:
		return MaxLimit
	}
	return n
}

// ExpiresAtSeconds is the TTL attribute: epoch seconds, 0 for "keep
// forever". Both adapters keep ExpiresAt at whole seconds because the
// DynamoDB TTL attribute has no finer unit.
func ExpiresAtSeconds(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.Unix()
}

// ExpiresAtTime is the inverse of ExpiresAtSeconds.
func ExpiresAtTime(sec int64) time.Time {
	if sec == 0 {
		return time.Time{}
	}
	return time.Unix(sec, 0).UTC()
}

// UnixMicro is how both adapters store lease expiries and log times:
// microseconds since the epoch, 0 for the zero time. Microseconds (not
// nanoseconds) because they stay below 2^53 until the year 2255, so every
// client that reads DynamoDB numbers as float64 (JavaScript, minidyn)
// compares them exactly; lease times are therefore kept to the microsecond.
func UnixMicro(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}

// FromUnixMicro is the inverse of UnixMicro.
func FromUnixMicro(us int64) time.Time {
	if us == 0 {
		return time.Time{}
	}
	return time.UnixMicro(us).UTC()
}

// PrefixPosition tells where a sort key lies relative to the set of keys
// starting with prefix: -1 before every one of them, 0 inside (it starts
// with prefix), +1 after every one of them. Adapters use it to turn
// QueryOptions.After into a start position their backend accepts.
func PrefixPosition(sk, prefix string) int {
	if strings.HasPrefix(sk, prefix) {
		return 0
	}
	// sk differs from prefix within the prefix's length (or is a shorter
	// prefix of it); that first difference orders sk against all of them.
	if sk < prefix {
		return -1
	}
	return 1
}

// PrefixEnd is the smallest string greater than every string starting with
// prefix, or ok == false when there is none (prefix empty or all 0xff).
func PrefixEnd(prefix string) (end string, ok bool) {
	b := []byte(prefix)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1]), true
		}
	}
	return "", false
}
