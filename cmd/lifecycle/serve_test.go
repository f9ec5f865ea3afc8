package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/auth"
)

// TestServeOverHTTP drives `lifecycle serve` over HTTP only: an agent
// submits a Bash call, the default policy asks, a human approves through
// the API, the host worker runs it exactly once, and the action ends
// succeeded and projected with its receipt.
func TestServeOverHTTP(t *testing.T) {
	dir := t.TempDir()
	stateDir, ws := filepath.Join(dir, "state"), filepath.Join(dir, "ws")
	base := startServe(t, stateDir, ws, "ses_e2e")
	keys, err := auth.LoadOrCreateKeys(stateDir)
	if err != nil {
		t.Fatal(err)
	}
	iss, _ := auth.NewIssuer(keys)
	agent, _ := iss.Issue(auth.RoleAgent, "ses_e2e", time.Hour)
	human, _ := iss.Issue(auth.RoleHuman, "ses_e2e", time.Hour)
	call := caller(t, base)

	status, sub := call("POST", "/v1/sessions/ses_e2e/actions", agent,
		map[string]any{"tool": "Bash", "tool_call_id": "call_1", "interactive": true,
			"arguments": map[string]any{"command": "echo ran >> count.txt && cat count.txt", "description": "count a run"}},
		map[string]string{"Idempotency-Key": "k1"})
	if status != http.StatusAccepted {
		t.Fatalf("submit: %d %v", status, sub)
	}
	actionID := sub["action_id"].(string)

	var approval map[string]any
	for deadline := time.Now().Add(20 * time.Second); approval == nil; {
		_, list := call("GET", "/v1/sessions/ses_e2e/approvals", human, nil, nil)
		if aps, _ := list["approvals"].([]any); len(aps) == 1 {
			approval = aps[0].(map[string]any)
		} else if time.Now().After(deadline) {
			t.Fatalf("no pending approval: %v", list)
		} else {
			time.Sleep(20 * time.Millisecond)
		}
	}
	// The agent can never approve, even with the UI's origin header.
	if st, _ := call("POST", "/v1/approvals/"+approval["approval_id"].(string), agent,
		map[string]any{"decision": "approve", "digest": approval["args_digest"]}, map[string]string{"X-Lifecycle-Origin": "ui"}); st != http.StatusForbidden {
		t.Fatalf("agent approval: %d", st)
	}
	if st, body := call("POST", "/v1/approvals/"+approval["approval_id"].(string), human,
		map[string]any{"decision": "approve", "digest": approval["args_digest"]}, nil); st != http.StatusOK {
		t.Fatalf("approve: %d %v", st, body)
	}
	var action map[string]any
	for deadline := time.Now().Add(20 * time.Second); ; {
		_, action = call("GET", "/v1/actions/"+actionID+"?wait=5", agent, nil, nil)
		if st, _ := action["states"].(map[string]any); st["delivery"] == "projected" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("never projected: %v", action)
		}
	}
	st := action["states"].(map[string]any)
	if st["permission"] != "allow" || st["outcome"] != "succeeded" || st["started"] != true {
		t.Fatalf("states %v", st)
	}
	rc := action["receipt"].(map[string]any)
	if !strings.Contains(fmt.Sprint(rc["output"]), "ran") {
		t.Fatalf("receipt %v", rc)
	}
	// Executed exactly once: the command appended one line.
	b, err := os.ReadFile(filepath.Join(ws, "count.txt"))
	if err != nil || string(b) != "ran\n" {
		t.Fatalf("count.txt = %q, %v", b, err)
	}
	// The same idempotency key with the same body is the same action; with a different body, 409.
	if st, again := call("POST", "/v1/sessions/ses_e2e/actions", agent,
		map[string]any{"tool": "Bash", "tool_call_id": "call_1", "interactive": true,
			"arguments": map[string]any{"command": "echo ran >> count.txt && cat count.txt", "description": "count a run"}},
		map[string]string{"Idempotency-Key": "k1"}); st >= 300 || again["action_id"] != actionID {
		t.Fatalf("replay: %d %v", st, again)
	}
	if st, _ := call("POST", "/v1/sessions/ses_e2e/actions", agent,
		map[string]any{"tool": "Bash", "tool_call_id": "call_1", "interactive": true, "arguments": map[string]any{"command": "rm -rf /"}},
		map[string]string{"Idempotency-Key": "k1"}); st != http.StatusConflict {
		t.Fatalf("reused key: %d", st)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "count.txt")); string(b) != "ran\n" {
		t.Fatalf("the replay executed again: %q", b)
	}
}

// startServe runs `lifecycle serve` until the test ends and returns its
// base URL.
func startServe(t *testing.T, stateDir, ws, session string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- serve(ctx, serveOptions{addr: "127.0.0.1:0", stateDir: stateDir, workspace: ws, session: session,
			restartWindow: "-1", logLevel: "error", sweep: time.Minute}, pw)
		pw.Close()
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	base := ""
	sc := bufio.NewScanner(pr)
	re := regexp.MustCompile(`API\s+(http://\S+)/v1`)
	for sc.Scan() {
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			base = m[1]
			break
		}
	}
	if base == "" {
		t.Fatal("serve did not print its API address")
	}
	go io.Copy(io.Discard, pr)
	return base
}

// caller sends JSON requests with a bearer token.
func caller(t *testing.T, base string) func(method, path, token string, body any, hdr map[string]string) (int, map[string]any) {
	return func(method, path, token string, body any, hdr map[string]string) (int, map[string]any) {
		t.Helper()
		var rd io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			rd = bytes.NewReader(b)
		}
		req, _ := http.NewRequest(method, base+path, rd)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		raw, _ := io.ReadAll(resp.Body)
		json.Unmarshal(raw, &out)
		return resp.StatusCode, out
	}
}

// TestServeProtectsItsState is issue 21, class 1, end to end: the state
// directory beside the workspace (the old default layout), a session
// policy that allows every Bash command (bypassPermissions), and an agent
// that tries to read and destroy the state through the real API and host
// worker. Every attempt is denied and not_started, the keys are intact, and
// a token signed with the agent key that claims "human" cannot change the
// policy.
func TestServeProtectsItsState(t *testing.T) {
	dir := t.TempDir()
	stateDir, ws := filepath.Join(dir, ".lifecycle"), filepath.Join(dir, "workspace")
	t.Setenv("LIFECYCLE_TOKEN", "a-token-of-the-person-who-started-serve")
	base := startServe(t, stateDir, ws, "ses_p")
	keys, err := auth.LoadOrCreateKeys(stateDir)
	if err != nil {
		t.Fatal(err)
	}
	iss, _ := auth.NewIssuer(keys)
	agent, _ := iss.Issue(auth.RoleAgent, "ses_p", time.Hour)
	human, _ := iss.Issue(auth.RoleHuman, "ses_p", time.Hour)
	call := caller(t, base)
	before := map[string][]byte{}
	for _, name := range []string{auth.KeyFile, auth.HumanKeyFile} {
		b, err := os.ReadFile(filepath.Join(stateDir, name))
		if err != nil {
			t.Fatal(err)
		}
		before[name] = b
	}

	permissive := map[string]any{"version": "p1", "mode": "bypassPermissions", "allow": []string{"Bash", "Read"}}
	// The agent key cannot raise an agent to human: a human token signed
	// with it is refused outright, and the agent's own token may not.
	forger, _ := auth.NewIssuer(auth.Keys{Agent: []byte("unrelated-key-unrelated-key-unrelated"), Human: keys.Agent})
	forged, _ := forger.Issue(auth.RoleHuman, "ses_p", time.Hour)
	policyBody := map[string]any{"expected_version": 0, "policy": permissive}
	if st, body := call("PUT", "/v1/sessions/ses_p/policy", forged, policyBody, nil); st != http.StatusUnauthorized {
		t.Fatalf("agent-key human token: %d %v", st, body)
	}
	if st, body := call("PUT", "/v1/sessions/ses_p/policy", agent, policyBody, nil); st != http.StatusForbidden {
		t.Fatalf("agent token: %d %v", st, body)
	}
	if st, body := call("PUT", "/v1/sessions/ses_p/policy", human, policyBody, nil); st != http.StatusOK {
		t.Fatalf("human: %d %v", st, body)
	}
	// Nor can a policy open the state directory to the sandbox (issue 20).
	opening := map[string]any{"version": "p2", "sandbox": map[string]any{"writable": []string{dir}}}
	if st, body := call("PUT", "/v1/sessions/ses_p/policy", human, map[string]any{"expected_version": 1, "policy": opening}, nil); st != http.StatusBadRequest ||
		body["error"].(map[string]any)["field"] != "policy.sandbox.writable[0]" {
		t.Fatalf("a sandbox opening the state directory: %d %v", st, body)
	}

	submit := func(key, tool string, args map[string]any) map[string]any {
		t.Helper()
		st, sub := call("POST", "/v1/sessions/ses_p/actions", agent,
			map[string]any{"tool": tool, "tool_call_id": key, "interactive": false, "arguments": args},
			map[string]string{"Idempotency-Key": key})
		if st != http.StatusAccepted {
			t.Fatalf("submit %s: %d %v", key, st, sub)
		}
		id := sub["action_id"].(string)
		for deadline := time.Now().Add(30 * time.Second); ; {
			_, a := call("GET", "/v1/actions/"+id+"?wait=5", agent, nil, nil)
			if st, _ := a["states"].(map[string]any); st["delivery"] == "projected" {
				return a
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s never projected: %v", key, a)
			}
		}
	}
	// The control: the policy really is permissive and the worker runs;
	// the token in the environment of serve is not the tools' to read.
	if a := submit("control", "Bash", map[string]any{"command": `echo "ok $LIFECYCLE_TOKEN" > ok.txt`}); a["states"].(map[string]any)["outcome"] != "succeeded" {
		t.Fatalf("control: %v", a)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "ok.txt")); err != nil || string(b) != "ok \n" {
		t.Fatalf("the tool saw %q (%v)", b, err)
	}
	attacks := []struct {
		name, tool string
		args       map[string]any
	}{
		{"cat-key", "Bash", map[string]any{"command": "cat ../.lifecycle/auth.key"}},
		{"find-delete", "Bash", map[string]any{"command": "find ../.lifecycle -delete"}},
		{"find-delete-absolute", "Bash", map[string]any{"command": "find " + stateDir + " -delete"}},
		{"sqlite3", "Bash", map[string]any{"command": "sqlite3 ../.lifecycle/state.db 'DELETE FROM items'"}},
		{"python-rmtree", "Bash", map[string]any{"command": `python3 -c 'import shutil; shutil.rmtree("../.lifecycle")'`}},
		{"walk-parent", "Bash", map[string]any{"command": "grep -r . .. > found.txt"}},
		{"rm-parent", "Bash", map[string]any{"command": "rm -rf .."}},
		{"the-cli", "Bash", map[string]any{"command": "lifecycle token --role human --session ses_p"}},
		{"read-tool", "Read", map[string]any{"file_path": "../.lifecycle/human.key"}},
	}
	for _, at := range attacks {
		a := submit(at.name, at.tool, at.args)
		st := a["states"].(map[string]any)
		d, _ := a["decision"].(map[string]any)
		reason, _ := d["reason"].(map[string]any)
		// A file tool's path outside the workspace is refused at prepare
		// (outside_workspace), before the protected-path check: both are
		// hard constraints.
		code := reason["code"]
		if at.tool != "Bash" && code == "outside_workspace" {
			code = "protected_path"
		}
		if st["permission"] != "deny" || st["outcome"] != "not_started" || reason["source"] != "hard_constraint" || code != "protected_path" {
			t.Errorf("%s: states %v, decision %v", at.name, st, d)
		}
	}
	for name, b := range before {
		if got, err := os.ReadFile(filepath.Join(stateDir, name)); err != nil || !bytes.Equal(got, b) {
			t.Errorf("%s changed: %v", name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(stateDir, "state.db")); err != nil {
		t.Errorf("state.db: %v", err)
	}
	if _, err := os.Stat(filepath.Join(ws, "found.txt")); err == nil {
		t.Error("a denied command ran")
	}
}
