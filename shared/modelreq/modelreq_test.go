package modelreq

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/store/sqlitestore"
)

func ledger(t *testing.T) *Ledger {
	st, err := sqlitestore.Open(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return &Ledger{Store: st}
}

func TestStatuses(t *testing.T) {
	boom := errors.New("provider 500")
	cases := []struct {
		name   string
		cancel bool
		err    error
		want   Status
	}{
		{"completed", false, nil, Completed},
		{"transport failure", false, boom, Failed},
		{"eof without terminal event", false, io.ErrUnexpectedEOF, Incomplete},
		{"cancelled", true, context.Canceled, Cancelled},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := ledger(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			r, err := l.Do(ctx, Record{Provider: "bedrock", Model: "m"}, func(ctx context.Context) error {
				if tc.cancel {
					cancel()
				}
				return tc.err
			})
			if !errors.Is(err, tc.err) {
				t.Fatalf("error not propagated unchanged: %v", err)
			}
			if r.Status != tc.want || r.RequestID == "" {
				t.Fatalf("status %s, want %s", r.Status, tc.want)
			}
		})
	}
}

func TestExactlyOneCompletion(t *testing.T) {
	l := ledger(t)
	ctx := context.Background()
	r, err := l.Start(ctx, Record{RequestID: "req_1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Start(ctx, Record{RequestID: "req_1"}); err == nil {
		t.Fatal("a request id started twice")
	}
	var wg sync.WaitGroup
	statuses := []Status{Completed, Failed, Cancelled, Incomplete}
	results := make([]Status, 16)
	for i := range results {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			got, err := l.Complete(ctx, r.RequestID, statuses[i%4], fmt.Errorf("e%d", i))
			if err != nil {
				t.Error(err)
			}
			results[i] = got.Status
		}(i)
	}
	wg.Wait()
	for _, s := range results {
		if s != results[0] {
			t.Fatalf("completions disagree: %v", results)
		}
	}
}

func TestSweepClosesLostRequests(t *testing.T) {
	l := ledger(t)
	ctx := context.Background()
	old := time.Now().Add(-time.Hour)
	l.Clock = func() time.Time { return old }
	l.Start(ctx, Record{RequestID: "lost"})
	l.Clock = nil
	l.Start(ctx, Record{RequestID: "live"})
	n, err := l.Sweep(ctx, time.Now().Add(-time.Minute))
	if err != nil || n != 1 {
		t.Fatalf("swept %d, %v", n, err)
	}
	if r, _ := l.Get(ctx, "lost"); r.Status != Incomplete {
		t.Fatalf("lost: %s", r.Status)
	}
	if r, _ := l.Get(ctx, "live"); r.Status != Open {
		t.Fatalf("live: %s", r.Status)
	}
}
