package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/openprogram/lifecycle/shared/store"
)

// Append reads the stream's last sequence number and inserts the next one
// in the same write transaction. The single writer connection serialises
// appends, so there is no race to lose and no retry.
func (s *Store) Append(ctx context.Context, stream string, body []byte) (int64, error) {
	if stream == "" {
		return 0, fmt.Errorf("append: %w: empty stream", store.ErrInvalid)
	}
	if len(body) > store.MaxBodyBytes {
		return 0, fmt.Errorf("append to %s: %w: body of %d bytes exceeds %d", stream, store.ErrInvalid, len(body), store.MaxBodyBytes)
	}
	op := "append to " + stream
	var seq int64
	err := s.writeChecked(ctx, op, func(tx *sql.Tx) error {
		var err error
		seq, err = s.appendTx(ctx, tx, op, stream, body)
		return err
	})
	if err != nil {
		return 0, err
	}
	return seq, nil
}

// logHead is a stream's last entry as an append needs it: its number and
// its chain hash (nil when it was appended before the chain existed).
type logHead struct {
	seq  int64
	hash []byte
}

// appendTx inserts the stream's next entry, chained after its head, in the
// write transaction tx: the number and the link are taken together.
func (s *Store) appendTx(ctx context.Context, tx *sql.Tx, op, stream string, body []byte) (int64, error) {
	head, known := s.rememberedHead(stream)
	if !known {
		var (
			last         string
			at           sql.NullInt64
			digest, prev []byte
		)
		err := tx.StmtContext(ctx, s.stmts.wLastLog).QueryRowContext(ctx, stream).Scan(&last, &at, &digest, &prev)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return 0, unavailable(op, err)
		default:
			n, err := store.ParseLogSK(last)
			if err != nil {
				return 0, fmt.Errorf("%s: last entry of %s: %w", op, stream, err)
			}
			e := store.LogEntry{Stream: stream, Seq: n, At: store.FromUnixMicro(at.Int64), Digest: digest, Prev: prev}
			head = logHead{seq: n, hash: e.Hash()}
		}
	}
	seq, at := head.seq+1, time.Now().UnixMicro()
	link := store.NextLink(stream, head.hash, seq, at, body)
	if _, err := tx.StmtContext(ctx, s.stmts.wInsLog).ExecContext(ctx, stream, store.LogSK(seq), body, at, link.Digest, link.Prev); err != nil {
		return 0, unavailable(op, err)
	}
	if s.reqSeqs != nil {
		s.reqSeqs[stream] = logHead{seq: seq, hash: link.Hash}
	}
	return seq, nil
}

// rememberedHead is the stream's head as this writer knows it: written by
// the running write, by an earlier write of its batch, or committed (see
// Store.seqs).
func (s *Store) rememberedHead(stream string) (logHead, bool) {
	if s.seqs == nil {
		return logHead{}, false
	}
	if h, ok := s.reqSeqs[stream]; ok {
		return h, true
	}
	if h, ok := s.batchSeqs[stream]; ok {
		return h, true
	}
	h, ok := s.seqs[stream]
	return h, ok
}

// ReadLog returns the entries after seq after, ascending.
func (s *Store) ReadLog(ctx context.Context, stream string, after int64, limit int) ([]store.LogEntry, error) {
	if stream == "" || after < 0 {
		return nil, fmt.Errorf("read log: %w: needs a stream and a non-negative position", store.ErrInvalid)
	}
	op := "read log " + stream
	rows, err := s.stmts.rReadLog.QueryContext(ctx, stream, store.LogSK(after), store.PageLimit(limit))
	if err != nil {
		return nil, unavailable(op, err)
	}
	defer rows.Close()
	var entries []store.LogEntry
	for rows.Next() {
		var (
			sk                 string
			at                 sql.NullInt64
			body, digest, prev []byte
		)
		if err := rows.Scan(&sk, &at, &body, &digest, &prev); err != nil {
			return nil, unavailable(op, err)
		}
		seq, err := store.ParseLogSK(sk)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
		e := store.LogEntry{Stream: stream, Seq: seq, At: store.FromUnixMicro(at.Int64)}
		if len(body) > 0 {
			e.Body = body
		}
		if len(digest) > 0 || len(prev) > 0 {
			e.Digest, e.Prev = digest, prev
		}
		entries = append(entries, e)
	}
	if err := rows.Err(); err != nil {
		return nil, unavailable(op, err)
	}
	return entries, nil
}
