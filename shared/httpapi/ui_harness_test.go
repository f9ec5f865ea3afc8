package httpapi_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/activity"
	"github.com/openprogram/lifecycle/shared/auth"
	"github.com/openprogram/lifecycle/shared/control"
	"github.com/openprogram/lifecycle/shared/embedded"
	"github.com/openprogram/lifecycle/shared/executor"
	"github.com/openprogram/lifecycle/shared/httpapi"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/store/sqlitestore"
)

// unknownExecutor reports an outcome nobody can vouch for (a connection
// that dropped mid-call): the receipt says unknown, reconciliation required.
type unknownExecutor struct{ calls atomic.Int64 }

func (e *unknownExecutor) Execute(context.Context, actionflow.Task) (actionflow.ToolResult, error) {
	e.calls.Add(1)
	return actionflow.ToolResult{Outcome: lifecycle.OutcomeUnknown, ErrorCode: "connection_reset", Error: "the connection dropped mid-call"}, nil
}

// uiStack is the API over the real embedded stack as the browser tests
// need it: the real command service, tools that ask ("risky"), run
// ("noop") or end unknown ("flaky"), and one fault: losing the answer to
// a decision the server did apply.
type uiStack struct {
	*stack
	srv     *httptest.Server
	ctl     *control.Service
	unknown *unknownExecutor
	// dropDecision: the next POST /v1/approvals/... is served, then its
	// connection is closed before the answer is complete.
	dropDecision atomic.Bool
	dropped      chan int
	// holdDecision: the next POST /v1/approvals/... waits until the
	// channel closes, then is served; its status goes to held.
	holdDecision atomic.Pointer[chan struct{}]
	held         chan int
	// noResponseRecord: executions whose model response record is
	// missing (what the model loop would report through FactSource).
	noResponseRecord sync.Map
	// dropSuffix: the next POST whose path ends with it is served, then
	// its answer breaks off (as dropDecision; the status goes to dropped).
	dropSuffix atomic.Pointer[string]
	// holdEvents: while set, a request for the event stream waits until
	// the channel closes (no event reaches a page that reconnects).
	holdEvents atomic.Pointer[chan struct{}]
}

// Facts are the command service's (pending commands) and the missing
// response records (httpapi.FactSource).
func (s *uiStack) Facts(ctx context.Context, session ids.SessionID, recs actionflow.SessionRecords) (map[ids.ExecutionID]activity.Facts, error) {
	out, err := httpapi.ControlService{Service: s.ctl}.Facts(ctx, session, recs)
	if err != nil {
		return nil, err
	}
	for _, e := range recs.Executions {
		if _, ok := s.noResponseRecord.Load(e.ExecutionID); ok {
			f := out[e.ExecutionID]
			f.ResponseRecordMissing = true
			out[e.ExecutionID] = f
		}
	}
	return out, nil
}

func newUIStack(t *testing.T, opts ...func(*httpapi.Config)) *uiStack {
	t.Helper()
	return newUIStackEngine(t, nil, opts...)
}

// newUIStackEngine is newUIStack with a change to the embedded stack's
// configuration (a fake engine clock, for instance).
func newUIStackEngine(t *testing.T, engine func(*embedded.Config), opts ...func(*httpapi.Config)) *uiStack {
	t.Helper()
	dir := t.TempDir()
	sq, err := sqlitestore.Open(filepath.Join(dir, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	st := &recordingStore{Store: sq}
	exec, unknown := &countingExecutor{}, &unknownExecutor{}
	decider := ruleDecider{"noop": lifecycle.PermissionAllow, "risky": lifecycle.PermissionAsk, "flaky": lifecycle.PermissionAllow,
		"AskUserQuestion": lifecycle.PermissionAllow}
	ecfg := embedded.Config{
		StateDir: dir, NoHostWorker: true, Store: st, Decider: decider, Logger: quiet, SweepInterval: -1,
		Routes:    executor.Routes{"noop": "test", "risky": "test", "flaky": "unknown", "AskUserQuestion": "question"},
		Executors: map[string]actionflow.Executor{"test": exec, "unknown": unknown},
	}
	if engine != nil {
		engine(&ecfg)
	}
	es, err := embedded.Start(context.Background(), ecfg)
	if err != nil {
		sq.Close()
		t.Fatal(err)
	}
	s := &uiStack{ctl: es.Control, unknown: unknown, dropped: make(chan int, 1), held: make(chan int, 1)}
	issuer := newIssuer(t)
	cfg := httpapi.Config{Service: es.Service, Auth: issuer, Logger: quiet, Control: httpapi.ControlService{Service: es.Control}, Facts: s,
		Wake: es.Bus, PollInterval: 50 * time.Millisecond, Heartbeat: time.Second, MaxWait: 5 * time.Second, Machines: es.SFNClient}
	for _, o := range opts {
		o(&cfg)
	}
	h, err := httpapi.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.srv = httptest.NewServer(s.faults(h))
	t.Cleanup(func() {
		s.srv.CloseClientConnections()
		s.srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		es.Close(ctx)
		sq.Close()
	})
	s.stack = &stack{t: t, url: s.srv.URL, svc: es.Service, st: st, issuer: issuer, exec: exec, bus: es.Bus,
		spec: loadOpenAPI(t), client: s.srv.Client()}
	return s
}

func newIssuer(t *testing.T) *auth.Issuer {
	t.Helper()
	issuer, err := auth.NewIssuer(auth.Keys{Agent: []byte("agent-key-agent-key-agent-key-agent"), Human: []byte("test-key-test-key-test-key-test-key")})
	if err != nil {
		t.Fatal(err)
	}
	return issuer
}

func (s *uiStack) faults(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hold := s.holdEvents.Load(); hold != nil && r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/events") {
			select {
			case <-*hold:
			case <-r.Context().Done():
				return
			}
		}
		if p := s.dropSuffix.Load(); p != nil && r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, *p) && s.dropSuffix.CompareAndSwap(p, nil) {
			s.dropped <- breakOff(h, w, r)
			panic(http.ErrAbortHandler)
		}
		if r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/v1/approvals/") && s.dropDecision.CompareAndSwap(true, false) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r) // the server decides...
			s.dropped <- rec.Code
			// ...and the answer breaks off on the way: the status line
			// arrives (so the browser cannot resend the request on its
			// own), the body never completes.
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", strconv.Itoa(rec.Body.Len()))
			w.WriteHeader(rec.Code)
			w.Write(rec.Body.Bytes()[:1])
			http.NewResponseController(w).Flush()
			panic(http.ErrAbortHandler)
		}
		if r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/v1/approvals/") {
			if hold := s.holdDecision.Swap(nil); hold != nil {
				select {
				case <-*hold:
				case <-r.Context().Done():
				}
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, r)
				s.held <- rec.Code
				for k, v := range rec.Header() {
					w.Header()[k] = v
				}
				w.WriteHeader(rec.Code)
				w.Write(rec.Body.Bytes())
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

// chromium finds Debian's chromium (.ci/run installs it) or skips.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no chromium on this machine (.ci/run installs it)")
	return ""
}

// newBrowser starts one headless chromium for a test and its subtests.
// Every page opens in its own browser context (its own sessionStorage and
// connections); only loopback hosts resolve.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	path := chromium(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 960),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancelBrowser()
		cancelAlloc()
	})
	// The first run starts the browser; it must not carry a timeout.
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return bctx
}

// artifactsDir is where screenshots go: $ARTIFACTS_DIR, or the
// repository's testdata/artifacts (gitignored), under "ui".
func artifactsDir(t *testing.T) string {
	t.Helper()
	base := os.Getenv("ARTIFACTS_DIR")
	if base == "" {
		dir, err := os.Getwd()
		if err != nil {
			t.Fatal(err)
		}
		for {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				break
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				t.Fatal("no go.mod above the test's directory")
			}
			dir = parent
		}
		base = filepath.Join(dir, "testdata", "artifacts")
	}
	out := filepath.Join(base, "ui")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	return out
}
