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
	"github.com/openprogram/lifecycle/shared/apiclient"
	"github.com/openprogram/lifecycle/shared/auth"
	"github.com/openprogram/lifecycle/shared/embedded"
	"github.com/openprogram/lifecycle/shared/hosttools"
	"github.com/openprogram/lifecycle/shared/hostworker"
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

// A remote host worker (lifecycle host) supervises over the HTTP API: its
// process is recorded under its name, its output and end arrive through
// the host routes, a stop request reaches it in a report's answer; a new
// instance of the same name finds what the previous one left lost.
func TestRemoteWorkerSupervisesOverTheAPI(t *testing.T) {
	ws := t.TempDir()
	s := startWithPolicy(t, t.TempDir(), ws, `{"version":"v1","mode":"bypassPermissions"}`)
	t.Cleanup(func() { s.Close(context.Background()) })
	issuer, err := auth.NewIssuer(auth.Keys{Agent: []byte("test-key-test-key-test-key-test-key"), Human: []byte("human-key-human-key-human-key-human")})
	if err != nil {
		t.Fatal(err)
	}
	h, err := httpapi.New(httpapi.Config{Service: s.Service, Auth: issuer, NoUI: true})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	tok, _ := issuer.Issue(auth.RoleAgent, "ses_e2e", time.Hour)
	host := apiclient.Host{Client: &apiclient.Client{BaseURL: srv.URL, Token: tok}}
	runner, err := hosttools.NewRunner(ws, "")
	if err != nil {
		t.Fatal(err)
	}
	worker := func() (*hostworker.Worker, context.CancelFunc, chan error) {
		w := &hostworker.Worker{Host: host, Runner: runner, Poll: time.Second, Processes: hostworker.NewSupervisor(host, "laptop:/ws", nil)}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- w.Run(ctx) }()
		return w, cancel, done
	}
	w1, stop1, done1 := worker()
	ctx := context.Background()
	procOf := func(command string) managed.Record {
		act := submit(t, s, "Bash", fmt.Sprintf(`{"command":%q,"run_in_background":true}`, command))
		act = waitFor(t, s, act.ActionID, terminal)
		rc, err := s.Service.GetReceipt(ctx, act.ActionID)
		if err != nil || rc.Outcome != lifecycle.OutcomeSucceeded {
			t.Fatalf("receipt %+v %v", rc, err)
		}
		r, err := s.Processes.Get(ctx, regexp.MustCompile(`proc_[0-9a-z]+`).FindString(rc.Output))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	until := func(id string, cond func(managed.Record) bool) managed.Record {
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			r, err := s.Processes.Get(ctx, id)
			if err == nil && cond(r) {
				return r
			}
			if time.Now().After(deadline) {
				t.Fatalf("process %s: %+v %v", id, r, err)
			}
		}
	}
	r := procOf("echo remote; exec sleep 300")
	if r.Supervisor.Host != "laptop:/ws" || r.Supervisor.ID != w1.Processes.Self.ID {
		t.Fatalf("supervisor %+v", r.Supervisor)
	}
	until(r.ProcessID, func(r managed.Record) bool { return r.Streams[managed.Stdout].Bytes == int64(len("remote\n")) })
	if p, err := s.Processes.Output(ctx, r.ProcessID, managed.Stdout, 0, 0); err != nil || string(p.Data) != "remote\n" {
		t.Fatalf("output %+v %v", p, err)
	}
	if _, err := s.Processes.RequestStop(ctx, r.ProcessID, managed.StopRequest{CommandID: "cmd_stop", By: "test"}); err != nil {
		t.Fatal(err)
	}
	if got := until(r.ProcessID, func(r managed.Record) bool { return r.Status != managed.Running }); got.Status != managed.Stopped || got.ExitCode == nil {
		t.Fatalf("stopped over the API: %+v", got)
	}

	// The worker is killed with a process running; its successor of the same name finds it lost.
	left := procOf("sleep 300")
	w1.Processes.Abandon()
	stop1()
	<-done1
	_, stop2, done2 := worker()
	defer func() { stop2(); <-done2 }()
	if got := until(left.ProcessID, func(r managed.Record) bool { return r.Status != managed.Running }); got.Status != managed.Lost {
		t.Fatalf("the previous instance's process: %+v", got)
	}
}
