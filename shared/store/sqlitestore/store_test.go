package sqlitestore_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/openprogram/lifecycle/shared/store"
	"github.com/openprogram/lifecycle/shared/store/sqlitestore"
	"github.com/openprogram/lifecycle/shared/store/storetest"
)

func openTemp(t *testing.T, opts ...sqlitestore.Option) *sqlitestore.Store {
	t.Helper()
	s, err := sqlitestore.Open(filepath.Join(t.TempDir(), "state", "state.db"), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return s
}

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return openTemp(t) })
}

// The same contract holds with the write-through item cache (a small one,
// so eviction runs too).
func TestContractWithItemCache(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return openTemp(t, sqlitestore.WithItemCache(64)) })
}

// sqlTamper rewrites log rows in the file, as anyone with the file could.
type sqlTamper struct{ s *sqlitestore.Store }

func (x sqlTamper) PutLogEntry(ctx context.Context, e store.LogEntry) error {
	return sqlitestore.PutLogEntryForTest(ctx, x.s, e.Stream, e.Seq, store.UnixMicro(e.At), e.Body, e.Digest, e.Prev)
}

func (x sqlTamper) DeleteLogEntry(ctx context.Context, stream string, seq int64) error {
	return sqlitestore.DeleteLogEntryForTest(ctx, x.s, stream, seq)
}

func TestChainTamper(t *testing.T) {
	storetest.RunTamper(t, func(t *testing.T) store.Store { return openTemp(t) },
		func(s store.Store) storetest.LogTamper { return sqlTamper{s.(*sqlitestore.Store)} })
}
