package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/activity"
	"github.com/openprogram/lifecycle/shared/httpapi"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/process"
	"github.com/openprogram/lifecycle/shared/sandbox"
)

var procID = regexp.MustCompile(`proc_[0-9a-z]+`)

// background submits a Bash call with run_in_background (into exec when
// set) as the agent and returns the settled action and the process id
// its receipt names.
func (s *serveStack) background(t *testing.T, token string, exec ids.ExecutionID, command string) (httpapi.ActionView, string) {
	t.Helper()
	n := s.calls.Add(1)
	body := map[string]any{"tool": "Bash", "tool_call_id": fmt.Sprintf("call_%d", n), "interactive": true,
		"arguments": map[string]any{"command": command, "run_in_background": true}}
	if exec != "" {
		body["execution_id"] = exec
	}
	var v httpapi.ActionView
	if _, err := s.do("POST", "/v1/sessions/"+string(s.session)+"/actions", token, body, &v,
		map[string]string{"Idempotency-Key": fmt.Sprintf("key_%d", n)}); err != nil {
		t.Fatal(err)
	}
	v, err := s.settled(token, v.ActionID, 60*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if v.Receipt == nil || v.Receipt.Outcome != lifecycle.OutcomeSucceeded {
		t.Fatalf("background start: want a succeeded receipt, got %+v", v.Receipt)
	}
	id := procID.FindString(v.Receipt.Output)
	if id == "" {
		t.Fatalf("the receipt names no process: %q", v.Receipt.Output)
	}
	return v, id
}

func (s *serveStack) process(t *testing.T, token, id string) process.Record {
	t.Helper()
	var r process.Record
	if _, err := s.do("GET", "/v1/processes/"+id, token, nil, &r, nil); err != nil {
		t.Fatal(err)
	}
	return r
}

// processEnded polls a process until it is no longer running.
func (s *serveStack) processEnded(t *testing.T, token, id string) process.Record {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); ; {
		r := s.process(t, token, id)
		if r.Status != process.Running {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %s still running: %+v", id, r)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// outputUntil pages a stream from after until its text contains want.
func (s *serveStack) outputUntil(t *testing.T, token, id, stream string, after int64, want string) (string, httpapi.OutputPage) {
	t.Helper()
	var text strings.Builder
	for deadline := time.Now().Add(60 * time.Second); ; {
		var p httpapi.OutputPage
		if _, err := s.do("GET", fmt.Sprintf("/v1/processes/%s/output?stream=%s&after=%d", id, stream, after), token, nil, &p, nil); err != nil {
			t.Fatal(err)
		}
		if p.From != after {
			t.Fatalf("page from %d, asked after %d (nothing is dropped this early): %+v", p.From, after, p)
		}
		text.WriteString(p.Data)
		after = p.Next
		if strings.Contains(text.String(), want) {
			return text.String(), p
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s of %s never showed %q: %q", stream, id, want, text.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (s *serveStack) activity(t *testing.T) activity.Activity {
	t.Helper()
	var a activity.Activity
	if _, err := s.do("GET", "/v1/sessions/"+string(s.session)+"/activity", s.human, nil, &a, nil); err != nil {
		t.Fatal(err)
	}
	return a
}

// processesOf is exec's processes as Activity shows them.
func processesOf(a activity.Activity, exec ids.ExecutionID) []activity.ProcessRow {
	for _, rows := range [][]activity.Row{a.NeedsAttention, a.InProgress, a.History} {
		for _, r := range rows {
			for _, e := range r.Executions {
				if e.ExecutionID == exec && !e.Shared {
					return e.Processes
				}
			}
		}
	}
	return nil
}

// sectionOf is the section of exec's branch.
func sectionOf(a activity.Activity, exec ids.ExecutionID) activity.Section {
	for _, rows := range [][]activity.Row{a.NeedsAttention, a.InProgress, a.History} {
		for _, r := range rows {
			for _, e := range r.Executions {
				if e.ExecutionID == exec && !e.Shared {
					return r.Section
				}
			}
		}
	}
	return ""
}

// A background Bash call through the HTTP API of a real `lifecycle serve`:
// its receipt succeeds at once with a process id; the process is listed,
// its output paged by cursor per stream; its branch stays In progress
// after the execution ended, until the process is stopped (idempotent by
// command id), which records stopped with an exit code; a process that
// exits on its own records its code; Cancel of the owning execution stops
// its process; bad input is a 400 naming the field, another session's
// agent sees nothing.
func TestBackgroundProcessThroughTheAPI(t *testing.T) {
	s := startServeStack(t)
	s.setPolicy(t, `{"version":"proc","mode":"bypassPermissions"}`)
	agent := s.agent(t, s.session)
	other := s.agent(t, "ses_other")

	v, id := s.background(t, agent, "", `printf 'first\n'; printf 'oops\n' >&2; i=0; while true; do echo tick $i; i=$((i+1)); sleep 0.2; done`)
	exec := v.ExecutionID
	var list httpapi.ProcessList
	if _, err := s.do("GET", "/v1/executions/"+string(exec)+"/processes", agent, nil, &list, nil); err != nil {
		t.Fatal(err)
	}
	if len(list.Processes) != 1 || list.Processes[0].ProcessID != id || list.Processes[0].Status != process.Running ||
		list.Processes[0].ActionID != v.ActionID || list.Processes[0].ExecutionID != exec {
		t.Fatalf("execution's processes: %+v", list)
	}

	// Output pages: the cursor moves on, a page after it holds only what came later.
	text, p := s.outputUntil(t, agent, id, process.Stdout, 0, "tick 2")
	if !strings.HasPrefix(text, "first\ntick 0\n") {
		t.Fatalf("stdout: %q", text)
	}
	later, _ := s.outputUntil(t, agent, id, process.Stdout, p.Next, "tick")
	if strings.Contains(later, "first") {
		t.Fatalf("a page after the cursor repeated earlier output: %q", later)
	}
	if errText, _ := s.outputUntil(t, agent, id, process.Stderr, 0, "oops"); errText != "oops\n" {
		t.Fatalf("stderr: %q", errText)
	}
	var small httpapi.OutputPage
	if _, err := s.do("GET", "/v1/processes/"+id+"/output?after=1&limit=3", agent, nil, &small, nil); err != nil || small.Data != "irs" || small.Next != 4 {
		t.Fatalf("limited page: %+v %v", small, err)
	}

	// Bad input and other sessions.
	refused := []struct {
		name, method, path, token string
		body                      any
		status                    int
	}{
		{"unknown stream", "GET", "/v1/processes/" + id + "/output?stream=stdin", agent, nil, http.StatusBadRequest},
		{"negative cursor", "GET", "/v1/processes/" + id + "/output?after=-1", agent, nil, http.StatusBadRequest},
		{"zero limit", "GET", "/v1/processes/" + id + "/output?limit=0", agent, nil, http.StatusBadRequest},
		{"stop without command_id", "POST", "/v1/processes/" + id + "/stop", agent, map[string]any{}, http.StatusBadRequest},
		{"another session reads it", "GET", "/v1/processes/" + id, other, nil, http.StatusForbidden},
		{"another session stops it", "POST", "/v1/processes/" + id + "/stop", other, map[string]any{"command_id": "cmd_x"}, http.StatusForbidden},
		{"an unknown process", "GET", "/v1/processes/proc_nope", agent, nil, http.StatusForbidden},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			st, err := s.do(tc.method, tc.path, tc.token, tc.body, nil, nil)
			if st != tc.status {
				t.Fatalf("got %d (%v), want %d", st, err, tc.status)
			}
		})
	}
	if r := s.process(t, agent, id); r.Status != process.Running || r.Stop != nil {
		t.Fatalf("a refused request changed the process: %+v", r)
	}

	// The agent ends its execution: the branch stays In progress while the process runs.
	version := s.execution(t, agent, exec).Execution.Version
	if _, err := s.do("POST", "/v1/executions/"+string(exec)+"/end", agent,
		map[string]any{"command_id": "cmd_end", "expected_version": version, "payload": map[string]any{"status": "completed"}}, nil, nil); err != nil {
		t.Fatal(err)
	}
	act := s.activity(t)
	if sec := sectionOf(act, exec); sec != activity.InProgress {
		t.Fatalf("ended execution with a running process: section %q, want in_progress", sec)
	}
	if ps := processesOf(act, exec); len(ps) != 1 || ps[0].ProcessID != id || ps[0].Status != "running" || ps[0].ActionID != v.ActionID {
		t.Fatalf("the execution's processes in Activity: %+v", ps)
	}
	if r := s.process(t, agent, id); r.Status != process.Running {
		t.Fatalf("End stopped the process: %+v", r)
	}

	// The owning agent stops it: accepted, the same again is the same answer, then stopped with a code.
	for i := 0; i < 2; i++ {
		var res process.StopResult
		st, err := s.do("POST", "/v1/processes/"+id+"/stop", agent, map[string]any{"command_id": "cmd_stop"}, &res, nil)
		if err != nil || (st != http.StatusAccepted && res.Status != "applied") || res.Record.Stop == nil || res.Record.Stop.CommandID != "cmd_stop" {
			t.Fatalf("stop #%d: %d %+v %v", i, st, res, err)
		}
	}
	r := s.processEnded(t, agent, id)
	if r.Status != process.Stopped || r.ExitCode == nil || r.EndedAt == nil {
		t.Fatalf("stopped process: %+v", r)
	}
	if sec := sectionOf(s.activity(t), exec); sec != activity.History {
		t.Fatalf("after the stop: section %q, want history", sec)
	}
	var last httpapi.OutputPage
	if _, err := s.do("GET", fmt.Sprintf("/v1/processes/%s/output?after=%d", id, r.Streams[process.Stdout].Bytes), agent, nil, &last, nil); err != nil || !last.Ended || last.Data != "" {
		t.Fatalf("the end of the output: %+v %v", last, err)
	}

	// A process that exits on its own records its code.
	v2, id2 := s.background(t, agent, "", "echo done; exit 3")
	r2 := s.processEnded(t, agent, id2)
	if r2.Status != process.Exited || r2.ExitCode == nil || *r2.ExitCode != 3 || r2.Stop != nil {
		t.Fatalf("exited process: %+v", r2)
	}
	if out, _ := s.outputUntil(t, agent, id2, process.Stdout, 0, "done"); out != "done\n" {
		t.Fatalf("its output: %q", out)
	}
	_ = v2

	// Cancel of the owning execution stops its process.
	v3, id3 := s.background(t, agent, "", "sleep 300")
	ver := s.execution(t, s.human, v3.ExecutionID).Execution.Version
	if _, err := s.do("POST", "/v1/executions/"+string(v3.ExecutionID)+"/commands", s.human,
		map[string]any{"command_id": "cmd_cancel", "type": "cancel", "expected_version": ver}, nil, nil); err != nil {
		t.Fatal(err)
	}
	r3 := s.processEnded(t, agent, id3)
	if r3.Status != process.Stopped || r3.Stop == nil || r3.Stop.By != "execution_cancelled" {
		t.Fatalf("cancelled execution's process: %+v", r3)
	}
}

// The CLI's ps, logs and stop, with an agent token: ps lists the running
// process (and, with --all, the ended one), logs prints its output, stop
// is accepted, and logs --follow returns once the process has ended.
// A background process runs in the call's sandbox like a foreground one:
// the start receipt records the profile, and a write outside the
// workspace is refused by the read-only filesystem.
func TestBackgroundProcessRunsInTheSandbox(t *testing.T) {
	if _, err := sandbox.Find(); err != nil {
		t.Skip(err)
	}
	s := startServeStack(t)
	s.setPolicy(t, `{"version":"proc","mode":"bypassPermissions"}`)
	agent := s.agent(t, s.session)
	outside := filepath.Join("/var/tmp", fmt.Sprintf("lifecycle-bg-%d", time.Now().UnixNano()))
	v, id := s.background(t, agent, "", "touch "+outside+"; echo done")
	if v.Receipt.Sandbox == nil || v.Receipt.Sandbox.Mode != sandbox.ModeBwrap || v.Receipt.Sandbox.Network {
		t.Fatalf("the start receipt does not record the default sandbox: %+v", v.Receipt.Sandbox)
	}
	if text, _ := s.outputUntil(t, agent, id, process.Stderr, 0, "Read-only file system"); !strings.Contains(text, "Read-only") {
		t.Fatalf("stderr: %q", text)
	}
	if _, err := os.Stat(outside); err == nil {
		os.Remove(outside)
		t.Fatal("a background process wrote outside the workspace")
	}
}

func TestProcessesThroughTheCLI(t *testing.T) {
	s := startServeStack(t)
	s.setPolicy(t, `{"version":"proc","mode":"bypassPermissions"}`)
	agent := s.agent(t, s.session)
	_, id := s.background(t, agent, "", `echo hello; echo warn >&2; exec sleep 300`)
	_, done := s.background(t, agent, "", `exit 0`)
	s.processEnded(t, agent, done)
	s.outputUntil(t, agent, id, process.Stdout, 0, "hello")

	cases := []struct {
		name    string
		args    []string
		want    []string
		notWant []string
	}{
		{"ps lists the running process", []string{"ps"}, []string{id, "running", "sleep 300"}, []string{done}},
		{"ps --all lists the ended one too", []string{"ps", "--all"}, []string{id, done, "exited (0)"}, nil},
		{"logs prints stdout", []string{"logs", id}, []string{"hello\n"}, []string{"warn"}},
		{"logs --stream stderr", []string{"logs", id, "--stream", "stderr"}, []string{"warn\n"}, []string{"hello"}},
		{"stop is accepted", []string{"stop", id, "--id", "cmd_cli_stop"}, []string{id + " stop accepted"}, nil},
		{"logs --follow ends with the process", []string{"logs", id, "--follow"}, []string{"hello\n", "[process " + id + " stopped]"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := s.cli(agent, tc.args...)
			if err != nil {
				t.Fatalf("%v: %v\n%s", tc.args, err, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Fatalf("%v: want %q in\n%s", tc.args, w, out)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(out, w) {
					t.Fatalf("%v: did not want %q in\n%s", tc.args, w, out)
				}
			}
		})
	}
	if out, err := s.cli(agent, "logs", id, "--stream", "stdin"); err == nil || !strings.Contains(err.Error(), "--stream") {
		t.Fatalf("a bad stream: %v %s", err, out)
	}
}
