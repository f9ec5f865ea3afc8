package sqlitestore

import (
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
