package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/auth"
	"github.com/openprogram/lifecycle/shared/embedded"
	"github.com/openprogram/lifecycle/shared/eventbus"
	"github.com/openprogram/lifecycle/shared/executor"
	"github.com/openprogram/lifecycle/shared/httpapi"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/permission"
	"github.com/openprogram/lifecycle/shared/replay"
	"github.com/openprogram/lifecycle/shared/store"
	"github.com/openprogram/lifecycle/shared/store/sqlitestore"
)

// ruleDecider decides by tool name (the permission engine is tested in
// its own package).
type ruleDecider map[string]lifecycle.Permission

func (d ruleDecider) Decide(_ context.Context, a actionflow.Action) (actionflow.Decision, error) {
	p, ok := d[a.Tool]
	if !ok {
		p = lifecycle.PermissionDeny
	}
	return actionflow.Decision{Permission: p, PolicyVersion: "v1", Reason: actionflow.Reason{Source: "test_rule", Code: string(p), Rule: a.Tool}}, nil
}

func (d ruleDecider) Revalidate(_ context.Context, _ actionflow.Action, prior actionflow.Decision, _ actionflow.Approval) (actionflow.Decision, error) {
	return actionflow.Decision{Permission: lifecycle.PermissionAllow, PolicyVersion: prior.PolicyVersion, Reason: actionflow.Reason{Source: "approval", Code: "approved"}}, nil
}

func (ruleDecider) ApprovalCompleted(context.Context, actionflow.Action, actionflow.Approval) error {
	return nil
}

type countingExecutor struct{ calls atomic.Int64 }

func (e *countingExecutor) Execute(context.Context, actionflow.Task) (actionflow.ToolResult, error) {
	e.calls.Add(1)
	return actionflow.ToolResult{Outcome: lifecycle.OutcomeSucceeded, Output: "done"}, nil
}

// write is one write the store received.
type write struct {
	Op     string
	Key    string
	Body   []byte
	Stream string
}

// recordingStore records every write that reaches the store, so a test
// can prove what a request wrote (or that it wrote nothing).
type recordingStore struct {
	store.Store
	mu     sync.Mutex
	writes []write
}

func (s *recordingStore) rec(w write) {
	s.mu.Lock()
	s.writes = append(s.writes, w)
	s.mu.Unlock()
}

func (s *recordingStore) mark() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.writes)
}

func (s *recordingStore) since(n int) []write {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]write(nil), s.writes[n:]...)
}

func (s *recordingStore) PutOnce(ctx context.Context, it store.Item) error {
	s.rec(write{Op: "PutOnce", Key: it.Key().String(), Body: it.Body})
	return s.Store.PutOnce(ctx, it)
}

func (s *recordingStore) CompareAndSwap(ctx context.Context, it store.Item, expected, fence int64) error {
	s.rec(write{Op: "CompareAndSwap", Key: it.Key().String(), Body: it.Body})
	return s.Store.CompareAndSwap(ctx, it, expected, fence)
}

func (s *recordingStore) PutOnceIfVersion(ctx context.Context, it store.Item, guard store.Key, expected int64) error {
	s.rec(write{Op: "PutOnceIfVersion", Key: it.Key().String(), Body: it.Body})
	return s.Store.PutOnceIfVersion(ctx, it, guard, expected)
}

func (s *recordingStore) AcquireLease(ctx context.Context, req store.LeaseRequest) (store.Lease, error) {
	s.rec(write{Op: "AcquireLease", Key: req.Resource})
	return s.Store.AcquireLease(ctx, req)
}

func (s *recordingStore) RenewLease(ctx context.Context, l store.Lease, ttl time.Duration, now time.Time) (store.Lease, error) {
	s.rec(write{Op: "RenewLease", Key: l.Resource})
	return s.Store.RenewLease(ctx, l, ttl, now)
}

func (s *recordingStore) ReleaseLease(ctx context.Context, l store.Lease) error {
	s.rec(write{Op: "ReleaseLease", Key: l.Resource})
	return s.Store.ReleaseLease(ctx, l)
}

func (s *recordingStore) ApplyCounter(ctx context.Context, k store.CounterKey, member string, op store.CounterOp) (store.Counter, bool, error) {
	s.rec(write{Op: "ApplyCounter", Key: k.SessionID + "/" + k.Epoch})
	return s.Store.ApplyCounter(ctx, k, member, op)
}

func (s *recordingStore) Append(ctx context.Context, stream string, body []byte) (int64, error) {
	s.rec(write{Op: "Append", Stream: stream, Body: body})
	return s.Store.Append(ctx, stream, body)
}

// Transact records each part as the single operation it stands for.
func (s *recordingStore) Transact(ctx context.Context, writes []store.Write) ([]int64, error) {
	for _, w := range writes {
		switch {
		case w.PutOnce != nil:
			s.rec(write{Op: "PutOnce", Key: w.PutOnce.Key().String(), Body: w.PutOnce.Body})
		case w.CAS != nil:
			s.rec(write{Op: "CompareAndSwap", Key: w.CAS.Item.Key().String(), Body: w.CAS.Item.Body})
		case w.Append != nil:
			s.rec(write{Op: "Append", Stream: w.Append.Stream, Body: w.Append.Body})
		}
	}
	return s.Store.Transact(ctx, writes)
}

type fakeTools struct{}

func (fakeTools) VisibleTools(_ context.Context, session ids.SessionID) (httpapi.ToolList, error) {
	return httpapi.ToolList{PolicyVersion: "v1", Tools: []httpapi.Tool{
		{Name: "Read", Description: "Read a file", InputSchema: json.RawMessage(`{"type":"object"}`)}}}, nil
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// stack is the API over the embedded lifecycle: SQLite store,
// actionflow.Service, the embedded Step Functions engine running the ASL.
type stack struct {
	t      testing.TB
	url    string
	svc    *actionflow.Service
	st     *recordingStore
	issuer *auth.Issuer
	exec   *countingExecutor
	bus    *eventbus.Bus
	spec   *openAPI
	client *http.Client
	es     *embedded.Stack
}

func newStack(t testing.TB, opts ...func(*httpapi.Config)) *stack {
	t.Helper()
	return newStackWith(t, nil, opts...)
}

// newStackWith builds the stack with the decider wire returns (nil: the
// by-tool test decider), and the API options it returns. The lifecycle is
// the real embedded stack (package embedded): the embedded Step Functions
// engine runs the ASL file and invokes the handlers; the store under it is
// SQLite wrapped by the recording store. No in-process host worker runs:
// host tasks stay published until a test claims them.
func newStackWith(t testing.TB, wire func(st store.Store) (actionflow.Decider, func(*httpapi.Config)), opts ...func(*httpapi.Config)) *stack {
	t.Helper()
	dir := t.TempDir()
	sq, err := sqlitestore.Open(filepath.Join(dir, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	st := &recordingStore{Store: sq}
	exec := &countingExecutor{}
	var decider actionflow.Decider = ruleDecider{"noop": lifecycle.PermissionAllow, "risky": lifecycle.PermissionAsk, "Bash": lifecycle.PermissionAllow,
		"AskUserQuestion": lifecycle.PermissionAllow}
	if wire != nil {
		d, o := wire(st)
		decider = d
		opts = append([]func(*httpapi.Config){o}, opts...)
	}
	es, err := embedded.Start(context.Background(), embedded.Config{
		StateDir: dir, NoHostWorker: true, Store: st, Decider: decider, Logger: quiet,
		Routes:    executor.Routes{"noop": "test", "risky": "test", "forbidden": "test"},
		Executors: map[string]actionflow.Executor{"test": exec},
	})
	if err != nil {
		sq.Close()
		t.Fatal(err)
	}
	issuer, err := auth.NewIssuer(auth.Keys{Agent: []byte("agent-key-agent-key-agent-key-agent"), Human: []byte("test-key-test-key-test-key-test-key")})
	if err != nil {
		t.Fatal(err)
	}
	ctl := httpapi.ControlService{Service: es.Control}
	cfg := httpapi.Config{Service: es.Service, Auth: issuer, Logger: quiet, Control: ctl, Facts: ctl, Tools: fakeTools{}, Wake: es.Bus, Machines: es.SFNClient,
		PollInterval: 50 * time.Millisecond, Heartbeat: 200 * time.Millisecond, MaxWait: 5 * time.Second, MaxBodyBytes: 16 << 10}
	cfg.Replays = defaultReplays(t, st)
	for _, o := range opts {
		o(&cfg)
	}
	h, err := httpapi.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		es.Close(ctx)
		sq.Close()
	})
	return &stack{t: t, url: srv.URL, svc: es.Service, st: st, issuer: issuer, exec: exec, bus: es.Bus,
		spec: loadOpenAPI(t), client: srv.Client(), es: es}
}

// waiting blocks until the engine has recorded that each action's
// execution reached its task-token wait (its log holds the Authorize
// boundary and the wait's; sfnlocal/doc.go, "Writes per step"), so a test
// that counts writes afterwards sees only its own.
func (s *stack) waiting(actions ...ids.ActionID) {
	s.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for _, a := range actions {
		for {
			entries, err := s.st.Store.ReadLog(context.Background(), "SFNHIST#"+string(a), 0, 100)
			if err != nil {
				s.t.Fatal(err)
			}
			if len(entries) >= 2 {
				break
			}
			if time.Now().After(deadline) {
				s.t.Fatalf("the execution of %s did not reach its wait (%d log entries)", a, len(entries))
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

func (s *stack) token(role string, session ids.SessionID) string {
	s.t.Helper()
	tok, err := s.issuer.Issue(role, session, time.Hour)
	if err != nil {
		s.t.Fatal(err)
	}
	return tok
}

// resp is a recorded response.
type resp struct {
	status int
	header http.Header
	body   []byte
}

func (r resp) decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
}

// errorBody returns the error code and field of an error response.
func (r resp) errorBody(t testing.TB) httpapi.ErrorDetail {
	t.Helper()
	var eb httpapi.ErrorBody
	r.decode(t, &eb)
	return eb.Error
}

// req is one request; body is JSON-encoded unless it is a string or []byte.
type req struct {
	method, path, token string
	body                any
	header              map[string]string
}

// do sends a request and validates the response against api/openapi.yaml.
func (s *stack) do(r req) resp {
	s.t.Helper()
	var rd io.Reader
	switch b := r.body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		enc, err := json.Marshal(b)
		if err != nil {
			s.t.Fatal(err)
		}
		rd = bytes.NewReader(enc)
	}
	hr, err := http.NewRequest(r.method, s.url+r.path, rd)
	if err != nil {
		s.t.Fatal(err)
	}
	if rd != nil {
		hr.Header.Set("Content-Type", "application/json")
	}
	if r.token != "" {
		hr.Header.Set("Authorization", "Bearer "+r.token)
	}
	for k, v := range r.header {
		hr.Header.Set(k, v)
	}
	res, err := s.client.Do(hr)
	if err != nil {
		s.t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		s.t.Fatal(err)
	}
	out := resp{status: res.StatusCode, header: res.Header, body: body}
	s.spec.check(s.t, r.method, hr.URL.Path, out)
	return out
}

func submitBody(tool, args, callID string) map[string]any {
	return map[string]any{"tool": tool, "arguments": json.RawMessage(args), "tool_call_id": callID, "interactive": true}
}

// submit submits and returns the action view.
func (s *stack) submit(token string, session ids.SessionID, key string, body any) httpapi.ActionView {
	s.t.Helper()
	r := s.do(req{method: "POST", path: "/v1/sessions/" + string(session) + "/actions", token: token, body: body,
		header: map[string]string{"Idempotency-Key": key}})
	if r.status != http.StatusAccepted {
		s.t.Fatalf("submit: %d %s", r.status, r.body)
	}
	var v httpapi.ActionView
	r.decode(s.t, &v)
	return v
}

// waitAction long-polls an action until its outcome is known.
func (s *stack) waitAction(token string, id ids.ActionID) httpapi.ActionView {
	s.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		r := s.do(req{method: "GET", path: "/v1/actions/" + string(id) + "?wait=5", token: token})
		if r.status != http.StatusOK {
			s.t.Fatalf("get action: %d %s", r.status, r.body)
		}
		var v httpapi.ActionView
		r.decode(s.t, &v)
		if v.Receipt != nil && v.States.Delivery == lifecycle.DeliveryProjected {
			s.settled(id, deadline)
			return v
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("action %s did not finish: %+v", id, v.States)
		}
	}
}

// settled waits until the action's state machine has recorded its own end:
// the engine writes the execution's final status after the RecordOutcome step
// returned, so a test that counts writes after an action was projected
// would otherwise see that write as its own.
func (s *stack) settled(id ids.ActionID, deadline time.Time) {
	s.t.Helper()
	if s.es == nil {
		return
	}
	for {
		st, err := s.es.SFNClient.Status(context.Background(), id)
		if err != nil {
			s.t.Fatal(err)
		}
		if st != "RUNNING" {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("the state machine of %s still runs after its projection", id)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// pendingApproval waits until the action's approval wait is open.
func (s *stack) pendingApproval(token string, session ids.SessionID, action ids.ActionID) httpapi.ApprovalView {
	s.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		r := s.do(req{method: "GET", path: "/v1/sessions/" + string(session) + "/approvals", token: token})
		var l httpapi.ApprovalList
		r.decode(s.t, &l)
		for _, ap := range l.Approvals {
			if ap.ActionID == action {
				return ap
			}
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("no approval for %s", action)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// defaultReplays is policy replay over the stack's store with an engine of
// no rules of its own (the by-tool test decider records no engine
// decisions, so its actions are skipped): enough for the routes' gate.
func defaultReplays(t testing.TB, st store.Store) *replay.Replayer {
	eng, err := permission.NewEngine(permission.Config{})
	if err != nil {
		t.Fatal(err)
	}
	rp, err := replay.New(replay.Config{Engine: eng, Actions: actionflow.History{Store: st}, Store: st,
		Context: func(a actionflow.Action) permission.Trusted {
			return permission.Trusted{SessionID: a.SessionID, WorkingDir: "/work", ProjectRoot: "/work", Interactive: a.Interactive}
		}})
	if err != nil {
		t.Fatal(err)
	}
	return rp
}
