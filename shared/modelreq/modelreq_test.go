package modelreq

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/permission"
	"github.com/openprogram/lifecycle/shared/store"
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

// keyRecorder remembers the items put once (the started records).
type keyRecorder struct {
	store.Store
	mu   sync.Mutex
	keys []string
}

func (k *keyRecorder) PutOnce(ctx context.Context, it store.Item) error {
	k.mu.Lock()
	k.keys = append(k.keys, strings.TrimPrefix(it.PK, "MODELREQ#"))
	k.mu.Unlock()
	return k.Store.PutOnce(ctx, it)
}

func TestClassifierAccountsEachReview(t *testing.T) {
	rec := &keyRecorder{Store: ledger(t).Store}
	l := &Ledger{Store: rec}
	ctx := context.Background()
	boom := errors.New("throttled")
	calls := 0
	inner := permission.ClassifierFunc(func(ctx context.Context, in permission.ReviewInput) (permission.Verdict, error) {
		calls++
		if calls == 2 {
			return permission.Verdict{}, boom
		}
		return permission.Verdict{Kind: permission.VerdictBlock, Reason: "rm -rf"}, nil
	})
	c := Classifier{Inner: inner, Ledger: l, Provider: "bedrock", Model: "m"}
	v, err := c.Review(ctx, permission.ReviewInput{ActionID: "act_1", Trusted: permission.Trusted{SessionID: "ses_1"}})
	if err != nil || v.Kind != permission.VerdictBlock {
		t.Fatalf("%+v %v", v, err)
	}
	if _, err := c.Review(ctx, permission.ReviewInput{ActionID: "act_2"}); !errors.Is(err, boom) {
		t.Fatalf("error not passed through: %v", err)
	}
	n := map[Status]int{}
	for _, id := range rec.keys {
		r, err := l.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		n[r.Status]++
	}
	if len(rec.keys) != 2 || n[Completed] != 1 || n[Failed] != 1 {
		t.Fatalf("records %v of %v", n, rec.keys)
	}
}
