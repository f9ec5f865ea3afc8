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
const SchemaVersion = 1

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
}

// DefaultPath is where `lifecycle serve` keeps its store unless told
// otherwise, relative to the working directory.
const DefaultPath = ".lifecycle/state.db"

// Option configures Open.
type Option func(*options)

type options struct {
	readers int
	fault   Fault
	sync    string
}

// Fault is consulted before every statement the store's connections run
// (the SQL text, or "BEGIN" / "COMMIT"); a non-nil error fails that
// statement as a failing database would. It exists so tests can prove that
// a failure in the middle of a write leaves nothing half-written.
type Fault func(query string) error

// WithFault installs f on every connection of the store (tests only).
func WithFault(f Fault) Option { return func(o *options) { o.fault = f } }

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
	params.Add("_pragma", "cache_size(-65536)")
	params.Add("_pragma", "mmap_size(2147483648)")
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
	rparams.Add("_pragma", "mmap_size(2147483648)")
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

// write runs fn in one BEGIN IMMEDIATE transaction on the writer
// connection. A conditional failure that fn returns (a typed store error)
// rolls back; so does every database error, which becomes an
// *store.UnavailableError: nothing of the operation is left behind.
func (s *Store) write(ctx context.Context, op string, fn func(tx *sql.Tx) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return unavailable(op, err)
	}
	if err := fn(tx); err != nil {
		if rbErr := tx.Rollback(); rbErr != nil && !errors.Is(rbErr, sql.ErrTxDone) {
			err = errors.Join(err, rbErr)
		}
		return err
	}
	if err := tx.Commit(); err != nil {
		return unavailable(op, err)
	}
	if s.ckpt != nil {
		s.ckpt.wrote()
	}
	return nil
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
