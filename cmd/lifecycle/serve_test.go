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
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- serve(ctx, serveOptions{addr: "127.0.0.1:0", stateDir: stateDir, workspace: ws, session: "ses_e2e",
			restartWindow: "-1", logLevel: "error", sweep: time.Minute}, pw)
		pw.Close()
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
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

	key, err := auth.LoadOrCreateKey(stateDir)
	if err != nil {
		t.Fatal(err)
	}
	iss, _ := auth.NewIssuer(key)
	agent, _ := iss.Issue(auth.RoleAgent, "ses_e2e", time.Hour)
	human, _ := iss.Issue(auth.RoleHuman, "ses_e2e", time.Hour)

	call := func(method, path, token string, body any, hdr map[string]string) (int, map[string]any) {
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
