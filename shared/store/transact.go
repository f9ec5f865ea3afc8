package store

import (
	"errors"
	"fmt"
)

// Write is one part of a Transact: exactly one of its fields is set.
type Write struct {
	// PutOnce writes an item that must not exist yet (*ConflictError).
	PutOnce *Item
	// CAS replaces an item as CompareAndSwap does.
	CAS *CASWrite
	// Append adds an entry to a log stream as Append does.
	Append *AppendWrite
	// Check writes nothing: it holds only while the item's version equals
	// Expected (a DynamoDB ConditionCheck). A child execution is created
	// with a Check of its parent's version, so it cannot appear beside a
	// parent that moved (to cancelling, say) since it was read.
	Check *CheckWrite
}

// CheckWrite is a condition on an item a Transact does not write: the
// item exists and its version is Expected (>= 1). On failure the part's
// error is a *VersionConflictError (Actual 0 when the item is absent).
type CheckWrite struct {
	Key      Key
	Expected int64
}

// CASWrite is a compare-and-swap inside a Transact (see CompareAndSwap).
type CASWrite struct {
	Item     Item
	Expected int64
	Fence    int64
}

// Stored is the item as the part stores it: an owner write (Fence > 0)
// stores its fence.
func (c CASWrite) Stored() Item {
	it := c.Item
	if c.Fence > 0 {
		it.Fence = c.Fence
	}
	return it
}

// AppendWrite is a log append inside a Transact (see Append).
type AppendWrite struct {
	Stream string
	Body   []byte
}

// PutOnceWrite, CASOf and AppendOf build the parts of a Transact.
func PutOnceWrite(it Item) Write { return Write{PutOnce: &it} }

// CASOf is a compare-and-swap part (fence 0: not an owner write).
func CASOf(it Item, expected, fence int64) Write {
	return Write{CAS: &CASWrite{Item: it, Expected: expected, Fence: fence}}
}

// AppendOf is a log append part.
func AppendOf(stream string, body []byte) Write {
	return Write{Append: &AppendWrite{Stream: stream, Body: body}}
}

// CheckOf is a condition part: key's version must be expected.
func CheckOf(key Key, expected int64) Write {
	return Write{Check: &CheckWrite{Key: key, Expected: expected}}
}

// MaxTransactWrites bounds one Transact (DynamoDB allows 100 items; the
// lifecycle needs a few).
const MaxTransactWrites = 25

// TransactError names the part of a Transact whose condition failed. Err is
// what the single operation would have returned (*ConflictError,
// *VersionConflictError, *FenceError); errors.Is and errors.As see it.
type TransactError struct {
	Index int
	Err   error
}

func (e *TransactError) Error() string { return fmt.Sprintf("transaction part %d: %v", e.Index, e.Err) }
func (e *TransactError) Unwrap() error { return e.Err }

// ValidateTransact refuses an empty or oversized transaction, a part that
// is not exactly one write, an invalid part, two parts on one item and two
// appends to one stream.
func ValidateTransact(writes []Write) error {
	if len(writes) == 0 || len(writes) > MaxTransactWrites {
		return fmt.Errorf("%w: a transaction has 1 to %d parts, not %d", ErrInvalid, MaxTransactWrites, len(writes))
	}
	keys := map[Key]bool{}
	streams := map[string]bool{}
	for i, w := range writes {
		n := 0
		var err error
		if w.PutOnce != nil {
			n++
			err = ValidateItem(*w.PutOnce)
			if err == nil && keys[w.PutOnce.Key()] {
				err = fmt.Errorf("%w: item %s is written twice", ErrInvalid, w.PutOnce.Key())
			}
			if err == nil {
				keys[w.PutOnce.Key()] = true
			}
		}
		if w.CAS != nil && err == nil {
			n++
			c := w.CAS
			err = ValidateItem(c.Item)
			if err == nil && (c.Expected < 0 || c.Fence < 0 || c.Item.Version <= c.Expected) {
				err = fmt.Errorf("%w: item %s: version %d must be greater than expected %d (fence %d)",
					ErrInvalid, c.Item.Key(), c.Item.Version, c.Expected, c.Fence)
			}
			if err == nil && keys[c.Item.Key()] {
				err = fmt.Errorf("%w: item %s is written twice", ErrInvalid, c.Item.Key())
			}
			if err == nil {
				keys[c.Item.Key()] = true
			}
		}
		if w.Append != nil && err == nil {
			n++
			a := w.Append
			switch {
			case a.Stream == "":
				err = fmt.Errorf("%w: empty stream", ErrInvalid)
			case len(a.Body) > MaxBodyBytes:
				err = fmt.Errorf("%w: body of %d bytes exceeds %d", ErrInvalid, len(a.Body), MaxBodyBytes)
			case streams[a.Stream]:
				err = fmt.Errorf("%w: two appends to stream %s", ErrInvalid, a.Stream)
			}
			streams[a.Stream] = true
		}
		if w.Check != nil && err == nil {
			n++
			c := w.Check
			err = ValidateKey(c.Key)
			if err == nil && c.Expected < 1 {
				err = fmt.Errorf("%w: check of %s: expected version %d, must be >= 1", ErrInvalid, c.Key, c.Expected)
			}
			if err == nil && keys[c.Key] {
				err = fmt.Errorf("%w: item %s is used twice", ErrInvalid, c.Key)
			}
			if err == nil {
				keys[c.Key] = true
			}
		}
		if n != 1 && err == nil {
			err = fmt.Errorf("%w: a part sets %d of PutOnce, CAS, Append and Check, not one", ErrInvalid, n)
		}
		if err != nil {
			return fmt.Errorf("transaction part %d: %w", i, err)
		}
	}
	return nil
}

// IsTransactCondition reports whether err is a failed condition of a
// Transact part (as opposed to an invalid request or an unavailable store).
func IsTransactCondition(err error) bool {
	var te *TransactError
	return errors.As(err, &te)
}
