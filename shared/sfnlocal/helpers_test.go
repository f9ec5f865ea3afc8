package sfnlocal

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/openprogram/lifecycle/shared/store/sqlitestore"
)

// t0 is the fake clock's start.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func arn(name string) string { return "arn:aws:lambda:us-east-1:123456789012:function:" + name }

// harness is one engine over a SQLite file, served over HTTP on loopback
// and driven through the real Step Functions client.
type harness struct {
	t      *testing.T
	path   string
	def    string
	fns    map[string]LambdaFunc
	clock  *FakeClock
	eng    *Engine
	srv    *httptest.Server
	client *sfn.Client
	db     *sqlitestore.Store

	mu     sync.Mutex
	status []StatusChangeEvent

	// versionInUse is Config.VersionInUse (optional).
	versionInUse func(ctx context.Context, versionARN string) (bool, error)
}

// newHarness starts an engine for def, whose Lambda ARNs are the keys of
// fns written as arn(name).
func newHarness(t *testing.T, def string, fns map[string]LambdaFunc) *harness {
	t.Helper()
	h := &harness{t: t, path: filepath.Join(t.TempDir(), "state.db"), def: def, fns: fns, clock: NewFakeClock(t0)}
	h.open()
	t.Cleanup(h.close)
	return h
}

func (h *harness) open() {
	t := h.t
	t.Helper()
	db, err := sqlitestore.Open(h.path)
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	functions := map[string]LambdaFunc{}
	for name, fn := range h.fns {
		functions[arn(name)] = fn
	}
	eng, err := New(Config{
		Store:            db,
		Definition:       []byte(h.def),
		StateMachineName: "test-machine",
		Functions:        functions,
		Clock:            h.clock,
		Random:           func() float64 { return 0.5 },
		Logger:           slog.New(slog.NewTextHandler(io.Discard, nil)),
		VersionInUse:     h.versionInUse,
		OnStatusChange: func(_ context.Context, ev StatusChangeEvent) {
			h.mu.Lock()
			h.status = append(h.status, ev)
			h.mu.Unlock()
		},
	})
	if err != nil {
		db.Close()
		t.Fatalf("New: %v", err)
	}
	if err := eng.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	h.db, h.eng = db, eng
	h.srv = httptest.NewServer(eng.Handler())
	h.client = sfn.New(sfn.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(h.srv.URL),
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		// The SDK's own retry of transport errors (a loopback connection
		// torn down under heavy parallel test load was seen once in a full
		// `make test`). API errors the tests assert on are not retried by
		// the SDK, so this hides no engine behaviour.
		RetryMaxAttempts: 3,
	})
}

// close stops the server, the engine (giving running functions a moment)
// and the store, as a process shutting down would.
func (h *harness) close() {
	if h.eng == nil {
		return
	}
	h.srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := h.eng.Close(ctx); err != nil {
		h.t.Logf("engine close: %v", err)
	}
	if err := h.db.Close(); err != nil {
		h.t.Errorf("store close: %v", err)
	}
	h.eng = nil
}

// restart closes everything and opens a new engine over the same file.
func (h *harness) restart() {
	h.close()
	h.open()
}

func (h *harness) start(name, input string) *sfn.StartExecutionOutput {
	h.t.Helper()
	out, err := h.client.StartExecution(context.Background(), &sfn.StartExecutionInput{
		StateMachineArn: aws.String(h.eng.StateMachineArn()),
		Name:            aws.String(name),
		Input:           aws.String(input),
	})
	if err != nil {
		h.t.Fatalf("StartExecution %s: %v", name, err)
	}
	return out
}

func (h *harness) describe(name string) *sfn.DescribeExecutionOutput {
	h.t.Helper()
	out, err := h.client.DescribeExecution(context.Background(), &sfn.DescribeExecutionInput{ExecutionArn: aws.String(h.eng.ExecutionArn(name))})
	if err != nil {
		h.t.Fatalf("DescribeExecution %s: %v", name, err)
	}
	return out
}

// waitFor polls until cond holds. Engine work is asynchronous (functions
// run on their own goroutines), so tests wait for its effects; the
// generous deadline only guards against a hang, it measures nothing.
func (h *harness) waitFor(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// waitStatus waits until the execution has the status and returns it.
func (h *harness) waitStatus(name string, status types.ExecutionStatus) *sfn.DescribeExecutionOutput {
	h.t.Helper()
	var out *sfn.DescribeExecutionOutput
	h.waitFor(name+" "+string(status), func() bool {
		out = h.describe(name)
		return out.Status == status
	})
	return out
}

// waitEvent waits until the history holds n events of the given type.
func (h *harness) waitEvent(name string, typ types.HistoryEventType, n int) []types.HistoryEvent {
	h.t.Helper()
	var evs []types.HistoryEvent
	h.waitFor(fmt4(name, string(typ), n), func() bool {
		evs = h.history(name)
		return count(evs, typ) >= n
	})
	return evs
}

// waitTimer waits until the engine has armed a timer (a Wait, a retry
// delay or a timeout) on the fake clock.
func (h *harness) waitTimer() {
	h.t.Helper()
	h.waitFor("a pending timer", func() bool { return h.clock.Pending() > 0 })
}

func fmt4(name, typ string, n int) string {
	b, _ := json.Marshal([]any{name, typ, n})
	return string(b)
}

func (h *harness) history(name string) []types.HistoryEvent {
	h.t.Helper()
	var all []types.HistoryEvent
	p := sfn.NewGetExecutionHistoryPaginator(h.client, &sfn.GetExecutionHistoryInput{ExecutionArn: aws.String(h.eng.ExecutionArn(name)), MaxResults: 7})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			h.t.Fatalf("GetExecutionHistory %s: %v", name, err)
		}
		all = append(all, page.Events...)
	}
	return all
}

func count(evs []types.HistoryEvent, typ types.HistoryEventType) int {
	n := 0
	for _, e := range evs {
		if e.Type == typ {
			n++
		}
	}
	return n
}

func types_(evs []types.HistoryEvent) string {
	s := make([]string, len(evs))
	for i, e := range evs {
		s[i] = string(e.Type)
	}
	return strings.Join(s, " ")
}

func (h *harness) statusEvents() []StatusChangeEvent {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]StatusChangeEvent(nil), h.status...)
}

// fn builds a LambdaFunc from a typed handler, the way aws-lambda-go does:
// JSON in, JSON out.
func fn[In, Out any](f func(context.Context, In) (Out, error)) LambdaFunc {
	return func(ctx context.Context, payload []byte) ([]byte, error) {
		var in In
		if err := json.Unmarshal(payload, &in); err != nil {
			return nil, err
		}
		out, err := f(ctx, in)
		if err != nil {
			return nil, err
		}
		return json.Marshal(out)
	}
}

// echo returns its payload.
func echo() LambdaFunc {
	return func(_ context.Context, p []byte) ([]byte, error) { return p, nil }
}

// counter counts invocations.
type counter struct {
	mu sync.Mutex
	n  int
}

func (c *counter) inc() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	return c.n
}

func (c *counter) get() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// TransientError is a domain-style error type whose name routes retries.
type TransientError struct{ msg string }

func (e *TransientError) Error() string { return e.msg }

// PermanentError is another.
type PermanentError struct{ msg string }

func (e *PermanentError) Error() string { return e.msg }
