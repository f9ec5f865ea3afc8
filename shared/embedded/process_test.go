package embedded_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/activity"
	"github.com/openprogram/lifecycle/shared/auth"
	"github.com/openprogram/lifecycle/shared/embedded"
	"github.com/openprogram/lifecycle/shared/httpapi"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	managed "github.com/openprogram/lifecycle/shared/process"
)

// apiOf serves the HTTP API of a stack for the test's session (ses_e2e)
// and returns a GET/POST helper with a human token.
func apiOf(t *testing.T, s *embedded.Stack) func(method, path string, body, out any) int {
	t.Helper()
	issuer, err := auth.NewIssuer(auth.Keys{Agent: []byte("test-key-test-key-test-key-test-key"), Human: []byte("human-key-human-key-human-key-human")})
	if err != nil {
		t.Fatal(err)
	}
	ctl := httpapi.ControlService{Service: s.Control}
	h, err := httpapi.New(httpapi.Config{Service: s.Service, Auth: issuer, Control: ctl, Facts: ctl, NoUI: true})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	tok, err := issuer.Issue(auth.RoleHuman, "ses_e2e", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return func(method, path string, body, out any) int {
		var rd *strings.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			rd = strings.NewReader(string(b))
		} else {
			rd = strings.NewReader("")
		}
		req, _ := http.NewRequest(method, srv.URL+path, rd)
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if out != nil {
			if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
				t.Fatalf("%s %s: %v", method, path, err)
			}
		}
		return resp.StatusCode
	}
}

// A restart in the middle of a running background process. Killed (a hard
// stop: the in-process worker dies with the stack, unrecorded), the next
// start's supervisor report finds the process lost, and its branch shows
// it in Needs attention (process_lost) until a person acknowledges it (a
// stop, answered rejected: nothing can stop it from here). An orderly
// shutdown instead stops it and records it stopped by worker_shutdown.
// Nothing signals the saved PID: the process is gone either way, and the
// record's PID names no live process of ours.
func TestRestartDuringABackgroundProcess(t *testing.T) {
	cases := []struct {
		name     string
		killed   bool
		want     managed.Status
		attended bool
	}{
		{name: "killed: the process is lost, in Needs attention", killed: true, want: managed.Lost, attended: true},
		{name: "orderly shutdown: the process is stopped", killed: false, want: managed.Stopped},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir, ws := t.TempDir(), t.TempDir()
			policy := `{"version":"v1","allow":["Bash(sleep *)"]}`
			withWorker := func(c *embedded.Config) { c.NoHostWorker = false }
			a := startWithPolicy(t, dir, ws, policy, withWorker)
			act := submit(t, a, "Bash", `{"command":"sleep 300","run_in_background":true}`)
			act = waitFor(t, a, act.ActionID, terminal)
			rc, err := a.Service.GetReceipt(context.Background(), act.ActionID)
			if err != nil || rc.Outcome != lifecycle.OutcomeSucceeded {
				t.Fatalf("receipt %+v %v", rc, err)
			}
			id := regexp.MustCompile(`proc_[0-9a-z]+`).FindString(rc.Output)
			if r, err := a.Processes.Get(context.Background(), id); err != nil || r.Status != managed.Running {
				t.Fatalf("before the restart: %+v %v", r, err)
			}
			ctx := context.Background()
			if tc.killed {
				c, cancel := context.WithCancel(ctx)
				cancel()
				ctx = c
			}
			a.Close(ctx)
			if r, _ := a.Processes.Get(context.Background(), id); tc.killed != (r.Status == managed.Running) {
				t.Fatalf("after the stop, before the restart: %+v", r)
			}

			b := startWithPolicy(t, dir, ws, policy, withWorker)
			t.Cleanup(func() { b.Close(context.Background()) })
			call := apiOf(t, b)
			var r managed.Record
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				if st := call("GET", "/v1/processes/"+id, nil, &r); st != 200 {
					t.Fatalf("GET process: %d", st)
				}
				if r.Status == tc.want || time.Now().After(deadline) {
					break
				}
			}
			if r.Status != tc.want {
				t.Fatalf("after the restart: %+v, want %s", r, tc.want)
			}
			var act2 activity.Activity
			call("GET", "/v1/sessions/ses_e2e/activity", nil, &act2)
			found := false
			for _, row := range act2.NeedsAttention {
				for _, at := range row.Attention {
					if at.Kind == "process_lost" && at.ProcessID == id && at.ExecutionID == act.ExecutionID {
						found = true
					}
				}
			}
			if found != tc.attended {
				t.Fatalf("process_lost in Needs attention: %v, want %v: %+v", found, tc.attended, act2)
			}
			if !tc.killed {
				if r.Stop == nil || r.Stop.By != "worker_shutdown" {
					t.Fatalf("stopped by: %+v", r.Stop)
				}
				return
			}
			var res managed.StopResult
			if st := call("POST", "/v1/processes/"+id+"/stop", map[string]any{"command_id": "cmd_ack"}, &res); st != 200 || res.Status != "rejected" {
				t.Fatalf("stop of a lost process: %d %+v", st, res)
			}
			call("GET", "/v1/sessions/ses_e2e/activity", nil, &act2)
			if act2.Counts.NeedsAttention != 0 {
				t.Fatalf("an acknowledged lost process still needs attention: %s", fmt.Sprint(act2.NeedsAttention))
			}
		})
	}
}
