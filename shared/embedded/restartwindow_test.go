package embedded_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/auth"
	"github.com/openprogram/lifecycle/shared/embedded"
	"github.com/openprogram/lifecycle/shared/httpapi"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/policystore"
	"github.com/openprogram/lifecycle/shared/recovery"
)

// served is the stack behind its HTTP API, wired as lifecycle serve
// wires it (the serve flag's window is the policy store's default).
type served struct {
	*embedded.Stack
	srv   *httptest.Server
	human string
}

var testKey = []byte("restart-window-test-key-0123456789abcdef")

func serveStack(t *testing.T, dir, ws string, ex *countingExecutor, flag recovery.Window) *served {
	t.Helper()
	s := start(t, dir, ws, ex, func(c *embedded.Config) { c.RestartWindow = flag })
	iss, err := auth.NewIssuer(auth.Keys{Agent: testKey})
	if err != nil {
		t.Fatal(err)
	}
	ctl := httpapi.ControlService{Service: s.Control}
	h, err := httpapi.New(httpapi.Config{Service: s.Service, Auth: iss, Control: ctl, Facts: ctl, NoUI: true,
		Policies: policystore.New(s.Store, nil, policystore.WithRestartDefault(flag.Seconds()))})
	if err != nil {
		t.Fatal(err)
	}
	human, err := iss.Issue(auth.RoleHuman, "ses_e2e", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return &served{Stack: s, srv: httptest.NewServer(h), human: human}
}

// stop is SIGTERM (orderly: running executions get a restart-owned pause
// with their intent) or, when hard, SIGKILL (nothing is written).
func (s *served) stop(t *testing.T, hard bool) {
	t.Helper()
	s.srv.Close()
	ctx := context.Background()
	if hard {
		c, cancel := context.WithCancel(ctx)
		cancel()
		ctx = c
	}
	if err := s.Close(ctx); err != nil && !hard {
		t.Fatal(err)
	}
}

func (s *served) call(t *testing.T, method, path string, body any, out any) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, s.srv.URL+path, rd)
	req.Header.Set("Authorization", "Bearer "+s.human)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", fmt.Sprint(time.Now().UnixNano()))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	}
	return resp.StatusCode
}

func (s *served) execution(t *testing.T, id ids.ExecutionID) actionflow.Execution {
	t.Helper()
	var ev httpapi.ExecutionView
	s.call(t, "GET", "/v1/executions/"+string(id), nil, &ev)
	return ev.Execution
}

// TestSessionRestartWindowThroughTheAPI (issue 11, point 2): the
// restart_window_seconds a session's policy sets through the API decides
// whether its execution continues after an orderly stop and a restart on
// the same state directory; the serve flag is only the default for a
// session that sets none. A finite window is measured from the shutdown
// intent, and an intent made finite stays so: a later unlimited policy and
// more restarts do not revive it.
func TestSessionRestartWindowThroughTheAPI(t *testing.T) {
	i64 := func(v int64) *int64 { return &v }
	cases := []struct {
		name   string
		flag   recovery.Window
		window *int64 // the session's restart_window_seconds; nil: none set
		source string
		gap    time.Duration // between the stop and the restart
		hard   bool          // SIGKILL instead of SIGTERM
		status actionflow.ExecutionStatus
		// outcome and window of the restart intent after the restart
		outcome, intentWindow string
		deadline              time.Duration // 0: none (unlimited)
	}{
		{"-1 under a flag of 0: continues", recovery.Within(0), i64(-1), policystore.WindowFromSession, 0, false,
			actionflow.ExecRunning, recovery.Resumed, "-1", 0},
		{"0 under a flag of -1: kept paused", recovery.Unlimited(), i64(0), policystore.WindowFromSession, 0, false,
			actionflow.ExecPaused, recovery.Expired, "0", 0},
		{"1h under a flag of 0: continues within the hour", recovery.Within(0), i64(3600), policystore.WindowFromSession, 0, false,
			actionflow.ExecRunning, recovery.Resumed, "1h0m0s", time.Hour},
		{"1s under a flag of -1: expired 2s after the shutdown", recovery.Unlimited(), i64(1), policystore.WindowFromSession, 2 * time.Second, false,
			actionflow.ExecPaused, recovery.Expired, "1s", time.Second},
		{"1s after a crash: measured from the last activity", recovery.Unlimited(), i64(1), policystore.WindowFromSession, 2 * time.Second, true,
			actionflow.ExecPaused, recovery.Expired, "1s", time.Second},
		{"none set: the flag's 0 applies", recovery.Within(0), nil, policystore.WindowFromDefault, 0, false,
			actionflow.ExecPaused, recovery.Expired, "0", 0},
		{"none set: the flag's -1 applies", recovery.Unlimited(), nil, policystore.WindowFromDefault, 0, false,
			actionflow.ExecRunning, recovery.Resumed, "-1", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir, ws := t.TempDir(), t.TempDir()
			ex := &countingExecutor{}
			s := serveStack(t, dir, ws, ex, tc.flag)
			var doc policystore.Document
			s.call(t, "PUT", "/v1/sessions/ses_e2e/policy", httpapi.PolicyBody{ExpectedVersion: i64(0), Policy: json.RawMessage(`{}`),
				RestartWindowSeconds: tc.window}, &doc)
			if doc.RestartWindowSource != tc.source || (tc.window != nil && doc.RestartWindowSeconds != *tc.window) ||
				(tc.window == nil && doc.RestartWindowSeconds != tc.flag.Seconds()) {
				t.Fatalf("policy %+v", doc)
			}
			var av httpapi.ActionView
			s.call(t, "POST", "/v1/sessions/ses_e2e/actions", map[string]any{"tool": "mutate", "arguments": map[string]any{"target": "a"},
				"tool_call_id": "call_1", "interactive": true}, &av)
			waitFor(t, s.Stack, av.ActionID, terminal)
			s.stop(t, tc.hard)
			time.Sleep(tc.gap)

			s = serveStack(t, dir, ws, ex, tc.flag)
			defer func() { s.stop(t, false) }()
			e := s.execution(t, av.ExecutionID)
			r := e.Restart
			if e.Status != tc.status || r == nil || r.Outcome != tc.outcome || r.Window != tc.intentWindow {
				t.Fatalf("after the restart: %s %+v", e.Status, r)
			}
			wantReason := map[bool]string{false: "shutdown", true: "abandoned"}[tc.hard]
			switch {
			case r.Reason != wantReason:
				t.Fatalf("intent reason %q, want %q", r.Reason, wantReason)
			case tc.deadline == 0 && tc.intentWindow != "0" && r.Deadline != nil:
				t.Fatalf("unlimited intent with a deadline: %+v", r)
			case tc.deadline > 0 && (r.Deadline == nil || !r.Deadline.Equal(r.At.Add(tc.deadline))):
				t.Fatalf("deadline %v, want %v after %v", r.Deadline, tc.deadline, r.At)
			}
			if ex.calls.Load() != 1 {
				t.Fatalf("executor called %d times", ex.calls.Load())
			}
			if tc.outcome != recovery.Expired {
				return
			}
			// The session now allows unlimited continuation; the expired
			// intent stays expired across another stop and restart.
			s.call(t, "PUT", "/v1/sessions/ses_e2e/policy", httpapi.PolicyBody{ExpectedVersion: i64(1), Policy: json.RawMessage(`{}`),
				RestartWindowSeconds: i64(-1)}, nil)
			s.stop(t, false)
			s = serveStack(t, dir, ws, ex, tc.flag)
			again := s.execution(t, av.ExecutionID)
			if again.Status != actionflow.ExecPaused || again.Restart == nil || again.Restart.Outcome != recovery.Expired ||
				!sameDeadline(again.Restart.Deadline, r.Deadline) {
				t.Fatalf("a finite intent did not stay finite: %s %+v (was %+v)", again.Status, again.Restart, r)
			}
		})
	}
}

func sameDeadline(a, b *time.Time) bool {
	return (a == nil) == (b == nil) && (a == nil || a.Equal(*b))
}
