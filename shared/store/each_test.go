package store_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/openprogram/lifecycle/shared/store"
	"github.com/openprogram/lifecycle/shared/store/sqlitestore"
)

// Each reads every page, in order, from where opts.After says, and stops
// at fn's first error.
func TestEach(t *testing.T) {
	ctx := context.Background()
	st, err := sqlitestore.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for i := 0; i < 250; i++ {
		if err := st.PutOnce(ctx, store.Item{PK: "P", SK: fmt.Sprintf("X#%03d", i), Version: 1, Body: []byte("{}")}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.PutOnce(ctx, store.Item{PK: "P", SK: "Y#0", Version: 1, Body: []byte("{}")}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		opts  store.QueryOptions
		stop  int // fn fails at this item (0: never)
		want  int
		first string
	}{
		{"every page of the prefix", store.QueryOptions{SKPrefix: "X#", Limit: 100}, 0, 250, "X#000"},
		{"the default page size", store.QueryOptions{SKPrefix: "X#"}, 0, 250, "X#000"},
		{"from after", store.QueryOptions{SKPrefix: "X#", After: "X#199", Limit: 30}, 0, 50, "X#200"},
		{"the whole partition", store.QueryOptions{Limit: 7}, 0, 251, "X#000"},
		{"fn's error stops it", store.QueryOptions{SKPrefix: "X#", Limit: 100}, 120, 120, "X#000"},
	}
	stop := errors.New("stop")
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			err := store.Each(ctx, st, "P", tc.opts, func(it store.Item) error {
				got = append(got, it.SK)
				if len(got) == tc.stop {
					return stop
				}
				return nil
			})
			if (tc.stop > 0) != errors.Is(err, stop) || (tc.stop == 0 && err != nil) {
				t.Fatalf("error %v", err)
			}
			if len(got) != tc.want || got[0] != tc.first {
				t.Fatalf("read %d items from %s, want %d from %s", len(got), got[0], tc.want, tc.first)
			}
			for i := 1; i < len(got); i++ {
				if got[i] <= got[i-1] {
					t.Fatalf("out of order or repeated at %d: %s after %s", i, got[i], got[i-1])
				}
			}
		})
	}
}
