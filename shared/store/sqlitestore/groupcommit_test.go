package sqlitestore_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/openprogram/lifecycle/shared/store"
	"github.com/openprogram/lifecycle/shared/store/sqlitestore"
)

// Concurrent writes are committed together. A batch whose commit fails
// fails every write in it — conditional failures included, since they may
// have been judged against a write of the same batch — and leaves none of
// them in the database; the retries then apply exactly once.
//
// The same holds when a statement of one write fails in the middle of a
// batch (PutOnce runs without a savepoint of its own): the batch is void.
func TestGroupCommitFailsWholeBatch(t *testing.T) {
	for _, stmt := range []string{"COMMIT", "INSERT INTO items"} {
		t.Run(strings.Fields(stmt)[0], func(t *testing.T) { testBatchFailure(t, stmt) })
	}
}

func testBatchFailure(t *testing.T, failing string) {
	ctx := context.Background()
	// Fail the second such statement of each round: by then writes have
	// queued up, so the failing batch holds several writes, some to the
	// same key.
	var commits, hits atomic.Int32
	fault := func(q string) error {
		if strings.Contains(q, failing) && commits.Add(1) == 2 {
			hits.Add(1)
			return errDisk
		}
		return nil
	}
	st, err := sqlitestore.Open(filepath.Join(t.TempDir(), "s.db"), sqlitestore.WithFault(fault))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const n = 64
	item := func(i int) store.Item {
		return store.Item{PK: "P", SK: fmt.Sprintf("K%02d", i%(n/2)), Version: 1, Body: []byte(fmt.Sprint(i))}
	}
	for round := 0; round < 20; round++ {
		commits.Store(0)
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				it := item(i)
				it.PK = fmt.Sprintf("P%d", round)
				errs[i] = st.PutOnce(ctx, it)
			}(i)
		}
		wg.Wait()
		// Whatever committed (batches after the failed one) must be
		// consistent: per key exactly one winner among the successes, and
		// every failure either a conflict with a stored winner or unavailable.
		page, err := st.Query(ctx, fmt.Sprintf("P%d", round), store.QueryOptions{Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		stored := map[string]string{}
		for _, it := range page.Items {
			stored[it.SK] = string(it.Body)
		}
		winners := map[string]int{}
		for i, err := range errs {
			k := item(i).SK
			switch {
			case err == nil:
				winners[k]++
				if stored[k] != fmt.Sprint(i) {
					t.Fatalf("round %d: write %d succeeded but %s holds %q", round, i, k, stored[k])
				}
			case errors.Is(err, store.ErrUnavailable):
			case errors.Is(err, store.ErrConflict):
				if _, ok := stored[k]; !ok {
					t.Fatalf("round %d: write %d lost to a conflict on %s, which is not stored", round, i, k)
				}
			default:
				t.Fatalf("round %d: unexpected %v", round, err)
			}
		}
		for k, w := range winners {
			if w != 1 {
				t.Fatalf("round %d: %d winners for %s", round, w, k)
			}
		}
		if len(stored) != len(winners) {
			t.Fatalf("round %d: %d stored items, %d reported successes", round, len(stored), len(winners))
		}
	}
	if hits.Load() == 0 {
		t.Fatal("the fault never fired")
	}
}
