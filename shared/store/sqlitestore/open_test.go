package sqlitestore

import (
	"bytes"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/openprogram/lifecycle/shared/store"
)

// TestOpenConfiguresFile checks what Open promises about the file: WAL
// mode, the page size, the schema version, and that reopening keeps data.
func TestOpenConfiguresFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nested", "dir", "state.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := s.PutOnce(ctx, store.Item{PK: "EXEC#e", SK: "META", Version: 1}); err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		pragma string
		want   any
	}{
		{"journal_mode", "wal"},
		{"page_size", int64(pageSize)},
		{"user_version", int64(SchemaVersion)},
		{"synchronous", int64(1)}, // NORMAL
	}
	for _, c := range checks {
		var got any
		if err := s.w.QueryRow("PRAGMA " + c.pragma).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("PRAGMA %s = %v (%T), want %v", c.pragma, got, got, c.want)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(path)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer s.Close()
	if _, err := s.Get(ctx, store.Key{PK: "EXEC#e", SK: "META"}); err != nil {
		t.Fatalf("after reopen: %v", err)
	}
	if _, err := Open(path + "?mode=memory"); err == nil {
		t.Fatal("a path with a query string must be refused")
	}
}

// TestOpenMigratesVersion1 opens a file of schema 1 (log entries without
// their chain link): Open adds the columns, the old entry stays readable
// and unchained, and the next append starts the stream's chain.
func TestOpenMigratesVersion1(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	v1 := []string{
		`CREATE TABLE items (pk TEXT NOT NULL, sk TEXT NOT NULL, version INTEGER NOT NULL, fence INTEGER NOT NULL DEFAULT 0,
			gsi1pk TEXT, gsi1sk TEXT, gsi2pk TEXT, gsi2sk TEXT, expires_at INTEGER, body BLOB, attempt_id TEXT,
			lease_until INTEGER, at INTEGER, consecutive INTEGER, total INTEGER, PRIMARY KEY (pk, sk))`,
		`CREATE TABLE counter_members (pk TEXT NOT NULL, sk TEXT NOT NULL, member TEXT NOT NULL, PRIMARY KEY (pk, sk, member)) WITHOUT ROWID`,
		`INSERT INTO items (pk, sk, version, fence, body, at) VALUES ('SESSION#s', '` + store.LogSK(1) + `', 1, 0, '{"old":true}', 1000000)`,
		`PRAGMA user_version = 1`,
	}
	for _, q := range v1 {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := Open(path)
	if err != nil {
		t.Fatalf("open a version 1 file: %v", err)
	}
	defer s.Close()
	ctx := t.Context()
	if seq, err := s.Append(ctx, "SESSION#s", []byte(`{"new":true}`)); err != nil || seq != 2 {
		t.Fatalf("append after migration: seq %d, %v", seq, err)
	}
	entries, err := s.ReadLog(ctx, "SESSION#s", 0, 0)
	if err != nil || len(entries) != 2 {
		t.Fatalf("read: %d entries, %v", len(entries), err)
	}
	if entries[0].Chained() {
		t.Fatalf("the entry from before the migration has a link: %+v", entries[0])
	}
	if !entries[1].Chained() || !bytes.Equal(entries[1].Prev, store.ChainGenesis("SESSION#s")) {
		t.Fatalf("the first entry after the migration does not start the chain: %+v", entries[1])
	}
	var v int
	if err := s.w.QueryRow(`PRAGMA user_version`).Scan(&v); err != nil || v != SchemaVersion {
		t.Fatalf("user_version %d, %v", v, err)
	}
}
