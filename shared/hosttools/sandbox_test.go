package hosttools_test

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/openprogram/lifecycle/shared/hosttools"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/sandbox"
)

// sandboxFixture is a runner whose workspace, fake home (with ~/.ssh and
// ~/.netrc) and state directory live outside /tmp (the sandbox's /tmp is
// private, which would hide them whatever the hiding does).
type sandboxFixture struct {
	r                        hosttools.Runner
	home, state, outside, ws string
}

func newSandboxFixture(t *testing.T, look func(string) (string, error)) sandboxFixture {
	t.Helper()
	root, err := os.MkdirTemp("/var/tmp", "hosttools-sbx-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	f := sandboxFixture{home: filepath.Join(root, "home"), state: filepath.Join(root, "state"), outside: filepath.Join(root, "outside"), ws: filepath.Join(root, "home", "project")}
	for _, d := range []string{filepath.Join(f.home, ".ssh"), f.state, f.outside, f.ws} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for p, s := range map[string]string{filepath.Join(f.home, ".ssh", "id_rsa"): "KEY", filepath.Join(f.home, ".netrc"): "password", filepath.Join(f.state, "state.db"): "db"} {
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	c, err := hosttools.NewConfinement(look, f.home, f.state)
	if err != nil {
		t.Fatal(err)
	}
	f.r, err = hosttools.NewRunner(f.ws, "")
	if err != nil {
		t.Fatal(err)
	}
	f.r.Sandbox = &c
	return f
}

func runIn(t *testing.T, r hosttools.Runner, p sandbox.Profile, tool string, args map[string]any) (out struct {
	Outcome          lifecycle.Outcome
	Code, Error, Out string
	Sandbox          *sandbox.Profile
}) {
	t.Helper()
	b, _ := json.Marshal(args)
	res, err := r.RunIn(context.Background(), p, tool, b)
	if err != nil {
		t.Fatal(err)
	}
	out.Outcome, out.Code, out.Error, out.Out, out.Sandbox = res.Outcome, res.ErrorCode, res.Error, res.Output, res.Sandbox
	return out
}

func TestRunInSandbox(t *testing.T) {
	if _, err := sandbox.Find(); err != nil {
		t.Skip(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("from-host\n"))
			c.Close()
		}
	}()
	connect := "exec 3<>/dev/tcp/127.0.0.1/" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port) + " && head -1 <&3"
	f := newSandboxFixture(t, nil)
	def, off, netOn := sandbox.Default(), sandbox.Profile{Mode: sandbox.ModeOff}, sandbox.Profile{Mode: sandbox.ModeBwrap, Network: true}
	tests := []struct {
		name    string
		profile sandbox.Profile
		tool    string
		args    map[string]any
		outcome lifecycle.Outcome
		code    string
		output  string
	}{
		{"bash writes the workspace", def, "Bash", map[string]any{"command": "echo hi > a.txt && cat a.txt"}, lifecycle.OutcomeSucceeded, "", "hi"},
		{"bash write outside is sandbox_denied", def, "Bash", map[string]any{"command": "touch " + f.outside + "/x"}, lifecycle.OutcomeFailed, "sandbox_denied", "Read-only file system"},
		{"bash network is sandbox_denied", def, "Bash", map[string]any{"command": connect}, lifecycle.OutcomeFailed, "sandbox_denied", "Connection refused"},
		{"bash network open reaches the host", netOn, "Bash", map[string]any{"command": connect}, lifecycle.OutcomeSucceeded, "", "from-host"},
		{"bash ~/.ssh inside the workspace's parent is empty", def, "Bash", map[string]any{"command": "ls -A " + f.home + "/.ssh | wc -l; wc -c < " + f.home + "/.netrc; ls -A " + f.state + " | wc -l"}, lifecycle.OutcomeSucceeded, "", "0\n0\n0\n"},
		{"sandbox off runs unconfined", off, "Bash", map[string]any{"command": "touch " + f.outside + "/off && cat " + f.home + "/.ssh/id_rsa"}, lifecycle.OutcomeSucceeded, "", "KEY"},
		{"an ordinary failure stays exit_N", def, "Bash", map[string]any{"command": "exit 3"}, lifecycle.OutcomeFailed, "exit_3", ""},
		{"a missing writable extra is sandbox_invalid", sandbox.Profile{Mode: sandbox.ModeBwrap, Writable: []string{f.outside + "/nope"}}, "Bash", map[string]any{"command": "true"}, lifecycle.OutcomeFailed, "sandbox_invalid", ""},
		{"read in the workspace", def, "Read", map[string]any{"file_path": "a.txt"}, lifecycle.OutcomeSucceeded, "", "hi"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := runIn(t, f.r, tc.profile, tc.tool, tc.args)
			if got.Outcome != tc.outcome || got.Code != tc.code || !strings.Contains(got.Out, tc.output) {
				t.Fatalf("got %+v; want %s %q with output %q", got, tc.outcome, tc.code, tc.output)
			}
			if tc.code != "sandbox_invalid" && (got.Sandbox == nil || got.Sandbox.Mode != tc.profile.Mode || got.Sandbox.Network != tc.profile.Network) {
				t.Fatalf("the result records sandbox %+v, want %+v", got.Sandbox, tc.profile)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(f.outside, "x")); err == nil {
		t.Fatal("the denied write reached the host")
	}
	if _, err := os.Stat(filepath.Join(f.outside, "off")); err != nil {
		t.Fatal("sandbox off did not run unconfined")
	}
}

// The in-process file tools see what a sandboxed Bash sees: a hidden path
// inside the workspace is neither read nor written.
func TestFileToolsHonourTheView(t *testing.T) {
	f := newSandboxFixture(t, func(string) (string, error) { return "/usr/bin/bwrap", nil })
	// A workspace that is the home directory holds ~/.ssh.
	f.r.Workspace = f.home
	def := sandbox.Default()
	tests := []struct {
		name    string
		profile sandbox.Profile
		tool    string
		args    map[string]any
		code    string
	}{
		{"read ~/.ssh", def, "Read", map[string]any{"file_path": ".ssh/id_rsa"}, "sandbox_denied"},
		{"read ~/.netrc", def, "Read", map[string]any{"file_path": ".netrc"}, "sandbox_denied"},
		{"write into ~/.ssh", def, "Write", map[string]any{"file_path": ".ssh/authorized_keys", "content": "x"}, "sandbox_denied"},
		{"edit ~/.netrc", def, "Edit", map[string]any{"file_path": ".netrc", "old_string": "password", "new_string": "x"}, "sandbox_denied"},
		{"write elsewhere in the workspace", def, "Write", map[string]any{"file_path": "project/b.txt", "content": "x"}, ""},
		{"sandbox off reads it", sandbox.Profile{Mode: sandbox.ModeOff}, "Read", map[string]any{"file_path": ".ssh/id_rsa"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := runIn(t, f.r, tc.profile, tc.tool, tc.args)
			if got.Code != tc.code {
				t.Fatalf("got %+v, want code %q", got, tc.code)
			}
			if tc.code != "" && strings.Contains(got.Out, "KEY") {
				t.Fatal("a hidden file's content was returned")
			}
		})
	}
	if _, err := os.Stat(filepath.Join(f.home, ".ssh", "authorized_keys")); err == nil {
		t.Fatal("a write into a hidden path happened")
	}
	if b, _ := os.ReadFile(filepath.Join(f.home, ".netrc")); string(b) != "password" {
		t.Fatalf(".netrc changed: %q", b)
	}
}

// Without bubblewrap a confined call is refused before anything runs;
// sandbox off still runs.
func TestRunInWithoutBubblewrap(t *testing.T) {
	f := newSandboxFixture(t, func(string) (string, error) { return "", exec.ErrNotFound })
	got := runIn(t, f.r, sandbox.Default(), "Bash", map[string]any{"command": "touch ran"})
	if got.Outcome != lifecycle.OutcomeNotStarted || got.Code != "sandbox_unavailable" || !strings.Contains(got.Error, "apt-get install bubblewrap") {
		t.Fatalf("got %+v, want not_started sandbox_unavailable naming apt-get install bubblewrap", got)
	}
	if _, err := os.Stat(filepath.Join(f.ws, "ran")); err == nil {
		t.Fatal("the command ran unconfined")
	}
	if err := f.r.Unavailable(sandbox.Default()); err == nil {
		t.Fatal("Unavailable reports a missing bubblewrap as available")
	}
	got = runIn(t, f.r, sandbox.Profile{Mode: sandbox.ModeOff}, "Bash", map[string]any{"command": "touch ran"})
	if got.Outcome != lifecycle.OutcomeSucceeded || got.Sandbox == nil || got.Sandbox.Mode != sandbox.ModeOff {
		t.Fatalf("sandbox off: %+v", got)
	}
}

// A bubblewrap that is installed but cannot build its sandbox (here: a
// program that fails, as bwrap does without user namespaces) counts as
// missing, with what it said.
func TestUnusableBubblewrapIsMissing(t *testing.T) {
	f := newSandboxFixture(t, func(string) (string, error) { return "/bin/false", nil })
	err := f.r.Unavailable(sandbox.Default())
	if err == nil || !strings.Contains(err.Error(), "cannot build its sandbox") {
		t.Fatalf("Unavailable = %v, want the probe's failure", err)
	}
}
