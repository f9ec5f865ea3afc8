// Package sqlitestore is the embedded store.Store: one SQLite file
// (modernc.org/sqlite, pure Go, no cgo) in WAL mode, the default behind
// `make run` (./.lifecycle/state.db).
//
// It owns the physical layout of the logical table described in
// ../SCHEMA.md: an items table keyed (pk, sk) that holds every record kind
// (domain items, leases, counters, log entries), partial indexes for GSI1
// and the sparse GSI2, and a counter_members table standing in for the
// DynamoDB "counted" string set. The schema version is PRAGMA user_version;
// Open migrates an older file in one transaction (version 2 added the log
// entries' hash-chain columns digest and prev; an append chains its entry
// inside the write that takes its number, from the head it reads or, with
// the item cache, remembers).
//
// Every write is one BEGIN IMMEDIATE transaction on a single writer
// connection: conditions are checked and the write applied inside it
// (INSERT ... ON CONFLICT DO NOTHING, UPDATE ... WHERE version = ?), so a
// write either commits whole or leaves nothing. A database error is a
// *store.UnavailableError and the transaction is rolled back. Reads use a
// pool of read-only connections; WAL lets them run while a write is in
// progress, and each sees the last committed state. A background goroutine
// (stopped by Close) checkpoints the WAL into the database file on its own
// connection, so no write pays for copying pages into a large file.
//
// Durability: the default is PRAGMA synchronous=NORMAL in WAL mode. A
// committed transaction is in the WAL file before Commit returns, so a
// killed process (SIGKILL, panic, OOM) keeps everything committed. What
// NORMAL gives up is the fsync per commit: after a power loss or kernel
// crash the transactions committed since the last WAL sync (checkpoint) may
// be lost, never half-applied: the database stays consistent. Open with
// WithSynchronousFull to fsync every commit when that matters more than
// write throughput.
//
// Bytes written: SQLite appends every page a commit changed to the WAL, so
// a write costs whole pages, not its item's size. Three choices keep that
// down: 4 KB pages (pageSize), a compare-and-swap that leaves the GSI
// columns out of its UPDATE when they do not change (else SQLite rewrites
// both index entries: about 26 KB of WAL per CAS instead of 9 KB at 8 KB
// pages), and group commit, whose batches share the pages they touch.
// Writes whose conditions are all checked before they change anything
// (every operation but ApplyCounter and Transact) skip the per-write
// SAVEPOINT a batch otherwise needs. A compare-and-swap whose item is in
// the item cache at the expected version skips reading the row's index
// keys. Transact runs its parts in order inside one savepoint of the
// batch: the first failed condition undoes the parts before it.
//
// Tests inject failures with WithFault, which wraps the SQLite driver so a
// chosen statement (or BEGIN / COMMIT) fails the way a disk error would.
//
// Benchmark: the cost of each operation with 1k and with 100k stored
// actions (bench_test.go says what an action is; the 100k database is built
// once and cached under os.TempDir, keyed by schema and fixture version).
// It reports wall time and cpu-ns/op, the process CPU time per operation,
// which is the figure to compare on a shared, busy machine:
//
//	go test -run '^$' -bench . -benchmem -benchtime 2000x ./shared/store/sqlitestore/
//
// Measured on 2 shared cores (cpu µs/op at 1k → 100k actions; 4 KB pages,
// no mmap): Get 17 → 27, CompareAndSwap 43 → 43, Query (one execution,
// ~55 items) 235 → 300, QueryIndex (20 of a session) 114 → 198, QueryIndex
// of the open index 45 → 55, PutOnce 58 → 57, AcquireLease 41 → 40,
// ApplyCounter 55 → 60, Append 60 → 59. Writes stay flat; uncached reads
// of a 100k store cost up to 1.7 times those of a small one (one more
// b-tree level with 4 KB pages, and page reads through pread instead of a
// mapping). The lifecycle reads almost only through the item cache, and
// its end-to-end cost with 100k actions stored stays within 1.2 times
// (make bench). With 8 KB pages and a 2 GB mmap these reads were 12 → 16
// and 108 → 135, and every action cost more CPU and wrote twice the WAL.
//
// This package must never interpret Item.Body, and never hold a write
// transaction open across anything but its own statements.
package sqlitestore
