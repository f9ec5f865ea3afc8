package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/mcpgateway"
)

// rawMCP is a JSON-RPC client of /mcp (the Go SDK v1.8.0 has no tasks).
type rawMCP struct {
	t       *testing.T
	s       *serveStack
	token   string
	session string
	next    int
}

func (c *rawMCP) post(method string, params any) map[string]any {
	c.t.Helper()
	msg := map[string]any{"jsonrpc": "2.0", "method": method}
	notification := strings.HasPrefix(method, "notifications/")
	if !notification {
		c.next++
		msg["id"] = c.next
	}
	if params != nil {
		msg["params"] = params
	}
	b, _ := json.Marshal(msg)
	req, _ := http.NewRequest("POST", c.s.base+mcpgateway.Path, strings.NewReader(string(b)))
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	resp, err := c.s.client.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
		c.session = sid
	}
	body, _ := io.ReadAll(resp.Body)
	if notification {
		if resp.StatusCode != http.StatusAccepted {
			c.t.Fatalf("%s: %d %s", method, resp.StatusCode, body)
		}
		return nil
	}
	for _, line := range strings.Split(string(body), "\n") {
		line = strings.TrimPrefix(line, "data: ")
		var out map[string]any
		if json.Unmarshal([]byte(line), &out) == nil && out["id"] != nil {
			return out
		}
	}
	c.t.Fatalf("%s: no response in %d %s", method, resp.StatusCode, body)
	return nil
}

func (c *rawMCP) initialize() map[string]any {
	c.t.Helper()
	c.session = ""
	res := c.post("initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "raw-tasks", "version": "1"}})
	c.post("notifications/initialized", nil)
	return res
}

// taskStatus polls tasks/get until the status is want.
func (c *rawMCP) taskStatus(id, want string) map[string]any {
	c.t.Helper()
	for deadline := time.Now().Add(60 * time.Second); ; {
		res := c.post("tasks/get", map[string]any{"taskId": id})
		task, _ := res["result"].(map[string]any)
		if task != nil && task["status"] == want {
			return task
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("task %s never %s: %v", id, want, res)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestMCPTasksAcrossServeRestart: a task-augmented tools/call returns the
// action as a task at once; tasks/get says input_required while a human
// decides, also after serve restarts; tasks/result returns the result;
// tasks/cancel cancels a pending approval and nothing runs.
func TestMCPTasksAcrossServeRestart(t *testing.T) {
	dir := t.TempDir()
	stateDir, ws := filepath.Join(dir, "state"), filepath.Join(dir, "ws")
	s, stop := startServeIn(t, stateDir, ws)
	c := &rawMCP{t: t, s: s, token: s.agent(t, s.session)}
	init := c.initialize()
	caps, _ := init["result"].(map[string]any)["capabilities"].(map[string]any)
	if caps["tasks"] == nil {
		t.Fatalf("initialize does not advertise tasks: %v", init)
	}
	res := c.post("tools/call", map[string]any{"name": "Bash", "arguments": map[string]any{"command": "printf task > task.txt"}, "task": map[string]any{}})
	task, _ := res["result"].(map[string]any)["task"].(map[string]any)
	id, _ := task["taskId"].(string)
	if !strings.HasPrefix(id, "act_") {
		t.Fatalf("tools/call as a task: %v", res)
	}
	c.taskStatus(id, "input_required")

	stop()
	s2, _ := startServeIn(t, stateDir, ws)
	c = &rawMCP{t: t, s: s2, token: s2.agent(t, s2.session)}
	c.initialize()
	c.taskStatus(id, "input_required")
	ap := s2.pendingApproval(t)
	s2.decide(t, ap, "approve")
	out := c.post("tasks/result", map[string]any{"taskId": id})
	result, _ := out["result"].(map[string]any)
	if result == nil || result["isError"] == true {
		t.Fatalf("tasks/result: %v", out)
	}
	c.taskStatus(id, "completed")
	if b, err := os.ReadFile(filepath.Join(ws, "task.txt")); err != nil || string(b) != "task" {
		t.Fatalf("the task's action did not run once: %q %v", b, err)
	}

	// tasks/cancel: the pending approval is cancelled, nothing runs.
	res = c.post("tools/call", map[string]any{"name": "Bash", "arguments": map[string]any{"command": "printf no > cancelled-task.txt"}, "task": map[string]any{}})
	id2, _ := res["result"].(map[string]any)["task"].(map[string]any)["taskId"].(string)
	c.taskStatus(id2, "input_required")
	c.post("tasks/cancel", map[string]any{"taskId": id2})
	c.taskStatus(id2, "cancelled")
	if s2.exists(t, "cancelled-task.txt") {
		t.Fatal("a cancelled task ran")
	}
	// Another session's token (or an unknown id) finds no task.
	other := &rawMCP{t: t, s: s2, token: s2.agent(t, "ses_other")}
	other.initialize()
	if res := other.post("tasks/get", map[string]any{"taskId": id}); res["error"] == nil {
		t.Fatalf("another session read the task: %v", res)
	}
}
