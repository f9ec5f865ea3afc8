package embedded_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/apiclient"
	"github.com/openprogram/lifecycle/shared/auth"
	"github.com/openprogram/lifecycle/shared/decider"
	"github.com/openprogram/lifecycle/shared/embedded"
	"github.com/openprogram/lifecycle/shared/hosttools"
	"github.com/openprogram/lifecycle/shared/httpapi"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/permission"
	"github.com/openprogram/lifecycle/shared/permission/riskreview"
	"github.com/openprogram/lifecycle/shared/policystore"
	"github.com/openprogram/lifecycle/shared/store"
)

// serveAPI is `lifecycle serve` in-process: the embedded stack with its
// host worker in ws, the permission engine over the session policies of
// the store, and the HTTP API. It returns an agent and a human client.
func serveAPI(t *testing.T, ws string) (agent, human *apiclient.Client, s *embedded.Stack) {
	t.Helper()
	var policies *policystore.Store
	var live policystore.Parsed[*permission.Policy]
	s, err := embedded.Start(context.Background(), embedded.Config{StateDir: t.TempDir(), Workspace: ws,
		NewDecider: func(st store.Store) (actionflow.Decider, error) {
			policies = policystore.New(st, httpapi.ValidatePermissionPolicy, policystore.WithDefault(json.RawMessage(decider.DefaultPolicyDoc)))
			live = policystore.Parsed[*permission.Policy]{Store: policies, Parse: permission.ParsePolicy}
			eng, err := permission.NewEngine(permission.Config{Classifier: riskreview.New(), Counters: st, FS: permission.OSFS{}})
			if err != nil {
				return nil, err
			}
			return &decider.Decider{Engine: eng, Policies: live, ProjectRoot: ws, WorkingDir: ws}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	issuer, err := auth.NewIssuer(auth.Keys{Agent: []byte("test-key-test-key-test-key-test-key"), Human: []byte("human-key-human-key-human-key-human")})
	if err != nil {
		t.Fatal(err)
	}
	ctl := httpapi.ControlService{Service: s.Control}
	h, err := httpapi.New(httpapi.Config{Service: s.Service, Auth: issuer, Policies: policies, Control: ctl, Facts: ctl, Wake: s.Bus, NoUI: true,
		Tools: httpapi.PermissionTools{Policies: live, Default: decider.DefaultPolicy(), Catalog: hosttools.Specs}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		srv.Close()
		s.Close(context.Background())
	})
	token := func(role string) string {
		tok, err := issuer.Issue(role, "ses_args", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	return &apiclient.Client{BaseURL: srv.URL, Token: token(auth.RoleAgent)}, &apiclient.Client{BaseURL: srv.URL, Token: token(auth.RoleHuman)}, s
}

// Issue 11, point 5: each built-in tool's contract is checked when the
// call is prepared, before any permission rule and before start evidence.
// A path outside the workspace is refused whatever the policy says (a
// whole-tool allow, bypassPermissions); other problems are named per
// field. Nothing runs and nothing is written; the model sees not_started,
// invalid_arguments and the details. Before the fix the whole-tool allow
// let the host tool refuse it after start evidence (outcome failed).
func TestInvalidArgumentsAreRefusedAtPrepare(t *testing.T) {
	ws := t.TempDir()
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(ws, "out")); err != nil {
		t.Fatal(err)
	}
	agent, human, _ := serveAPI(t, ws)
	ctx := context.Background()
	cases := []struct {
		name, policy, tool, args string
		// source and code of the refusal; fields named in the details.
		source, code string
		fields       []string
	}{
		{"a relative path climbing out, whole-tool allow", `{"version":"p1","allow":["write_file"]}`, "write_file",
			`{"file_path":"../../etc/x","content":"pwned"}`, "hard_constraint", "outside_workspace", []string{"file_path"}},
		{"an absolute path elsewhere, bypassPermissions", `{"version":"p2","mode":"bypassPermissions"}`, "Write",
			`{"file_path":"` + filepath.Join(outside, "x") + `","content":"pwned"}`, "hard_constraint", "outside_workspace", []string{"file_path"}},
		{"a symlink out of the workspace", `{"version":"p3","allow":["write_file","Write"]}`, "write_file",
			`{"file_path":"out/x","content":"pwned"}`, "hard_constraint", "outside_workspace", []string{"file_path"}},
		// Host commands run in the workspace root: cwd is not a field of Bash.
		{"a Bash working directory", `{"version":"p4","allow":["Bash"]}`, "Bash",
			`{"command":"echo pwned > x","cwd":"../"}`, "invalid_arguments", "invalid_arguments", []string{"cwd"}},
		{"path is not write_file's field name", `{"version":"p5","allow":["write_file"]}`, "write_file",
			`{"path":"notes.txt","content":"hi"}`, "invalid_arguments", "invalid_arguments", []string{"file_path", "path"}},
		{"wrong types and an unknown field", `{"version":"p6","allow":["Edit"]}`, "Edit",
			`{"file_path":"a.txt","old_string":1,"new_string":"b","replace_all":"yes","force":true}`, "invalid_arguments", "invalid_arguments",
			[]string{"force", "old_string", "replace_all"}},
		{"Bash without a command, timeout too large", `{"version":"p7","allow":["Bash"]}`, "Bash",
			`{"timeout":99999999}`, "invalid_arguments", "invalid_arguments", []string{"command", "timeout"}},
	}
	version, interactive := int64(0), true
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ev := version
			if _, err := human.PutPolicy(ctx, "ses_args", httpapi.PolicyBody{ExpectedVersion: &ev, Policy: json.RawMessage(tc.policy)}); err != nil {
				t.Fatalf("policy: %v", err)
			}
			version++
			v, _, err := agent.Submit(ctx, apiclient.SubmitRequest{SessionID: "ses_args", IdempotencyKey: "key-" + string(rune('a'+i)), Body: httpapi.SubmitBody{
				ToolCallID: ids.ToolCallID("call_" + string(rune('a'+i))), Tool: tc.tool, Arguments: json.RawMessage(tc.args), Interactive: &interactive}})
			if err != nil {
				t.Fatalf("submit: %v", err)
			}
			var got httpapi.ActionView
			for deadline := time.Now().Add(20 * time.Second); ; {
				if got, err = agent.Action(ctx, v.ActionID, 5*time.Second); err != nil {
					t.Fatal(err)
				}
				if got.States.Terminal() || time.Now().After(deadline) {
					break
				}
			}
			rc := got.Receipt
			if got.States.Outcome != lifecycle.OutcomeNotStarted || got.States.Started || got.Start != nil || rc == nil {
				t.Fatalf("states %+v start %+v receipt %+v", got.States, got.Start, rc)
			}
			if got.Decision == nil || got.Decision.Permission != lifecycle.PermissionDeny || got.Decision.Reason.Source != tc.source || got.Decision.Reason.Code != tc.code {
				t.Fatalf("decision %+v, want deny %s/%s", got.Decision, tc.source, tc.code)
			}
			if rc.ErrorCode != "invalid_arguments" || rc.Start != nil {
				t.Fatalf("receipt %s %s", rc.ErrorCode, rc.Error)
			}
			var fields []string
			for _, p := range rc.Validation {
				fields = append(fields, p.Field)
				if p.Problem == "" {
					t.Errorf("field %s without a problem", p.Field)
				}
			}
			if strings.Join(fields, ",") != strings.Join(tc.fields, ",") {
				t.Fatalf("validation %+v, want fields %v", rc.Validation, tc.fields)
			}
		})
	}
	for _, dir := range []string{outside, filepath.Dir(ws)} {
		if entries, _ := os.ReadDir(dir); containsX(entries) {
			t.Fatalf("something was written to %s", dir)
		}
	}
	if _, err := os.Stat(filepath.Join(ws, "x")); err == nil {
		t.Fatal("the Bash command ran")
	}
}

func containsX(entries []os.DirEntry) bool {
	for _, e := range entries {
		if e.Name() == "x" {
			return true
		}
	}
	return false
}
