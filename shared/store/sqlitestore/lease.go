package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/openprogram/lifecycle/shared/store"
)

// A lease is the item <resource>/LEASE (e.g. EXEC#<id>/LEASE) with attempt_id, fence and
// lease_until (store.UnixMicro; 0 once released). Its version is its
// fence. The item is never deleted, so the next fence always continues
// from the last one.

type leaseRow struct {
	attempt string
	fence   int64
	until   int64
}

func (r leaseRow) lease(resource string) store.Lease {
	return store.Lease{Resource: resource, AttemptID: r.attempt, Fence: r.fence, ExpiresAt: store.FromUnixMicro(r.until)}
}

func scanLease(row *sql.Row) (leaseRow, bool, error) {
	var (
		r       leaseRow
		attempt sql.NullString
		until   sql.NullInt64
	)
	err := row.Scan(&attempt, &r.fence, &until)
	if errors.Is(err, sql.ErrNoRows) {
		return leaseRow{}, false, nil
	}
	if err != nil {
		return leaseRow{}, false, err
	}
	r.attempt, r.until = attempt.String, until.Int64
	return r, true, nil
}

// AcquireLease takes the lease when absent, expired at req.Now, or already
// held by req.AttemptID; the fence always moves up by one.
func (s *Store) AcquireLease(ctx context.Context, req store.LeaseRequest) (store.Lease, error) {
	if err := store.ValidateLeaseRequest(req); err != nil {
		return store.Lease{}, fmt.Errorf("acquire lease: %w", err)
	}
	pk := req.Resource
	op := "acquire lease " + pk
	until := req.Now.Add(req.TTL).UnixMicro()
	var got store.Lease
	err := s.writeChecked(ctx, op, func(tx *sql.Tx) error {
		cur, found, err := scanLease(tx.StmtContext(ctx, s.stmts.wGetLease).QueryRowContext(ctx, pk))
		if err != nil {
			return unavailable(op, err)
		}
		if !found {
			if _, err := tx.StmtContext(ctx, s.stmts.wInsLease).ExecContext(ctx, pk, 1, 1, req.AttemptID, until); err != nil {
				return unavailable(op, err)
			}
			got = leaseRow{attempt: req.AttemptID, fence: 1, until: until}.lease(req.Resource)
			return nil
		}
		if cur.attempt != req.AttemptID && cur.until > req.Now.UnixMicro() {
			return &store.LeaseHeldError{Resource: req.Resource, Holder: cur.attempt, ExpiresAt: store.FromUnixMicro(cur.until)}
		}
		next := leaseRow{attempt: req.AttemptID, fence: cur.fence + 1, until: until}
		if err := s.updateLeaseTx(ctx, tx, pk, cur.fence, next); err != nil {
			return unavailable(op, err)
		}
		got = next.lease(req.Resource)
		return nil
	})
	return got, err
}

func (s *Store) updateLeaseTx(ctx context.Context, tx *sql.Tx, pk string, oldFence int64, next leaseRow) error {
	res, err := tx.StmtContext(ctx, s.stmts.wUpdLease).ExecContext(ctx, next.fence, next.fence, next.attempt, next.until, pk, oldFence)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		// Impossible inside the transaction that just read the row; a
		// database that says otherwise is not one to keep writing to.
		return errors.Join(err, fmt.Errorf("lease row changed under the write transaction (%d rows)", n))
	}
	return nil
}

// checkOwner reads the lease and returns *LeaseLostError unless it is still
// held by lease's attempt with lease's fence.
func (s *Store) checkOwner(ctx context.Context, tx *sql.Tx, op string, lease store.Lease) (leaseRow, error) {
	cur, found, err := scanLease(tx.StmtContext(ctx, s.stmts.wGetLease).QueryRowContext(ctx, lease.Resource))
	if err != nil {
		return leaseRow{}, unavailable(op, err)
	}
	if !found || cur.attempt != lease.AttemptID || cur.fence != lease.Fence {
		return leaseRow{}, &store.LeaseLostError{Resource: lease.Resource, AttemptID: lease.AttemptID, Fence: lease.Fence}
	}
	return cur, nil
}

// RenewLease extends a lease still held, unexpired at now, by the same
// attempt and fence.
func (s *Store) RenewLease(ctx context.Context, lease store.Lease, ttl time.Duration, now time.Time) (store.Lease, error) {
	if lease.Resource == "" || lease.AttemptID == "" || ttl <= 0 || now.IsZero() {
		return store.Lease{}, fmt.Errorf("renew lease: %w: needs an execution, an attempt, a positive TTL and a time", store.ErrInvalid)
	}
	pk := lease.Resource
	op := "renew lease " + pk
	var got store.Lease
	err := s.writeChecked(ctx, op, func(tx *sql.Tx) error {
		cur, err := s.checkOwner(ctx, tx, op, lease)
		if err != nil {
			return err
		}
		if cur.until <= now.UnixMicro() {
			return &store.LeaseLostError{Resource: lease.Resource, AttemptID: lease.AttemptID, Fence: lease.Fence}
		}
		next := leaseRow{attempt: cur.attempt, fence: cur.fence, until: now.Add(ttl).UnixMicro()}
		if err := s.updateLeaseTx(ctx, tx, pk, cur.fence, next); err != nil {
			return unavailable(op, err)
		}
		got = next.lease(lease.Resource)
		return nil
	})
	return got, err
}

// ReleaseLease expires a lease held by the same attempt and fence. The item
// and its fence stay, so the next acquisition gets fence+1.
func (s *Store) ReleaseLease(ctx context.Context, lease store.Lease) error {
	if lease.Resource == "" || lease.AttemptID == "" {
		return fmt.Errorf("release lease: %w: needs an execution and an attempt", store.ErrInvalid)
	}
	pk := lease.Resource
	op := "release lease " + pk
	return s.writeChecked(ctx, op, func(tx *sql.Tx) error {
		cur, err := s.checkOwner(ctx, tx, op, lease)
		if err != nil {
			return err
		}
		if cur.until == 0 {
			return nil // already released by this owner: releasing again is a no-op
		}
		if err := s.updateLeaseTx(ctx, tx, pk, cur.fence, leaseRow{attempt: cur.attempt, fence: cur.fence, until: 0}); err != nil {
			return unavailable(op, err)
		}
		return nil
	})
}

// GetLease reads the current lease (ErrNotFound if there never was one). A
// released lease reads back with a zero ExpiresAt.
func (s *Store) GetLease(ctx context.Context, resource string) (store.Lease, error) {
	if resource == "" {
		return store.Lease{}, fmt.Errorf("get lease: %w: empty execution id", store.ErrInvalid)
	}
	pk := resource
	cur, found, err := scanLease(s.stmts.rGetLease.QueryRowContext(ctx, pk))
	if err != nil {
		return store.Lease{}, unavailable("get lease "+pk, err)
	}
	if !found {
		return store.Lease{}, fmt.Errorf("get lease %s: %w", pk, store.ErrNotFound)
	}
	return cur.lease(resource), nil
}
