package dynamostore_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"
	miniserver "github.com/truora/minidyn/server"

	"github.com/openprogram/lifecycle/shared/store"
	"github.com/openprogram/lifecycle/shared/store/dynamostore"
	"github.com/openprogram/lifecycle/shared/store/dynamostore/dynamotest"
)

// injector fails the n-th call of one DynamoDB operation with minidyn's
// failure emulation, switched on just for that call: so an operation made
// of several requests (Append: Query then PutItem) can be failed between
// them.
type injector struct {
	mini  *miniserver.Server
	mu    sync.Mutex
	op    string
	nth   int
	calls int
	hit   bool
}

func (in *injector) arm(op string, nth int) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.op, in.nth, in.calls, in.hit = op, nth, 0, false
}

func (in *injector) register(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("inject-failure",
		func(ctx context.Context, input middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			in.mu.Lock()
			fail := false
			if awsmiddleware.GetOperationName(ctx) == in.op {
				in.calls++
				fail = in.calls == in.nth
				in.hit = in.hit || fail
			}
			in.mu.Unlock()
			if fail {
				in.mini.EmulateFailure(miniserver.FailureConditionInternalServerError)
				defer in.mini.EmulateFailure(miniserver.FailureConditionNone)
			}
			return next.HandleInitialize(ctx, input)
		}), middleware.Before)
}

// TestFailedWriteLeavesNothing fails one request of each write and checks
// that the error is ErrUnavailable, that the table is exactly as before,
// and that the retried call applies once.
func TestFailedWriteLeavesNothing(t *testing.T) {
	if os.Getenv(dynamotest.EndpointVariable) != "" {
		t.Skip("failure emulation needs minidyn")
	}
	in := &injector{}
	b := dynamotest.New(t, func(o *dynamodb.Options) {
		o.RetryMaxAttempts = 1 // the emulated 500 must reach the adapter
		o.APIOptions = append(o.APIOptions, in.register)
	})
	in.mini = b.Mini
	s := dynamostore.New(b.Client, b.Table)
	ctx := t.Context()
	exec := store.ExecPK("e1")
	meta := store.Item{PK: exec, SK: "META", Version: 3, Body: []byte("meta")}
	ckpt := store.Item{PK: exec, SK: "CKPT", Version: 1, Body: []byte("v1"), GSI2PK: "OPEN#EXEC", GSI2SK: "e1"}
	for _, it := range []store.Item{meta, ckpt} {
		if err := s.PutOnce(ctx, it); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Append(ctx, exec, []byte("first")); err != nil {
		t.Fatal(err)
	}
	counterKey := store.CounterKey{SessionID: "s1", Epoch: "1"}
	lease := store.LeaseRequest{Resource: exec, AttemptID: "att-1", TTL: time.Minute, Now: time.Unix(2_000_000_000, 0)}

	cases := []struct {
		name  string
		op    string // DynamoDB operation to fail
		nth   int
		do    func() error
		check func(t *testing.T)
	}{
		{name: "put once", op: "PutItem", nth: 1,
			do: func() error {
				return s.PutOnce(ctx, store.Item{PK: exec, SK: "RECEIPT#a1", Version: 1, Body: []byte("r")})
			},
			check: func(t *testing.T) {
				mustBody(t, s, store.Key{PK: exec, SK: "RECEIPT#a1"}, "r")
			}},
		{name: "compare-and-swap", op: "PutItem", nth: 1,
			do: func() error {
				return s.CompareAndSwap(ctx, store.Item{PK: exec, SK: "CKPT", Version: 2, Body: []byte("v2")}, 1, 0)
			},
			check: func(t *testing.T) { mustBody(t, s, ckpt.Key(), "v2") }},
		{name: "put once if version (the transaction)", op: "TransactWriteItems", nth: 1,
			do: func() error {
				return s.PutOnceIfVersion(ctx, store.Item{PK: exec, SK: "CMD#c1", Version: 1, Body: []byte("pause")}, meta.Key(), 3)
			},
			check: func(t *testing.T) { mustBody(t, s, store.Key{PK: exec, SK: "CMD#c1"}, "pause") }},
		{name: "acquire lease: the failed call takes no fence", op: "UpdateItem", nth: 1,
			do: func() error { _, err := s.AcquireLease(ctx, lease); return err },
			check: func(t *testing.T) {
				l, err := s.GetLease(ctx, exec)
				if err != nil || l.Fence != 1 {
					t.Fatalf("lease after retry: %+v %v, want fence 1", l, err)
				}
			}},
		{name: "apply counter: the retry is applied", op: "UpdateItem", nth: 1,
			do: func() error {
				_, applied, err := s.ApplyCounter(ctx, counterKey, "a1", store.CounterBlock)
				if err == nil && !applied {
					return errors.New("not applied: the failed call left its member behind")
				}
				return err
			},
			check: func(t *testing.T) {
				c, err := s.GetCounter(ctx, counterKey)
				if err != nil || c != (store.Counter{Consecutive: 1, Total: 1}) {
					t.Fatalf("counter %+v %v, want 1/1", c, err)
				}
			}},
		{name: "append: the put after the read fails, no gap follows", op: "PutItem", nth: 1,
			do: func() error { _, err := s.Append(ctx, exec, []byte("second")); return err },
			check: func(t *testing.T) {
				entries, err := s.ReadLog(ctx, exec, 0, 0)
				if err != nil || len(entries) != 2 || entries[1].Seq != 2 || string(entries[1].Body) != "second" {
					t.Fatalf("log after retry: %+v %v", entries, err)
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := scanTable(t, b)
			in.arm(tc.op, tc.nth)
			err := tc.do()
			in.arm("", 0)
			if !in.hit && err == nil {
				t.Fatalf("%s was never called", tc.op)
			}
			var ue *store.UnavailableError
			if !errors.As(err, &ue) || !errors.Is(err, store.ErrUnavailable) {
				t.Fatalf("got %T %v, want *store.UnavailableError", err, err)
			}
			if after := scanTable(t, b); !slices.Equal(after, before) {
				t.Fatalf("a failed write changed the table:\nbefore %v\nafter  %v", before, after)
			}
			if err := tc.do(); err != nil {
				t.Fatalf("retry: %v", err)
			}
			tc.check(t)
		})
	}

	t.Run("failing reads are ErrUnavailable", func(t *testing.T) {
		reads := map[string]func() error{
			"GetItem": func() error { _, err := s.Get(ctx, meta.Key()); return err },
			"Query":   func() error { _, err := s.Query(ctx, exec, store.QueryOptions{}); return err },
		}
		for op, read := range reads {
			in.arm(op, 1)
			err := read()
			in.arm("", 0)
			if !errors.Is(err, store.ErrUnavailable) {
				t.Errorf("%s: got %v, want ErrUnavailable", op, err)
			}
		}
	})

	t.Run("a failing index fails only queries of that index", func(t *testing.T) {
		b.Mini.EmulateFailureForTable(b.Table, miniserver.FailureConditionInternalServerError, string(store.IndexOpen))
		defer b.Mini.EmulateFailureForTable(b.Table, miniserver.FailureConditionNone, string(store.IndexOpen))
		if _, err := s.QueryIndex(ctx, store.IndexOpen, "OPEN#EXEC", store.QueryOptions{}); !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("query of the failing index: %v, want ErrUnavailable", err)
		}
		if _, err := s.QueryIndex(ctx, store.IndexSession, "SESSION#s1", store.QueryOptions{}); err != nil {
			t.Errorf("query of the other index: %v", err)
		}
		if _, err := s.Get(ctx, meta.Key()); err != nil {
			t.Errorf("get from the table: %v", err)
		}
	})
}

// lossy is an HTTP client that, once armed, delivers one request of the
// named operation to the server and then reports a 500 to the SDK, as if
// the response had been lost after DynamoDB applied the write.
type lossy struct {
	mu    sync.Mutex
	op    string
	inner *http.Client
}

func (l *lossy) Do(req *http.Request) (*http.Response, error) {
	resp, err := l.inner.Do(req)
	l.mu.Lock()
	lose := l.op != "" && strings.HasSuffix(req.Header.Get("X-Amz-Target"), "."+l.op)
	if lose {
		l.op = ""
	}
	l.mu.Unlock()
	if err != nil || !lose {
		return resp, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	body := `{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"response lost"}`
	return &http.Response{
		StatusCode: http.StatusInternalServerError, Status: "500 Internal Server Error",
		Header: http.Header{"Content-Type": {"application/x-amz-json-1.0"}},
		Body:   io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)),
		Request: req, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
	}, nil
}

// TestLostResponseIsRetriedSafely covers the ambiguous failure: the write
// was applied, its response lost, and the SDK's retry then meets its own
// write.
func TestLostResponseIsRetriedSafely(t *testing.T) {
	if os.Getenv(dynamotest.EndpointVariable) != "" {
		t.Skip("needs the in-process server")
	}
	l := &lossy{inner: &http.Client{Transport: http.DefaultTransport}}
	b := dynamotest.New(t, func(o *dynamodb.Options) {
		o.HTTPClient = l
		o.RetryMaxAttempts = 3
	})
	s := dynamostore.New(b.Client, b.Table)
	ctx := t.Context()

	t.Run("append finds its own entry instead of appending twice", func(t *testing.T) {
		l.mu.Lock()
		l.op = "PutItem"
		l.mu.Unlock()
		seq, err := s.Append(ctx, "EXEC#lost", []byte("once"))
		if err != nil || seq != 1 {
			t.Fatalf("append: seq %d, %v; want 1", seq, err)
		}
		entries, err := s.ReadLog(ctx, "EXEC#lost", 0, 0)
		if err != nil || len(entries) != 1 {
			t.Fatalf("log holds %d entries (%v), want exactly 1", len(entries), err)
		}
	})

	t.Run("put once reports the caller's own item as the existing one", func(t *testing.T) {
		it := store.Item{PK: "EXEC#lost", SK: "RECEIPT#a1", Version: 1, Body: []byte(`{"digest":"d1"}`)}
		l.mu.Lock()
		l.op = "PutItem"
		l.mu.Unlock()
		err := s.PutOnce(ctx, it)
		var ce *store.ConflictError
		if !errors.As(err, &ce) {
			t.Fatalf("got %v, want the retry's *ConflictError", err)
		}
		if string(ce.Existing.Body) != string(it.Body) {
			t.Fatalf("Existing %q, want the caller's own %q", ce.Existing.Body, it.Body)
		}
	})
}

// scanTable is every item of the table as text, sorted.
func scanTable(t *testing.T, b *dynamotest.Backend) []string {
	t.Helper()
	var rows []string
	p := dynamodb.NewScanPaginator(b.Client, &dynamodb.ScanInput{TableName: aws.String(b.Table), ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		page, err := p.NextPage(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Items {
			keys := make([]string, 0, len(it))
			for k := range it {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			var sb strings.Builder
			for _, k := range keys {
				fmt.Fprintf(&sb, "%s=%v ", k, it[k])
			}
			rows = append(rows, sb.String())
		}
	}
	slices.Sort(rows)
	return rows
}

func mustBody(t *testing.T, s store.Store, k store.Key, body string) {
	t.Helper()
	it, err := s.Get(t.Context(), k)
	if err != nil || string(it.Body) != body {
		t.Fatalf("get %s: %q %v, want %q", k, it.Body, err, body)
	}
}
