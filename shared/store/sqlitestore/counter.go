package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/openprogram/lifecycle/shared/store"
)

// ApplyCounter applies op once per (op, member): the member row in
// counter_members (DynamoDB: the "counted" string set) and the counter
// change commit together, so a crash between them is impossible and a
// repeat finds the member and changes nothing.
func (s *Store) ApplyCounter(ctx context.Context, key store.CounterKey, member string, op store.CounterOp) (store.Counter, bool, error) {
	if err := store.ValidateCounter(key, member, op); err != nil {
		return store.Counter{}, false, fmt.Errorf("apply counter: %w", err)
	}
	k := store.CounterItemKey(key)
	desc := fmt.Sprintf("apply counter %s %s", k, store.CounterMember(op, member))
	var (
		c       store.Counter
		applied bool
	)
	err := s.write(ctx, desc, func(tx *sql.Tx) error {
		res, err := tx.StmtContext(ctx, s.stmts.wInsMember).ExecContext(ctx, k.PK, k.SK, store.CounterMember(op, member))
		if err != nil {
			return unavailable(desc, err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return unavailable(desc, err)
		}
		cur, err := scanCounter(tx.StmtContext(ctx, s.stmts.wGetCounter).QueryRowContext(ctx, k.PK, k.SK))
		if err != nil {
			return unavailable(desc, err)
		}
		if n == 0 {
			c = cur // already counted: report the counter as it stands
			return nil
		}
		if c, err = cur.Apply(op); err != nil {
			return err
		}
		if _, err := tx.StmtContext(ctx, s.stmts.wPutCounter).ExecContext(ctx, k.PK, k.SK, c.Consecutive, c.Total); err != nil {
			return unavailable(desc, err)
		}
		applied = true
		return nil
	})
	if err != nil {
		return store.Counter{}, false, err
	}
	return c, applied, nil
}

// GetCounter reads a counter; one never written reads as zero.
func (s *Store) GetCounter(ctx context.Context, key store.CounterKey) (store.Counter, error) {
	if key.SessionID == "" || key.Epoch == "" {
		return store.Counter{}, fmt.Errorf("get counter: %w: needs a session and an epoch", store.ErrInvalid)
	}
	k := store.CounterItemKey(key)
	c, err := scanCounter(s.stmts.rGetCounter.QueryRowContext(ctx, k.PK, k.SK))
	if err != nil {
		return store.Counter{}, unavailable("get counter "+k.String(), err)
	}
	return c, nil
}

func scanCounter(row *sql.Row) (store.Counter, error) {
	var consecutive, total sql.NullInt64
	err := row.Scan(&consecutive, &total)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Counter{}, nil
	}
	if err != nil {
		return store.Counter{}, err
	}
	return store.Counter{Consecutive: consecutive.Int64, Total: total.Int64}, nil
}
