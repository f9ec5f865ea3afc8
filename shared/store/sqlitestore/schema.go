package sqlitestore

import (
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/openprogram/lifecycle/shared/store"
)

// schema mirrors the DynamoDB table (see ../SCHEMA.md): one items table
// keyed (pk, sk) holding every record kind, including leases, counters and
// log entries, so a Query of a partition returns the same rows in both
// adapters. The lease, log and counter columns are the DynamoDB attributes
// of those records; they are NULL on ordinary items. The counter's "counted"
// string set is the counter_members table.
//
// items is an ordinary rowid table with the (pk, sk) primary key as its
// unique index, not a WITHOUT ROWID table: a WITHOUT ROWID b-tree keeps
// whole rows in its interior pages, so with 1 KB bodies its fan-out falls
// to about seven and its depth doubles (measured: 7 levels at 100k
// actions against 3 for the rowid table plus 3 for its index).
//
// Both secondary indexes are partial: only items with the index keys are in
// them, which is what makes GSI2 sparse (clearing GSI2PK removes the item
// from the "open work" index instead of leaving a NULL entry to skip).
var schema = []string{
	`CREATE TABLE items (
		pk          TEXT    NOT NULL,
		sk          TEXT    NOT NULL,
		version     INTEGER NOT NULL,
		fence       INTEGER NOT NULL DEFAULT 0,
		gsi1pk      TEXT,
		gsi1sk      TEXT,
		gsi2pk      TEXT,
		gsi2sk      TEXT,
		expires_at  INTEGER,
		body        BLOB,
		attempt_id  TEXT,
		lease_until INTEGER,
		at          INTEGER,
		consecutive INTEGER,
		total       INTEGER,
		digest      BLOB,
		prev        BLOB,
		PRIMARY KEY (pk, sk)
	)`,
	`CREATE INDEX items_gsi1 ON items (gsi1pk, gsi1sk) WHERE gsi1pk IS NOT NULL`,
	`CREATE INDEX items_gsi2 ON items (gsi2pk, gsi2sk) WHERE gsi2pk IS NOT NULL`,
	`CREATE TABLE counter_members (
		pk     TEXT NOT NULL,
		sk     TEXT NOT NULL,
		member TEXT NOT NULL,
		PRIMARY KEY (pk, sk, member)
	) WITHOUT ROWID`,
}

// migrations bring a file of version i+1 to i+2: migrations[0] is 1 -> 2.
var migrations = [][]string{
	// 2: log entries carry their hash-chain link (digest, prev). Entries
	// already written keep none: the chain starts at the next append.
	{`ALTER TABLE items ADD COLUMN digest BLOB`, `ALTER TABLE items ADD COLUMN prev BLOB`},
}

// pageSize: every commit writes each page it changed to the WAL whole, so
// the page size multiplies the bytes written per write: a lifecycle action
// (15 writes, about 20 KB of records) wrote about 340 KB of WAL with 8 KB
// pages and about 200 KB with 4 KB pages, which is also less for the
// checkpoint to fsync (the stalls in the tail latency). 4 KB pages still
// give the (pk, sk) index a fan-out of about fifty; the rowid table's
// interior pages hold only rowids. Only a new file takes the page size;
// an existing one keeps its own.
const pageSize = 4096

// migrate brings the file to SchemaVersion in one transaction.
func migrate(db *sql.DB) error {
	var v int
	if err := db.QueryRow(`PRAGMA user_version`).Scan(&v); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	switch {
	case v == SchemaVersion:
		return nil
	case v > SchemaVersion:
		return fmt.Errorf("schema version %d is newer than this program's %d", v, SchemaVersion)
	case v != 0:
		return upgrade(db, v)
	}
	// Only an empty file takes a page size.
	if _, err := db.Exec(fmt.Sprintf(`PRAGMA page_size = %d`, pageSize)); err != nil {
		return fmt.Errorf("set page size: %w", err)
	}
	tx, err := db.Begin()
	if err != nil {
		return fmt.Errorf("create schema: %w", err)
	}
	for _, stmt := range schema {
		if _, err := tx.Exec(stmt); err != nil {
			return errors.Join(fmt.Errorf("create schema: %w", err), tx.Rollback())
		}
	}
	if _, err := tx.Exec(fmt.Sprintf(`PRAGMA user_version = %d`, SchemaVersion)); err != nil {
		return errors.Join(fmt.Errorf("create schema: %w", err), tx.Rollback())
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("create schema: %w", err)
	}
	return nil
}

// upgrade runs the migrations from version v to SchemaVersion in one transaction.
func upgrade(db *sql.DB, v int) error {
	if v-1 >= len(migrations) {
		return fmt.Errorf("no migration from schema version %d", v)
	}
	tx, err := db.Begin()
	if err != nil {
		return fmt.Errorf("migrate schema %d: %w", v, err)
	}
	for _, step := range migrations[v-1:] {
		for _, stmt := range step {
			if _, err := tx.Exec(stmt); err != nil {
				return errors.Join(fmt.Errorf("migrate schema %d: %s: %w", v, stmt, err), tx.Rollback())
			}
		}
	}
	if _, err := tx.Exec(fmt.Sprintf(`PRAGMA user_version = %d`, SchemaVersion)); err != nil {
		return errors.Join(fmt.Errorf("migrate schema %d: %w", v, err), tx.Rollback())
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migrate schema %d: %w", v, err)
	}
	return nil
}

// itemCols is the column list every item read selects, in scanItem order.
const itemCols = `pk, sk, version, fence, gsi1pk, gsi1sk, gsi2pk, gsi2sk, expires_at, body`

// statements are prepared once per store: w on the writer connection, r on
// the read pool.
type statements struct {
	list []*sql.Stmt

	// writer
	wGetItem    *sql.Stmt
	wInsertItem *sql.Stmt
	wUpdateItem *sql.Stmt
	wCASKeys    *sql.Stmt
	wUpdateBody *sql.Stmt
	wGetVersion *sql.Stmt
	wGetLease   *sql.Stmt
	wInsLease   *sql.Stmt
	wUpdLease   *sql.Stmt
	wInsMember  *sql.Stmt
	wGetCounter *sql.Stmt
	wPutCounter *sql.Stmt
	wLastLog    *sql.Stmt
	wInsLog     *sql.Stmt

	// readers
	rGetItem    *sql.Stmt
	rGetLease   *sql.Stmt
	rGetCounter *sql.Stmt
	rReadLog    *sql.Stmt
}

func (st *statements) prepare(w, r *sql.DB) error {
	var err error
	p := func(db *sql.DB, q string) *sql.Stmt {
		if err != nil {
			return nil
		}
		var s *sql.Stmt
		if s, err = db.Prepare(q); err != nil {
			err = fmt.Errorf("%s: %w", q, err)
			return nil
		}
		st.list = append(st.list, s)
		return s
	}
	// The store's own sort keys are spelled in SQL once, from package store.
	lease := quote(store.LeaseSK)
	logLo := quote(store.LogSKPrefix)
	logEnd, _ := store.PrefixEnd(store.LogSKPrefix)
	logHi := quote(logEnd)
	getItem := `SELECT ` + itemCols + ` FROM items WHERE pk = ? AND sk = ?`
	getLease := `SELECT attempt_id, fence, lease_until FROM items WHERE pk = ? AND sk = ` + lease
	getCounter := `SELECT consecutive, total FROM items WHERE pk = ? AND sk = ?`
	st.wGetItem = p(w, getItem)
	st.wInsertItem = p(w, `INSERT INTO items (pk, sk, version, fence, gsi1pk, gsi1sk, gsi2pk, gsi2sk, expires_at, body)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (pk, sk) DO NOTHING`)
	st.wUpdateItem = p(w, `UPDATE items SET version = ?, fence = ?, gsi1pk = ?, gsi1sk = ?, gsi2pk = ?, gsi2sk = ?,
		expires_at = ?, body = ? WHERE pk = ? AND sk = ? AND version = ? AND fence <= ?`)
	// A compare-and-swap reads the index keys of the row it may replace
	// (wCASKeys returns it only if the condition holds) and updates with
	// wUpdateBody when they stay the same: SQLite rewrites the entries of
	// every index whose columns an UPDATE assigns, changed or not, so
	// assigning the GSI columns would dirty two index pages per write.
	st.wCASKeys = p(w, `SELECT gsi1pk, gsi1sk, gsi2pk, gsi2sk FROM items WHERE pk = ? AND sk = ? AND version = ? AND fence <= ?`)
	st.wUpdateBody = p(w, `UPDATE items SET version = ?, fence = ?, expires_at = ?, body = ? WHERE pk = ? AND sk = ? AND version = ? AND fence <= ?`)
	st.wGetVersion = p(w, `SELECT version FROM items WHERE pk = ? AND sk = ?`)
	st.wGetLease = p(w, getLease)
	st.wInsLease = p(w, `INSERT INTO items (pk, sk, version, fence, attempt_id, lease_until)
		VALUES (?, `+lease+`, ?, ?, ?, ?)`)
	st.wUpdLease = p(w, `UPDATE items SET version = ?, fence = ?, attempt_id = ?, lease_until = ?
		WHERE pk = ? AND sk = `+lease+` AND fence = ?`)
	st.wInsMember = p(w, `INSERT INTO counter_members (pk, sk, member) VALUES (?, ?, ?) ON CONFLICT DO NOTHING`)
	st.wGetCounter = p(w, getCounter)
	st.wPutCounter = p(w, `INSERT INTO items (pk, sk, version, fence, consecutive, total) VALUES (?, ?, 1, 0, ?, ?)
		ON CONFLICT (pk, sk) DO UPDATE SET version = version + 1, consecutive = excluded.consecutive, total = excluded.total`)
	st.wLastLog = p(w, `SELECT sk, at, digest, prev FROM items WHERE pk = ? AND sk >= `+logLo+` AND sk < `+logHi+` ORDER BY sk DESC LIMIT 1`)
	st.wInsLog = p(w, `INSERT INTO items (pk, sk, version, fence, body, at, digest, prev) VALUES (?, ?, 1, 0, ?, ?, ?, ?)`)

	st.rGetItem = p(r, getItem)
	st.rGetLease = p(r, getLease)
	st.rGetCounter = p(r, getCounter)
	st.rReadLog = p(r, `SELECT sk, at, body, digest, prev FROM items WHERE pk = ? AND sk > ? AND sk < `+logHi+` ORDER BY sk LIMIT ?`)
	return err
}

// quote is an SQL string literal of one of the store's constant keys.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func (st *statements) close() {
	for _, s := range st.list {
		s.Close()
	}
	st.list = nil
}
