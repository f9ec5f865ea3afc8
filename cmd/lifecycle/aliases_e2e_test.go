package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/lifecycle"
)

// Issue 21, class 1 ("by any tool"), through the API: the host runs bash,
// read_file, write_file and edit_file exactly as Bash, Read, Write and
// Edit, so the policy judges them so. In bypassPermissions mode a deny
// rule, a path rule and the protected state directory stop the lower-case
// spellings as they stop the capitalised ones; nothing starts and no
// marker appears. A control shows the same stack does run what no rule
// stops, under the same spelling.
func TestToolSpellingsJudgedAsTheirTool(t *testing.T) {
	s := startServeStack(t)
	s.setPolicy(t, `{"version":"aliases","mode":"bypassPermissions","deny":["Bash(touch *)","Edit(./config/**)"]}`)
	if err := os.MkdirAll(s.path("config"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.path("config/base.json"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	stateMarker := filepath.Join(s.stateDir, "pwned")
	cases := []struct {
		name, tool string
		args       map[string]any
		marker     string // absolute path that exists only if the call ran
		unchanged  string // or: a workspace file that still holds "x" unless the call ran
		allowed    bool
	}{
		{name: "bash touch under a Bash deny", tool: "bash", args: map[string]any{"command": "touch m"}, marker: s.path("m")},
		{name: "Bash touch under a Bash deny", tool: "Bash", args: map[string]any{"command": "touch m2"}, marker: s.path("m2")},
		{name: "bash writes into the state directory", tool: "bash",
			args: map[string]any{"command": "echo x > " + stateMarker}, marker: stateMarker},
		{name: "write_file under an Edit path deny", tool: "write_file",
			args: map[string]any{"file_path": "config/app.json", "content": "x"}, marker: s.path("config/app.json")},
		{name: "edit_file under an Edit path deny", tool: "edit_file",
			args: map[string]any{"file_path": "config/base.json", "old_string": "x", "new_string": "y"}, unchanged: "config/base.json"},
		// The host reads path when file_path is empty: such a call would be
		// judged on one field and run on another, so it is refused.
		{name: "write_file with path next to an empty file_path", tool: "write_file",
			args: map[string]any{"file_path": "", "path": "config/app.json", "content": "x"}, marker: s.path("config/app.json")},
		// Controls: what no rule stops runs, under the lower-case spelling.
		{name: "bash echo runs", tool: "bash", args: map[string]any{"command": "echo ok > ran"}, marker: s.path("ran"), allowed: true},
		{name: "write_file elsewhere runs", tool: "write_file",
			args: map[string]any{"file_path": "notes.txt", "content": "x"}, marker: s.path("notes.txt"), allowed: true},
	}
	tok := s.agent(t, s.session)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id, err := s.submit(s.session, tok, c.tool, c.args)
			if err != nil {
				t.Fatal(err)
			}
			v, err := s.settled(tok, id, 60*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			var statErr error
			if c.marker != "" {
				_, statErr = os.Stat(c.marker)
			}
			if c.allowed {
				if v.States.Permission != lifecycle.PermissionAllow || v.States.Outcome != lifecycle.OutcomeSucceeded || statErr != nil {
					t.Fatalf("control: states %+v, marker %v; decision %+v", v.States, statErr, v.Decision)
				}
				return
			}
			if v.States.Permission != lifecycle.PermissionDeny || v.States.Outcome != lifecycle.OutcomeNotStarted || v.States.Started {
				t.Fatalf("%s %v: states %+v, want denied, not_started; decision %+v", c.tool, c.args, v.States, v.Decision)
			}
			if v.Decision != nil {
				t.Logf("%s: %s %s: %s", c.tool, v.Decision.Reason.Source, v.Decision.Reason.Code, v.Decision.Reason.Detail)
			}
			if v.Start != nil {
				t.Fatalf("a denied call has start evidence: %+v", v.Start)
			}
			if c.marker != "" && !os.IsNotExist(statErr) {
				t.Fatalf("%s exists (stat: %v): the denied call ran", c.marker, statErr)
			}
			if c.unchanged != "" {
				if b, err := os.ReadFile(s.path(c.unchanged)); err != nil || string(b) != "x" {
					t.Fatalf("%s holds %q (%v): the denied call ran", c.unchanged, b, err)
				}
			}
		})
	}
}
