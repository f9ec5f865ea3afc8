package store

import (
	"errors"
	"fmt"
	"time"
)

// ErrNotFound: the item does not exist. Never returned as nil, nil.
var ErrNotFound = errors.New("not found")

// ErrConflict: a conditional write lost (the item exists, the version moved,
// the lease is held, the fence is stale). All typed errors below match it
// with errors.Is, so callers that only need "lost the race" test one value.
var ErrConflict = errors.New("conflict")

// ErrInvalid: the request was refused before it reached the backend (an
// empty key, a reserved sort key, a version that does not increase, a body
// over MaxBodyBytes). Retrying the same request cannot succeed.
var ErrInvalid = errors.New("invalid store request")

// ErrUnavailable wraps backend failures (I/O, throttling, a closed
// connection): nothing was written, and the operation may be retried.
var ErrUnavailable = errors.New("store unavailable")

// ConflictError: PutOnce found an existing item.
type ConflictError struct {
	Key      Key
	Existing Item
}

func (e *ConflictError) Error() string { return fmt.Sprintf("item %s already exists", e.Key) }
func (e *ConflictError) Is(target error) bool {
	return target == ErrConflict
}

// VersionConflictError: a compare-and-swap expected one version and found another.
type VersionConflictError struct {
	Key      Key
	Expected int64
	Actual   int64 // 0 when the item does not exist
}

func (e *VersionConflictError) Error() string {
	return fmt.Sprintf("item %s: expected version %d, found %d", e.Key, e.Expected, e.Actual)
}
func (e *VersionConflictError) Is(target error) bool { return target == ErrConflict }

// GuardMissing is PutOnceIfVersion's error when the guard item does not
// exist: a *VersionConflictError{Actual: 0} that also matches ErrNotFound,
// so callers can tell "the execution is gone" from "the version moved".
func GuardMissing(guard Key, expected int64) error {
	return fmt.Errorf("guard %s: %w: %w", guard, ErrNotFound,
		&VersionConflictError{Key: guard, Expected: expected, Actual: 0})
}

// FenceError: an owner write carried a fence older than the one stored.
type FenceError struct {
	Key    Key
	Fence  int64
	Stored int64
}

func (e *FenceError) Error() string {
	return fmt.Sprintf("item %s: fence %d is older than stored fence %d", e.Key, e.Fence, e.Stored)
}
func (e *FenceError) Is(target error) bool { return target == ErrConflict }

// LeaseHeldError: another attempt holds an unexpired lease.
type LeaseHeldError struct {
	Resource  string
	Holder    string
	ExpiresAt time.Time
}

func (e *LeaseHeldError) Error() string {
	return fmt.Sprintf("%s is leased by attempt %s until %s", e.Resource, e.Holder, e.ExpiresAt.UTC().Format(time.RFC3339Nano))
}
func (e *LeaseHeldError) Is(target error) bool { return target == ErrConflict }

// LeaseLostError: the lease is no longer held by this attempt and fence.
type LeaseLostError struct {
	Resource  string
	AttemptID string
	Fence     int64
}

func (e *LeaseLostError) Error() string {
	return fmt.Sprintf("%s: attempt %s (fence %d) no longer holds the lease", e.Resource, e.AttemptID, e.Fence)
}
func (e *LeaseLostError) Is(target error) bool { return target == ErrConflict }

// UnavailableError wraps a backend failure.
type UnavailableError struct {
	Op  string
	Err error
}

func (e *UnavailableError) Error() string { return fmt.Sprintf("%s: %v", e.Op, e.Err) }
func (e *UnavailableError) Unwrap() error { return e.Err }
func (e *UnavailableError) Is(target error) bool {
	return target == ErrUnavailable
}
