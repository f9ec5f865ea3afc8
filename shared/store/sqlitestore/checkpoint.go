package sqlitestore

import (
	"context"
	"database/sql"
	"sync/atomic"
	"time"
)

// checkpointInterval is how often the background checkpointer copies the
// WAL back into the database file while writes are happening. Short on
// purpose: each checkpoint fsyncs the WAL and the database file, and on
// ext4 a commit that lands while a large fsync is flushing waits for it
// (measured: single commits of 10-25 ms, one action in fifty slowed, with
// 100 ms; a 1 s interval made them 60 ms). Syncing 25 ms of writes at a
// time keeps those waits to a few milliseconds.
const checkpointInterval = 25 * time.Millisecond

// walBackstopPages is the writer's own auto-checkpoint threshold (8 MB of
// WAL at 4 KB pages). Under continuous writes a PASSIVE checkpoint never
// catches up with the last frames, so SQLite cannot restart the WAL from
// its beginning; when the WAL reaches this size the commit that crosses it
// checkpoints the few frames left (the background has copied the rest),
// fsyncs, and the next write starts the WAL over. That commit holds up
// every write queued behind it, and the more pages it syncs the longer:
// with 100k actions stored and 700 actions/s offered, the p99 was 66-71 ms
// with 32768 pages, 21-24 ms with 8192, 13-19 ms with 2048 (make bench),
// and a short WAL also keeps SQLite's page lookups in the WAL index cheap
// (32 clients: about 1,140 actions/s with 8192 pages, 1,250 with 2048).
const walBackstopPages = 2048

// checkpointer moves WAL checkpoints off the write path. With SQLite's
// default, the commit that crosses 1000 WAL pages copies them into the
// database file and fsyncs it before returning, so one write in a few
// hundred pays for all of them, and the bill grows with the database
// (random pages of a large file instead of the same hot pages of a small
// one). A PASSIVE checkpoint on its own connection does the same work
// without blocking the writer or the readers.
type checkpointer struct {
	db     *sql.DB
	writes atomic.Int64 // commits since the last checkpoint
	cancel context.CancelFunc
	done   chan struct{}
}

func startCheckpointer(db *sql.DB) *checkpointer {
	ctx, cancel := context.WithCancel(context.Background())
	c := &checkpointer{db: db, cancel: cancel, done: make(chan struct{})}
	go c.run(ctx)
	return c
}

// wrote records a commit; the next tick checkpoints.
func (c *checkpointer) wrote() { c.writes.Add(1) }

func (c *checkpointer) run(ctx context.Context) {
	defer close(c.done)
	tick := time.NewTicker(checkpointInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if c.writes.Swap(0) == 0 {
			continue
		}
		// A failed or partial checkpoint is not an error anyone can act on:
		// the frames stay in the WAL (still durable) and the next tick, or
		// the writer's backstop, copies them.
		var busy, logFrames, done int64
		_ = c.db.QueryRowContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &logFrames, &done)
	}
}

// stop ends the goroutine and waits for it.
func (c *checkpointer) stop() {
	c.cancel()
	<-c.done
}
