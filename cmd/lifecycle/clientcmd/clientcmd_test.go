package clientcmd_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/openprogram/lifecycle/cmd/lifecycle/clientcmd"
	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/auth"
	"github.com/openprogram/lifecycle/shared/httpapi"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/store/sqlitestore"
)

type askAll struct{}

func (askAll) Decide(context.Context, actionflow.Action) (actionflow.Decision, error) {
	return actionflow.Decision{Permission: lifecycle.PermissionAsk, PolicyVersion: "v1", Reason: actionflow.Reason{Source: "ask_rule", Code: "ask"},
		Risk: &actionflow.Risk{Level: "high", Assessor: "riskreview", Reasons: []actionflow.RiskReason{
			{Text: "pipes a download into sh", Category: "download_exec", Source: "riskreview"},
			{Text: "it fetches and runs a remote script", Source: "bedrock:test", ModelGenerated: true}}}}, nil
}
func (askAll) Revalidate(context.Context, actionflow.Action, actionflow.Decision, actionflow.Approval) (actionflow.Decision, error) {
	return actionflow.Decision{Permission: lifecycle.PermissionAllow}, nil
}
func (askAll) ApprovalCompleted(context.Context, actionflow.Action, actionflow.Approval) error {
	return nil
}

type noStart struct{}

func (noStart) StartAction(context.Context, ids.ActionID, []byte) error { return nil }

type tasks struct{ done map[string]bool }

func (t *tasks) SendTaskSuccess(_ context.Context, tok string, _ []byte) error {
	t.done[tok] = true
	return nil
}
func (t *tasks) SendTaskFailure(_ context.Context, tok, _, _ string) error {
	t.done[tok] = true
	return nil
}

// run executes one CLI invocation and returns its output.
func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := &cobra.Command{Use: "lifecycle", SilenceErrors: true}
	clientcmd.AddTo(root)
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	return out.String(), err
}

func TestClientCommands(t *testing.T) {
	dir := t.TempDir()
	st, err := sqlitestore.Open(filepath.Join(dir, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	tk := &tasks{done: map[string]bool{}}
	svc, err := actionflow.New(actionflow.Config{Store: st, Decider: askAll{}, Starter: noStart{}, Tasks: tk, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	keys, err := auth.LoadOrCreateKeys(dir)
	if err != nil {
		t.Fatal(err)
	}
	iss, _ := auth.NewIssuer(keys)
	h, err := httpapi.New(httpapi.Config{Service: svc, Auth: iss, Logger: quiet, NoUI: true})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()

	// token: issued with the keys kept under the state directory, a human
	// one after a confirmation on the terminal.
	tty := &fakeTerminal{in: strings.NewReader("yes\n")}
	restore := clientcmd.SetTerminal(func() (io.ReadWriteCloser, error) { return tty, nil })
	out, err := run(t, "token", "--role", "human", "--session", "ses_cli", "--state-dir", dir)
	restore()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(tty.out.String(), "Type yes to confirm") {
		t.Fatalf("the terminal was not asked: %q", tty.out.String())
	}
	human := strings.TrimSpace(out)
	if p, err := iss.Verify(human); err != nil || p.Role != "human" || p.Session != "ses_cli" {
		t.Fatalf("token %q: %+v %v", human, p, err)
	}
	if _, err := run(t, "token", "--role", "agent", "--state-dir", dir); err == nil {
		t.Fatal("an agent token without a session was issued")
	}
	api := []string{"--api", srv.URL, "--token", human}

	// submit --json, then show: the session comes from the token.
	out, err = run(t, append(api, "submit", "--tool", "Bash", "--args", `{"command":"make deploy"}`, "--title", "Deploy to production", "--json")...)
	if err != nil {
		t.Fatal(err, out)
	}
	var v httpapi.ActionView
	if err := json.Unmarshal([]byte(out), &v); err != nil || v.SessionID != "ses_cli" || v.Tool != "Bash" {
		t.Fatalf("submit: %v %s", err, out)
	}
	out, err = run(t, append(api, "show", string(v.ActionID))...)
	if err != nil || !strings.Contains(out, "Bash") || !strings.Contains(out, "delivery    pending") {
		t.Fatalf("show: %v\n%s", err, out)
	}

	// The lifecycle asks; the approval is listed and approved by id alone
	// (the CLI looks up the exact digest it shows).
	ctx := context.Background()
	si := actionflow.StepInput{ActionID: v.ActionID, ExecutionID: v.ExecutionID}
	if _, err := svc.Authorize(ctx, si); err != nil {
		t.Fatal(err)
	}
	si.Mode, si.TaskToken = "await", "tok-1"
	w, err := svc.ApprovalStep(ctx, si)
	if err != nil {
		t.Fatal(err)
	}
	out, err = run(t, append(api, "approvals")...)
	if err != nil || !strings.Contains(out, string(w.ApprovalID)) || !strings.Contains(out, "make deploy") {
		t.Fatalf("approvals: %v\n%s", err, out)
	}
	// The risk of the asked call: its level stands out, a model's reason
	// says it is model-generated.
	if !strings.Contains(out, "risk HIGH\n      - pipes a download into sh\n") ||
		!strings.Contains(out, "it fetches and runs a remote script (model-generated, bedrock:test)") {
		t.Fatalf("approvals do not show the risk:\n%s", out)
	}
	out, err = run(t, append(api, "approve", string(w.ApprovalID))...)
	if err != nil || !strings.Contains(out, "approved") || !tk.done["tok-1"] {
		t.Fatalf("approve: %v\n%s", err, out)
	}
	if _, err := run(t, append(api, "decline", string(w.ApprovalID))...); err == nil {
		t.Fatal("a second decision succeeded")
	}

	out, err = run(t, append(api, "activity")...)
	if err != nil || !strings.Contains(out, "In progress (1)") || !strings.Contains(out, "Deploy to production · Running") {
		t.Fatalf("activity: %v\n%s", err, out)
	}
	policy := filepath.Join(dir, "policy.json")
	os.WriteFile(policy, []byte(`{"version":"p1","mode":"default"}`), 0o600)
	out, err = run(t, append(api, "policy", "--set", policy, "--restart-window", "3600")...)
	if err != nil || !strings.Contains(out, "version 1 saved") {
		t.Fatalf("policy set: %v\n%s", err, out)
	}
	out, err = run(t, append(api, "policy", "--json")...)
	if err != nil || !strings.Contains(out, `"restart_window_seconds": 3600`) {
		t.Fatalf("policy: %v\n%s", err, out)
	}
	out, err = run(t, append(api, "policy", "--set", policy, "--restart-window", "3600", "--iteration-limit", "40", "--idle-timeout", "7200")...)
	if err != nil || !strings.Contains(out, "version 2 saved") {
		t.Fatalf("policy set with execution settings: %v\n%s", err, out)
	}
	out, err = run(t, append(api, "policy")...)
	if err != nil || !strings.Contains(out, "iteration limit 40 (session), idle timeout 7200s (session)") {
		t.Fatalf("policy: %v\n%s", err, out)
	}
	if out, err = run(t, append(api, "policy", "--set", policy, "--idle-timeout", "5")...); err == nil || !strings.Contains(err.Error()+out, "idle_timeout_seconds") {
		t.Fatalf("an idle timeout of 5 s: %v\n%s", err, out)
	}
	// An agent token cannot approve: the API refuses, the CLI reports it.
	agent, _ := iss.Issue("agent", "ses_cli", time.Hour)
	if _, err := run(t, "--api", srv.URL, "--token", agent, "approve", string(w.ApprovalID), "--digest", v.ArgsDigest); err == nil {
		t.Fatal("an agent approved")
	}
}

// fakeTerminal stands in for /dev/tty.
type fakeTerminal struct {
	in  io.Reader
	out bytes.Buffer
}

func (f *fakeTerminal) Read(p []byte) (int, error)  { return f.in.Read(p) }
func (f *fakeTerminal) Write(p []byte) (int, error) { return f.out.Write(p) }
func (f *fakeTerminal) Close() error                { return nil }

// A human or admin token needs a confirmation on a terminal; an agent
// token needs neither the terminal nor the human key.
func TestTokenConfirmation(t *testing.T) {
	cases := []struct {
		name     string
		role     string
		terminal func() (io.ReadWriteCloser, error)
		wantErr  string
	}{
		{"human without a terminal", "human", func() (io.ReadWriteCloser, error) { return nil, errors.New("open /dev/tty: no such device or address") }, "no terminal to confirm on"},
		{"admin without a terminal", "admin", func() (io.ReadWriteCloser, error) { return nil, errors.New("open /dev/tty: no such device or address") }, "no terminal to confirm on"},
		{"human, answered no", "human", func() (io.ReadWriteCloser, error) { return &fakeTerminal{in: strings.NewReader("no\n")}, nil }, "not confirmed"},
		{"human, nothing typed", "human", func() (io.ReadWriteCloser, error) { return &fakeTerminal{in: strings.NewReader("")}, nil }, "no confirmation"},
		{"human, confirmed", "human", func() (io.ReadWriteCloser, error) { return &fakeTerminal{in: strings.NewReader("yes\n")}, nil }, ""},
		{"agent needs no terminal", "agent", func() (io.ReadWriteCloser, error) { return nil, errors.New("must not be asked") }, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "state")
			defer clientcmd.SetTerminal(tc.terminal)()
			out, err := run(t, "token", "--role", tc.role, "--session", "ses_cli", "--state-dir", dir)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || strings.Count(out, ".") >= 2 {
					t.Fatalf("err %v, out %q", err, out)
				}
				if _, err := os.Stat(filepath.Join(dir, auth.HumanKeyFile)); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("the human key was read or made without a confirmation: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			keys := auth.Keys{}
			if keys.Agent, err = auth.LoadOrCreateKey(dir); err != nil {
				t.Fatal(err)
			}
			if tc.role != "agent" {
				keys.Human, _ = auth.LoadOrCreateHumanKey(dir)
			}
			iss, _ := auth.NewIssuer(keys)
			if p, err := iss.Verify(strings.TrimSpace(out)); err != nil || p.Role != tc.role {
				t.Fatalf("%+v %v", p, err)
			}
			if tc.role == "agent" {
				if _, err := os.Stat(filepath.Join(dir, auth.HumanKeyFile)); !errors.Is(err, os.ErrNotExist) {
					t.Fatal("an agent token read the human key")
				}
			}
		})
	}
}

// token finds the state directory serve uses for the same workspace.
func TestTokenDefaultStateDir(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	t.Setenv("LIFECYCLE_STATE_DIR", "")
	ws := filepath.Join(t.TempDir(), "workspace")
	want, err := clientcmd.StateDir("", ws)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, "token", "--role", "agent", "--session", "ses_cli", "--workspace", ws); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(want, auth.KeyFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("agent key under %s: %v", want, err)
	}
	if fi, _ := os.Stat(want); fi.Mode().Perm() != 0o700 {
		t.Fatalf("state dir mode %v", fi.Mode().Perm())
	}
}
