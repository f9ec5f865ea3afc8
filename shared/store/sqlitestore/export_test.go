package sqlitestore

import (
	"context"
	"fmt"

	"github.com/openprogram/lifecycle/shared/store"
)

// DumpForTest returns every row of every table as text, in key order.
func DumpForTest(ctx context.Context, s *Store) ([]string, error) {
	var out []string
	for _, q := range []string{
		`SELECT 'items', pk, sk, version, fence, ifnull(gsi1pk,'-'), ifnull(gsi1sk,'-'), ifnull(gsi2pk,'-'), ifnull(gsi2sk,'-'),
			ifnull(expires_at,0), hex(ifnull(body,'')), ifnull(attempt_id,'-'), ifnull(lease_until,0), ifnull(at,0),
			ifnull(consecutive,0), ifnull(total,0) FROM items ORDER BY pk, sk`,
		`SELECT 'counter_members', pk, sk, member, 0, '', '', '', '', 0, '', '', 0, 0, 0, 0 FROM counter_members ORDER BY pk, sk, member`,
	} {
		rows, err := s.w.QueryContext(ctx, q)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			vals := make([]any, 16)
			ptrs := make([]any, 16)
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				rows.Close()
				return nil, err
			}
			out = append(out, fmt.Sprint(vals...))
		}
		if err := rows.Close(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// PutLogEntryForTest writes a log entry's row directly (tamper tests).
func PutLogEntryForTest(ctx context.Context, s *Store, stream string, seq, at int64, body, digest, prev []byte) error {
	_, err := s.w.ExecContext(ctx, `INSERT INTO items (pk, sk, version, fence, body, at, digest, prev) VALUES (?, ?, 1, 0, ?, ?, ?, ?)
		ON CONFLICT (pk, sk) DO UPDATE SET body = excluded.body, at = excluded.at, digest = excluded.digest, prev = excluded.prev`,
		stream, store.LogSK(seq), body, at, digest, prev)
	return err
}

// DeleteLogEntryForTest removes a log entry's row directly (tamper tests).
func DeleteLogEntryForTest(ctx context.Context, s *Store, stream string, seq int64) error {
	_, err := s.w.ExecContext(ctx, `DELETE FROM items WHERE pk = ? AND sk = ?`, stream, store.LogSK(seq))
	return err
}
