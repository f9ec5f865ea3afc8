package sqlitestore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"modernc.org/sqlite"

	"github.com/openprogram/lifecycle/shared/store"
)

var _ store.Store = (*Store)(nil)

// SchemaVersion is stored in PRAGMA user_version. Bump it with every schema
// change (and add the migration to migrate).
const SchemaVersion = 2

// Store is the embedded adapter: one SQLite file in WAL mode. All writes go
// through one connection (SQLite has one writer at a time anyway, and one
// connection makes every conditional write a plain read-decide-write inside
// BEGIN IMMEDIATE with no busy retries); reads use a small pool of read-only
// connections that WAL lets run while a write is in progress.
type Store struct {
	path    string
	w       *sql.DB
	r       *sql.DB
	stmts   statements
	queries sync.Map // queryShape -> *sql.Stmt on r
	ckpt    *checkpointer
	ckptDB  *sql.DB

	// Group commit: writes queue to one writer goroutine, which runs every
	// queued write in its own savepoint of one transaction and commits once.
	mu         sync.RWMutex // guards closed and sends on reqs
	closed     bool
	reqs       chan *writeReq
	writerDone chan struct{}
	cache      *itemCache // nil unless WithItemCache

	// With the item cache (this Store the only writer of the file), the
	// writer goroutine also remembers each log stream's head (last sequence
	// number and chain hash), so an append needs no read: seqs holds
	// committed heads, batchSeqs those of the batch being built, reqSeqs
	// those of the write being run (dropped if its savepoint is rolled
	// back). Only the writer goroutine touches them.
	seqs, batchSeqs, reqSeqs map[string]logHead
}

// maxRememberedStreams bounds Store.seqs; past it the map starts over.
const maxRememberedStreams = 10000

// maxBatch bounds the writes committed together.
const maxBatch = 128

type writeReq struct {
	ctx  context.Context
	op   string
	fn   func(tx *sql.Tx) error
	done chan error
	// checksFirst: fn decides every conditional failure before it changes
	// anything, so a typed error from it means it wrote nothing and the
	// batch needs no savepoint around it (two statements fewer per write).
	checksFirst bool
	// items are what the write stores when it succeeds (for the item cache).
	items []store.Item
}

// Option configures Open.
type Option func(*options)

type options struct {
	cacheItems int
	readers    int
	fault      Fault
	sync       string
}

// Fault is consulted before every statement the store's connections run
// (the SQL text, or "BEGIN" / "COMMIT"); a non-nil error fails that
// statement as a failing database would. It exists so tests can prove that
// a failure in the middle of a write leaves nothing half-written.
type Fault func(query string) error

// WithFault installs f on every connection of the store (tests only).
func WithFault(f Fault) Option { return func(o *options) { o.fault = f } }

// WithItemCache keeps up to n items in a write-through cache in memory,
// so reads of recently written items skip the database. Use it only when
// this Store is the only writer of the file (no other process or Store on
// the same path): the embedded stack locks its state directory for that.
func WithItemCache(n int) Option { return func(o *options) { o.cacheItems = n } }

// WithReaders sets the number of read connections (default 4).
func WithReaders(n int) Option {
	return func(o *options) {
		if n > 0 {
			o.readers = n
		}
	}
}

// WithSynchronousFull trades write throughput for durability against power
// loss: every commit is fsynced (PRAGMA synchronous=FULL). The default,
// NORMAL, already survives a killed process.
func WithSynchronousFull() Option { return func(o *options) { o.sync = "FULL" } }

// Open opens (creating if needed) the store at path, creating its directory
// and schema.
func Open(path string, opts ...Option) (*Store, error) {
	o := options{readers: 4, sync: "NORMAL"}
	for _, opt := range opts {
		opt(&o)
	}
	if path == "" || strings.ContainsAny(path, "?#") {
		return nil, fmt.Errorf("open store %q: %w: path must be a plain file name", path, store.ErrInvalid)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	s := &Store{path: path}
	var err error
	// busy_timeout covers other processes (a second `lifecycle` opened on the
	// same file); within this process the single writer never waits on a lock.
	params := url.Values{}
	params.Add("_pragma", "busy_timeout(5000)")
	params.Add("_pragma", "synchronous("+o.sync+")")
	params.Add("_pragma", fmt.Sprintf("wal_autocheckpoint(%d)", walBackstopPages))
	// Keep a WAL that grew during a burst from staying large on disk.
	params.Add("_pragma", "journal_size_limit(67108864)")
	// 4 MB: SQLite walks the page cache at the end of every write
	// transaction (pcache truncate), so a bigger writer cache costs CPU on
	// every commit (16 MB: about 4% of the lifecycle's CPU; 4 MB: 2%), and
	// the writer's hot pages (the right edges of the b-trees, their
	// interior pages) fit many times over.
	params.Add("_pragma", "cache_size(-4096)")
	// No mmap: under continuous writes every read transaction of a
	// connection sees a changed database, and SQLite then unmaps its whole
	// mapping (pagerBeginReadTransaction), which cost about 3% of the
	// lifecycle's CPU and doubled the resident memory for nothing: reads
	// of the OS page cache through pread are as fast here (make bench,
	// with 100k actions stored).
	params.Add("_pragma", "mmap_size(0)")
	params.Set("_txlock", "immediate")
	if s.w, err = openDB(path+"?"+params.Encode(), o.fault, 1); err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	if err := migrate(s.w); err != nil {
		s.w.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	// WAL is set after migrate because a fresh file's page size can only be
	// chosen before it is in WAL mode. The mode is persistent: the readers
	// opened below inherit it.
	var mode string
	if err := s.w.QueryRow(`PRAGMA journal_mode = WAL`).Scan(&mode); err != nil || mode != "wal" {
		s.w.Close()
		return nil, fmt.Errorf("open store %s: journal mode %q, want wal: %v", path, mode, err)
	}
	rparams := url.Values{}
	rparams.Add("_pragma", "busy_timeout(5000)")
	rparams.Add("_pragma", "query_only(1)")
	rparams.Add("_pragma", "cache_size(-16384)")
	rparams.Add("_pragma", "mmap_size(0)")
	if s.r, err = openDB(path+"?"+rparams.Encode(), o.fault, o.readers); err != nil {
		s.w.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	if err := s.stmts.prepare(s.w, s.r); err != nil {
		s.Close()
		return nil, fmt.Errorf("open store %s: prepare: %w", path, err)
	}
	// The checkpointer's connection is never fault-injected: it does no
	// work of any operation, and a test's armed fault is meant for those.
	cparams := url.Values{}
	cparams.Add("_pragma", "busy_timeout(5000)")
	if s.ckptDB, err = openDB(path+"?"+cparams.Encode(), nil, 1); err != nil {
		s.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	s.ckpt = startCheckpointer(s.ckptDB)
	if o.cacheItems > 0 {
		s.cache = newItemCache(o.cacheItems)
		s.seqs, s.batchSeqs, s.reqSeqs = map[string]logHead{}, map[string]logHead{}, map[string]logHead{}
	}
	s.reqs = make(chan *writeReq, maxBatch)
	s.writerDone = make(chan struct{})
	go s.writer()
	return s, nil
}

func openDB(dsn string, fault Fault, conns int) (*sql.DB, error) {
	var conn driver.Connector
	conn, err := sqlite.NewConnector(dsn)
	if err != nil {
		return nil, err
	}
	if fault != nil {
		conn = &faultConnector{inner: conn, fault: fault}
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	// Connections live as long as the store: re-opening one would re-run the
	// pragmas and drop the prepared statements for nothing.
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	if err := db.Ping(); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// Path is the database file.
func (s *Store) Path() string { return s.path }

// Close releases the connections. SQLite checkpoints the WAL into the main
// file when the last connection closes.
func (s *Store) Close() error {
	s.mu.Lock()
	if !s.closed && s.reqs != nil {
		s.closed = true
		close(s.reqs)
		<-s.writerDone
	}
	s.closed = true
	s.mu.Unlock()
	if s.ckpt != nil {
		s.ckpt.stop()
	}
	s.queries.Range(func(_, v any) bool { v.(*sql.Stmt).Close(); return true })
	s.stmts.close()
	var errs []error
	if s.r != nil {
		errs = append(errs, s.r.Close())
	}
	if s.ckptDB != nil {
		errs = append(errs, s.ckptDB.Close())
	}
	if s.w != nil {
		errs = append(errs, s.w.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close store %s: %w", s.path, err)
	}
	return nil
}

// write runs fn as one atomic write. A conditional failure that fn returns
// (a typed store error) undoes everything fn did; so does every database
// error, which becomes an *store.UnavailableError: nothing of the operation
// is left behind.
//
// Writes are group-committed: concurrent writes queue to the single writer
// goroutine, which runs each in its own SAVEPOINT inside one BEGIN IMMEDIATE
// transaction and commits the batch once. A write returns only after the
// commit that contains it, so durability is unchanged; what is shared is
// the cost of the commit (one WAL append for the batch instead of one per
// write). A failing commit fails every write of its batch, none of which is
// then in the database.
func (s *Store) write(ctx context.Context, op string, fn func(tx *sql.Tx) error) error {
	return s.enqueue(&writeReq{ctx: ctx, op: op, fn: fn})
}

// writeChecked is write for an fn that returns every conditional failure
// (a typed store error) before its first change; a database error from it
// voids its whole batch.
func (s *Store) writeChecked(ctx context.Context, op string, fn func(tx *sql.Tx) error) error {
	return s.enqueue(&writeReq{ctx: ctx, op: op, fn: fn, checksFirst: true})
}

// writeItems is writeChecked for operations that store items: when it
// succeeds, items (as stored) go into the item cache before it returns.
func (s *Store) writeItems(ctx context.Context, op string, items []store.Item, fn func(tx *sql.Tx) error) error {
	return s.enqueue(&writeReq{ctx: ctx, op: op, fn: fn, items: items, checksFirst: true})
}

func (s *Store) enqueue(req *writeReq) error {
	ctx, op := req.ctx, req.op
	if err := ctx.Err(); err != nil {
		return unavailable(op, err)
	}
	req.done = make(chan error, 1)
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return unavailable(op, errors.New("store is closed"))
	}
	s.reqs <- req
	s.mu.RUnlock()
	// Wait even if ctx ends meanwhile: the write may already be committed,
	// and the caller must learn which.
	return <-req.done
}

func (s *Store) writer() {
	defer close(s.writerDone)
	batch := make([]*writeReq, 0, maxBatch)
	for first := range s.reqs {
		batch = append(batch[:0], first)
	collect:
		for len(batch) < maxBatch {
			select {
			case r, ok := <-s.reqs:
				if !ok {
					break collect
				}
				batch = append(batch, r)
			default:
				break collect
			}
		}
		s.commitBatch(batch)
	}
}

func (s *Store) commitBatch(batch []*writeReq) {
	results := make([]error, len(batch))
	finish := func() {
		for i, r := range batch {
			r.done <- results[i]
		}
	}
	defer finish()
	tx, err := s.w.BeginTx(context.Background(), nil)
	if err != nil {
		for i, r := range batch {
			results[i] = unavailable(r.op, err)
		}
		return
	}
	failAll := func(err error) {
		if rbErr := tx.Rollback(); rbErr != nil && !errors.Is(rbErr, sql.ErrTxDone) {
			err = errors.Join(err, rbErr)
		}
		// Every result of the batch is void, conditional failures
		// included: they may have been judged against a write of this
		// batch that is now gone.
		for i, r := range batch {
			results[i] = unavailable(r.op, err)
		}
	}
	wrote := false
	single := len(batch) == 1
	if s.seqs != nil {
		clear(s.batchSeqs)
	}
	for i, r := range batch {
		if err := r.ctx.Err(); err != nil {
			results[i] = unavailable(r.op, err)
			continue
		}
		if s.seqs != nil {
			clear(s.reqSeqs)
		}
		savepoint := !single && !r.checksFirst
		if savepoint {
			if _, err := tx.Exec(`SAVEPOINT w`); err != nil {
				failAll(err)
				return
			}
		}
		if err := r.fn(tx); err != nil {
			results[i] = err
			if !single && !savepoint {
				// Nothing of this write was changed if the error is a
				// conditional one; a database error may have rolled the
				// whole transaction back (SQLite does on I/O errors), so
				// it voids the batch.
				var ue *store.UnavailableError
				if errors.As(err, &ue) {
					failAll(err)
					return
				}
				continue
			}
			if single {
				if rbErr := tx.Rollback(); rbErr != nil && !errors.Is(rbErr, sql.ErrTxDone) {
					results[i] = errors.Join(err, rbErr)
				}
				return
			}
			// Undo this write only. If SQLite already rolled the whole
			// transaction back (an I/O error does), the savepoint is gone
			// and so is every earlier write of the batch.
			if _, rbErr := tx.Exec(`ROLLBACK TO w`); rbErr != nil {
				failAll(rbErr)
				return
			}
			if _, rbErr := tx.Exec(`RELEASE w`); rbErr != nil {
				failAll(rbErr)
				return
			}
			continue
		}
		if savepoint {
			if _, err := tx.Exec(`RELEASE w`); err != nil {
				failAll(err)
				return
			}
		}
		for stream, seq := range s.reqSeqs {
			s.batchSeqs[stream] = seq
		}
		wrote = true
	}
	if !wrote {
		tx.Rollback()
		return
	}
	if err := tx.Commit(); err != nil {
		for i, r := range batch {
			results[i] = unavailable(r.op, err)
		}
		return
	}
	if s.cache != nil {
		for i, r := range batch {
			if results[i] == nil && len(r.items) > 0 {
				s.cache.stored(r.items)
			}
		}
	}
	if s.seqs != nil {
		if len(s.seqs)+len(s.batchSeqs) > maxRememberedStreams {
			clear(s.seqs)
		}
		for stream, seq := range s.batchSeqs {
			s.seqs[stream] = seq
		}
	}
	if s.ckpt != nil {
		s.ckpt.wrote()
	}
}

// unavailable wraps a database error: the backend failed, nothing was
// written, the caller may retry.
func unavailable(op string, err error) error {
	var ue *store.UnavailableError
	if errors.As(err, &ue) {
		return err
	}
	return &store.UnavailableError{Op: "sqlitestore: " + op, Err: err}
}
