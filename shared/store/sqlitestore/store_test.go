package sqlitestore_test

import (
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
