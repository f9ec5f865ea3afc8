package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
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

// TestServeAutoModeWithoutModel (issue 21, class 6) drives `lifecycle
// serve` over HTTP in auto mode with the built-in reviewer: a proven-safe
// command runs; a command outside the known-safe analysis (inline Python)
// is denied for a noninteractive caller with not_proven_safe and never
// runs, and for an interactive caller waits for a person with that reason.
func TestServeAutoModeWithoutModel(t *testing.T) {
	dir := t.TempDir()
	stateDir, ws := filepath.Join(dir, "state"), filepath.Join(dir, "ws")
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- serve(ctx, serveOptions{addr: "127.0.0.1:0", stateDir: stateDir, workspace: ws, session: "ses_auto",
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

	keys, err := auth.LoadOrCreateKeys(stateDir)
	if err != nil {
		t.Fatal(err)
	}
	iss, _ := auth.NewIssuer(keys)
	agent, _ := iss.Issue(auth.RoleAgent, "ses_auto", time.Hour)
	human, _ := iss.Issue(auth.RoleHuman, "ses_auto", time.Hour)
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
	if st, body := call("PUT", "/v1/sessions/ses_auto/policy", human,
		map[string]any{"expected_version": 0, "policy": map[string]any{"version": "auto-1", "mode": "auto"}}, nil); st != http.StatusOK {
		t.Fatalf("put policy: %d %v", st, body)
	}
	submit := func(key, cmd string, interactive bool) string {
		t.Helper()
		st, sub := call("POST", "/v1/sessions/ses_auto/actions", agent,
			map[string]any{"tool": "Bash", "tool_call_id": "call_" + key, "interactive": interactive,
				"arguments": map[string]any{"command": cmd, "description": key}},
			map[string]string{"Idempotency-Key": key})
		if st != http.StatusAccepted {
			t.Fatalf("submit %s: %d %v", key, st, sub)
		}
		return sub["action_id"].(string)
	}
	// until polls an action until cond holds (generous deadline: the
	// machine is shared).
	until := func(id string, cond func(states, action map[string]any) bool) map[string]any {
		t.Helper()
		for deadline := time.Now().Add(60 * time.Second); ; {
			_, a := call("GET", "/v1/actions/"+id+"?wait=5", agent, nil, nil)
			if st, _ := a["states"].(map[string]any); st != nil && cond(st, a) {
				return a
			}
			if time.Now().After(deadline) {
				t.Fatalf("action %s never reached the expected state: %v", id, a)
			}
		}
	}
	reason := func(a map[string]any) map[string]any {
		d, _ := a["decision"].(map[string]any)
		r, _ := d["reason"].(map[string]any)
		return r
	}

	// Proven safe: runs without a person.
	safe := submit("safe", "ls && echo ran > proof.txt", false)
	a := until(safe, func(st, _ map[string]any) bool { return st["delivery"] == "projected" })
	if st := a["states"].(map[string]any); st["permission"] != "allow" || st["outcome"] != "succeeded" {
		t.Fatalf("proven-safe command: %v", st)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "proof.txt")); err != nil || string(b) != "ran\n" {
		t.Fatalf("proof.txt = %q, %v", b, err)
	}

	// Not proven safe, noninteractive: denied with the reason, never run.
	// (Inline interpreter code would meet the protected state directory
	// first, as a possible reach: checked below.)
	py := "echo x | tee pwned"
	denied := submit("py-noninteractive", py, false)
	a = until(denied, func(st, _ map[string]any) bool { return st["delivery"] == "projected" })
	if st := a["states"].(map[string]any); st["permission"] != "deny" {
		t.Fatalf("unproven noninteractive command: %v, reason %v", st, reason(a))
	}
	if r := reason(a); r["code"] != "not_proven_safe" || !strings.Contains(r["detail"].(string), "tee is not in the known-safe list") {
		t.Fatalf("noninteractive reason %v", r)
	}
	if st := a["states"].(map[string]any); st["started"] == true || st["outcome"] != "not_started" {
		t.Fatalf("a denied action started: %v", st)
	}
	// Inline python may reach the state directory: a possible protected
	// reach, denied noninteractive before the reviewer is asked.
	inline := submit("inline-noninteractive", `python3 -c "open('pwned', 'w').write('x')"`, false)
	a = until(inline, func(st, _ map[string]any) bool { return st["delivery"] == "projected" })
	if r := reason(a); a["states"].(map[string]any)["permission"] != "deny" || r["source"] != "hard_constraint" || r["code"] != "unverifiable" {
		t.Fatalf("inline python, noninteractive: %v, reason %v", a["states"], r)
	}

	// Not proven safe, interactive: waits for a person, with the reason.
	asked := submit("py-interactive", py, true)
	a = until(asked, func(st, _ map[string]any) bool { return st["permission"] == "ask" || st["delivery"] == "projected" })
	if st := a["states"].(map[string]any); st["permission"] != "ask" {
		t.Fatalf("unproven interactive command: %v, reason %v", st, reason(a))
	}
	var approval map[string]any
	for deadline := time.Now().Add(60 * time.Second); approval == nil; {
		_, list := call("GET", "/v1/sessions/ses_auto/approvals", human, nil, nil)
		if aps, _ := list["approvals"].([]any); len(aps) == 1 {
			approval = aps[0].(map[string]any)
		} else if time.Now().After(deadline) {
			t.Fatalf("no pending approval: %v", list)
		} else {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if r, _ := approval["reason"].(map[string]any); r["code"] != "not_proven_safe" || approval["fallback"] == true {
		t.Fatalf("approval %v", approval)
	}
	if _, err := os.Stat(filepath.Join(ws, "pwned")); !os.IsNotExist(err) {
		t.Fatalf("the unproven command ran: %v", err)
	}
}
