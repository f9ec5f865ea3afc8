package embedded_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/decider"
	"github.com/openprogram/lifecycle/shared/embedded"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/permission"
	"github.com/openprogram/lifecycle/shared/permission/riskreview"
	"github.com/openprogram/lifecycle/shared/store"
)

// sessionPolicies gives each session its own policy.
type sessionPolicies map[ids.SessionID]*permission.Policy

func (s sessionPolicies) Policy(_ context.Context, id ids.SessionID) (*permission.Policy, error) {
	return s[id], nil
}

// A workspace that ships notes -> .. (its parent plays the home directory,
// with a key and a shell rc file). Through the whole stack, wired like
// `lifecycle serve` (the engine resolves through the real file system, the
// host worker runs the real shell), nothing reaches outside the workspace
// through the link, while the same commands inside it run.
func TestEndToEndSymlinkOutOfWorkspace(t *testing.T) {
	dir, home := t.TempDir(), t.TempDir()
	ws := filepath.Join(home, "workspace")
	// keys/ is denied by a rule; .ssh is a protected credential store
	// (a hard constraint before any rule).
	for _, d := range []string{filepath.Join(ws, "sub"), filepath.Join(home, ".ssh"), filepath.Join(home, "keys")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for p, c := range map[string]string{
		filepath.Join(home, ".ssh", "deploy_key"): "PRIVATE-KEY",
		filepath.Join(home, "keys", "deploy_key"): "PRIVATE-KEY",
		filepath.Join(home, ".bashrc"):            "# rc\n",
		filepath.Join(home, "outside.txt"):        "OUTSIDE",
		filepath.Join(ws, "inside.txt"):           "INSIDE",
	} {
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("..", filepath.Join(ws, "notes")); err != nil {
		t.Skipf("symbolic links are not available: %v", err)
	}
	policies := sessionPolicies{
		"ses_rules": permission.MustParsePolicy(`{"version":"v1","mode":"default",
			"allow":["Bash(echo *)","Bash(cat *)"],"deny":["Read(~/keys/**)","Edit(~/.bashrc)"]}`),
		"ses_auto": permission.MustParsePolicy(`{"version":"v1","mode":"auto"}`),
	}
	s, err := embedded.Start(context.Background(), embedded.Config{
		StateDir: dir, Workspace: ws,
		NewDecider: func(st store.Store) (actionflow.Decider, error) {
			eng, err := permission.NewEngine(permission.Config{Classifier: riskreview.New(), Counters: st, FS: permission.OSFS{}})
			if err != nil {
				return nil, err
			}
			return &decider.Decider{Engine: eng, Policies: policies, ProjectRoot: ws, WorkingDir: ws, HomeDir: home}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())

	cases := []struct {
		name, session, tool, args string
		allowed                   bool
		code                      string // for a refusal, when set
	}{
		{"append inside the workspace", "ses_rules", "Bash", `{"command":"echo x >> marker"}`, true, ""},
		{"cat inside the workspace", "ses_rules", "Bash", `{"command":"cat inside.txt"}`, true, ""},
		{"append through notes -> ..", "ses_rules", "Bash", `{"command":"echo x >> notes/marker"}`, false, string(permission.CodeNoRule)},
		{"append to the rc file through notes", "ses_rules", "Bash", `{"command":"echo x >> notes/.bashrc"}`, false, string(permission.CodeDenyRule)},
		{"cat a key through notes", "ses_rules", "Bash", `{"command":"cat notes/keys/deploy_key"}`, false, string(permission.CodeDenyRule)},
		{"cat a protected key through notes", "ses_rules", "Bash", `{"command":"cat notes/.ssh/deploy_key"}`, false, string(permission.CodeProtectedPath)},
		{"cd notes and append", "ses_rules", "Bash", `{"command":"cd notes; echo x >> marker2"}`, false, ""},
		// A host command runs in the workspace root: cwd is refused at prepare.
		{"cwd argument and a relative key", "ses_rules", "Bash", `{"command":"cat ../../keys/deploy_key","cwd":"sub"}`, false, "invalid_arguments"},
		// After cd the path may resolve from either directory (the cd may fail): a possible match.
		{"cd and a relative key", "ses_rules", "Bash", `{"command":"cd sub && cat ../../keys/deploy_key"}`, false, string(permission.CodeUnverifiable)},
		// Prepare resolves a file tool's path through links: outside the workspace.
		{"Read a file outside through notes", "ses_rules", "Read", `{"file_path":"notes/outside.txt"}`, false, "outside_workspace"},
		{"auto: cat inside", "ses_auto", "Bash", `{"command":"cat inside.txt"}`, true, ""},
		// The credential store is a hard constraint before the reviewer.
		{"auto: cat a key through notes", "ses_auto", "Bash", `{"command":"cat notes/.ssh/deploy_key"}`, false, string(permission.CodeProtectedPath)},
	}
	// One at a time: this test is about the decision, not about parallel
	// dispatch of host tasks.
	actions := make([]ids.ActionID, len(cases))
	for i, tc := range cases {
		a, _, err := s.Service.Submit(context.Background(), actionflow.SubmitRequest{SessionID: ids.SessionID(tc.session),
			ToolCallID: ids.ToolCallID(ids.New("call")), Tool: tc.tool, Arguments: json.RawMessage(tc.args),
			Interactive: false, Principal: actionflow.Principal{Subject: "agent", Role: "agent"}})
		if err != nil {
			t.Fatalf("%s: submit: %v", tc.name, err)
		}
		actions[i] = a.ActionID
		waitFor(t, s, a.ActionID, terminal)
	}
	for i, tc := range cases {
		got := waitFor(t, s, actions[i], terminal)
		if tc.allowed {
			if got.States.Permission != lifecycle.PermissionAllow || got.States.Outcome != lifecycle.OutcomeSucceeded {
				t.Errorf("%s: %+v (%+v)", tc.name, got.States, got.Decision)
			}
			continue
		}
		if got.States.Permission == lifecycle.PermissionAllow || got.States.Started {
			t.Errorf("%s: allowed or started through the link: %+v", tc.name, got.States)
			continue
		}
		if tc.code != "" && (got.Decision == nil || got.Decision.Reason.Code != tc.code) {
			t.Errorf("%s: refused with %+v, want code %s", tc.name, got.Decision, tc.code)
		}
	}
	// What ran, ran inside; nothing was written or read outside.
	if b, err := os.ReadFile(filepath.Join(ws, "marker")); err != nil || string(b) != "x\n" {
		t.Errorf("the allowed append did not run in the workspace: %q %v", b, err)
	}
	for _, p := range []string{filepath.Join(home, "marker"), filepath.Join(home, "marker2")} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s was written through the link", p)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(home, ".bashrc")); string(b) != "# rc\n" {
		t.Errorf("the rc file was changed through the link: %q", b)
	}
	for i := range cases {
		a, err := s.Service.GetAction(context.Background(), actions[i])
		if err != nil {
			t.Fatal(err)
		}
		if raw, _ := json.Marshal(a); strings.Contains(string(raw), "PRIVATE-KEY") || strings.Contains(string(raw), "OUTSIDE") {
			t.Errorf("%s: the action record holds content from outside the workspace", cases[i].name)
		}
	}
}
