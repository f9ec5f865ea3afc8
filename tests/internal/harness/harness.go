// Package harness is what the black-box MCP client tests (tests/agents,
// tests/mcpconformance) share: the pinned npm tools the Makefile installs
// under .tools/, a real `lifecycle serve` process built from this module
// with a fresh state directory and workspace, and its HTTP API as a human
// and an agent use it. Everything talks to 127.0.0.1 only.
package harness

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// RequiredEnv, set to 1 by `make test` (which installs the tools first),
// turns a missing tool from a skip into a failure.
const RequiredEnv = "LIFECYCLE_MCP_CLIENTS_REQUIRED"

// RepoRoot is the module root (the directory holding go.mod).
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// Tool is the path of an executable the Makefile installs under .tools/:
// rel is relative to the repository root and may hold one glob (the
// version directory). When it is absent the test is skipped with the make
// target that installs it, or fails when required is set in the
// environment: by the variables given, or by RequiredEnv when none is
// given (Claude Code, only in make test-agents, names its own).
func Tool(t testing.TB, makeTarget, rel string, requiredBy ...string) string {
	t.Helper()
	matches, err := filepath.Glob(filepath.Join(RepoRoot(t), rel))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(matches)
	for i := len(matches) - 1; i >= 0; i-- {
		if st, err := os.Stat(matches[i]); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return matches[i]
		}
	}
	msg := fmt.Sprintf("%s is not installed: run `make %s` (pinned npm package under .tools/)", rel, makeTarget)
	if len(requiredBy) == 0 {
		requiredBy = []string{RequiredEnv}
	}
	for _, env := range requiredBy {
		if os.Getenv(env) == "1" {
			t.Fatalf("%s, and %s=1 requires it", msg, env)
		}
	}
	t.Skip(msg)
	return ""
}

var (
	buildOnce sync.Once
	buildBin  string
	buildErr  error
)

// Lifecycle builds cmd/lifecycle once per test binary and returns its
// path, in a directory under the OS temp directory that the test binary
// leaves behind (one per run; the go build cache makes each build cheap).
func Lifecycle(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "lifecycle-bin-")
		if err != nil {
			buildErr = err
			return
		}
		buildBin = filepath.Join(dir, "lifecycle")
		cmd := exec.Command("go", "build", "-o", buildBin, "github.com/openprogram/lifecycle/cmd/lifecycle")
		cmd.Dir = RepoRoot(t)
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build cmd/lifecycle: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return buildBin
}

// Serve is a running `lifecycle serve` of a test.
type Serve struct {
	Bin       string
	Base      string // http://127.0.0.1:port
	Human     string // the human token serve printed
	Session   string
	StateDir  string
	Workspace string
	Log       string // serve's stderr and stdout

	cmd    *exec.Cmd
	exited chan struct{}
	http   *http.Client
}

// StartServe starts serve on a free loopback port with a fresh state
// directory and workspace; it is stopped (SIGTERM) when the test ends.
func StartServe(t testing.TB, session string) *Serve {
	t.Helper()
	// State and workspace apart, as serve advises (it warns when they are siblings).
	dir := t.TempDir()
	s := &Serve{Bin: Lifecycle(t), Session: session, StateDir: filepath.Join(dir, "state"),
		Workspace: filepath.Join(t.TempDir(), "ws", "workspace"), Log: filepath.Join(dir, "serve.log"),
		http: &http.Client{Timeout: 60 * time.Second}}
	if err := os.MkdirAll(s.Workspace, 0o755); err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(s.Log)
	if err != nil {
		t.Fatal(err)
	}
	s.cmd = exec.Command(s.Bin, "serve", "--addr", "127.0.0.1:0", "--state-dir", s.StateDir, "--workspace", s.Workspace,
		"--session", session, "--log-level", "warn")
	s.cmd.Stderr = logf
	dieWithTest(s.cmd)
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("start serve: %v", err)
	}
	s.exited = make(chan struct{})
	go func() { _ = s.cmd.Wait(); logf.Close(); close(s.exited) }()
	t.Cleanup(func() {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(30 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.exited
		}
		if t.Failed() {
			if b, err := os.ReadFile(s.Log); err == nil {
				t.Logf("serve log:\n%s", tail(b, 8000))
			}
		}
	})
	found := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(logf, "stdout: "+line)
			f := strings.Fields(line)
			switch {
			case len(f) >= 2 && f[0] == "API" && strings.HasPrefix(f[1], "http") && s.Base == "":
				s.Base = strings.TrimSuffix(f[1], "/v1")
			case len(f) >= 3 && f[0] == "Human" && f[1] == "token" && s.Human == "":
				s.Human = f[2]
			}
			if found != nil && s.Base != "" && s.Human != "" {
				close(found)
				found = nil
			}
		}
	}()
	select {
	case <-found:
	case <-s.exited:
		b, _ := os.ReadFile(s.Log)
		t.Fatalf("serve ended before printing its address:\n%s", tail(b, 4000))
	case <-time.After(2 * time.Minute):
		t.Fatal("serve did not print its API address and human token within 2 minutes")
	}
	return s
}

// MCPURL is the streamable HTTP MCP endpoint of serve.
func (s *Serve) MCPURL() string { return s.Base + "/mcp" }

// AgentToken is a fresh agent token of the session, made by the CLI the
// way a user makes one.
func (s *Serve) AgentToken(t testing.TB) string {
	t.Helper()
	out, err := exec.Command(s.Bin, "token", "--role", "agent", "--session", s.Session, "--state-dir", s.StateDir).Output()
	if err != nil {
		t.Fatalf("lifecycle token --role agent: %v", err)
	}
	tok := strings.TrimSpace(string(out))
	if tok == "" || strings.ContainsAny(tok, " \n{") {
		t.Fatalf("lifecycle token: unexpected output %q", out)
	}
	return tok
}

// Do sends one API request (the human token when token is empty) and
// decodes a 2xx JSON answer into out.
func (s *Serve) Do(ctx context.Context, method, path, token string, body, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.Base+path, rd)
	if err != nil {
		return 0, err
	}
	if token == "" {
		token = s.Human
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, err
	}
	if resp.StatusCode >= 300 {
		return resp.StatusCode, fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, bytes.TrimSpace(data))
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return resp.StatusCode, fmt.Errorf("%s %s: decode: %w: %s", method, path, err, data)
		}
	}
	return resp.StatusCode, nil
}

// SetPolicy replaces the session's policy (the first version).
func (s *Serve) SetPolicy(t testing.TB, policy string) {
	t.Helper()
	if _, err := s.Do(context.Background(), "PUT", "/v1/sessions/"+s.Session+"/policy", "",
		map[string]any{"expected_version": 0, "policy": json.RawMessage(policy)}, nil); err != nil {
		t.Fatalf("set policy: %v", err)
	}
}

// Approval is a pending approval as the API lists it.
type Approval struct {
	ApprovalID string `json:"approval_id"`
	ActionID   string `json:"action_id"`
	ArgsDigest string `json:"args_digest"`
	Status     string `json:"status"`
}

// DecideNext waits for the session's first pending approval and decides it
// (approve or decline) with the human token, as a person in the UI does.
func (s *Serve) DecideNext(ctx context.Context, decision string) (Approval, error) {
	for {
		var list struct {
			Approvals []Approval `json:"approvals"`
		}
		if _, err := s.Do(ctx, "GET", "/v1/sessions/"+s.Session+"/approvals", "", nil, &list); err != nil {
			return Approval{}, err
		}
		for _, ap := range list.Approvals {
			if ap.Status != "pending" {
				continue
			}
			_, err := s.Do(ctx, "POST", "/v1/approvals/"+ap.ApprovalID, "", map[string]string{"decision": decision, "digest": ap.ArgsDigest}, nil)
			return ap, err
		}
		select {
		case <-ctx.Done():
			return Approval{}, errors.New("no pending approval appeared")
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
