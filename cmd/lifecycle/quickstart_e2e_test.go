package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/activity"
	"github.com/openprogram/lifecycle/shared/ids"
)

// printed is the first submatch of re in out, or fails the test naming
// the step whose output lacked it.
func printed(t *testing.T, step, out string, re *regexp.Regexp) string {
	t.Helper()
	m := re.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("%s did not print %s:\n%s", step, re, out)
	}
	return m[1]
}

// The README's quick start, step by step, with the CLI against a real
// `lifecycle serve` (its default policy, its host worker running bash):
// an agent token; submit a Bash call that waits for approval; a human
// approves it (listed by `approvals`, answered by `approve`); the submit
// prints the outcome and the execution; `show` prints the three states,
// the decision and the receipt; the agent ends the execution; Activity
// lists the branch under History as Completed. Each step uses only what an
// earlier step printed.
func TestQuickStart(t *testing.T) {
	s := startServeStack(t)
	session := string(s.session)

	// export LIFECYCLE_TOKEN=$(./lifecycle token --role agent --session ses_local)
	out, err := s.cli("", "token", "--role", "agent", "--session", session, "--state-dir", s.stateDir)
	if err != nil {
		t.Fatalf("token: %v %s", err, out)
	}
	agent := strings.TrimSpace(out)

	// ./lifecycle submit --session ses_local --tool Bash --args '{"command":"echo hi > hi.txt"}' --wait 30s
	// waits: the default policy asks.
	type result struct {
		out string
		err error
	}
	submitted := make(chan result, 1)
	go func() {
		out, err := s.cli(agent, "submit", "--session", session, "--tool", "Bash", "--args", `{"command":"echo hi > hi.txt"}`, "--wait", "120s")
		submitted <- result{out, err}
	}()

	// The human approves it (the UI's card, or the CLI from another
	// terminal: `approvals` lists it, `approve <approval_id>` answers).
	listed := regexp.MustCompile(`(?m)^(\S+)\s+Bash `)
	var approval string
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		out, err := s.cli(s.human, "approvals")
		if err != nil {
			t.Fatalf("approvals: %v %s", err, out)
		}
		if m := listed.FindStringSubmatch(out); m != nil {
			approval = m[1]
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no approval listed: %s", out)
		}
	}
	if out, err := s.cli(s.human, "approve", approval); err != nil || !strings.Contains(out, approval+" approved") {
		t.Fatalf("approve: %v %s", err, out)
	}

	// The submit returns with the receipt; it names the action and the
	// execution the next steps need.
	var sub result
	select {
	case sub = <-submitted:
	case <-time.After(150 * time.Second):
		t.Fatal("submit --wait did not return")
	}
	if sub.err != nil {
		t.Fatalf("submit: %v %s", sub.err, sub.out)
	}
	action := printed(t, "submit", sub.out, regexp.MustCompile(`(?m)^action\s+(act_\S+)`))
	printed(t, "submit", sub.out, regexp.MustCompile(`(?m)^outcome\s+(succeeded)$`))

	// ./lifecycle show <action_id>: the three states, the decision with its
	// reason, the receipt, and the execution.
	out, err = s.cli(agent, "show", action)
	if err != nil {
		t.Fatalf("show: %v %s", err, out)
	}
	for _, want := range []string{"permission  allow (approval/approved: approved by human", "outcome     succeeded", "delivery    projected", "approval    " + approval + " approved"} {
		if !strings.Contains(out, want) {
			t.Fatalf("show does not print %q:\n%s", want, out)
		}
	}
	exec := printed(t, "show", out, regexp.MustCompile(`(?m)^execution\s+(exe_\S+)`))
	if b, err := os.ReadFile(s.path("hi.txt")); err != nil || string(b) != "hi\n" {
		t.Fatalf("hi.txt: %q %v", b, err)
	}

	// The agent ends its run: ./lifecycle end <execution_id> --status completed
	out, err = s.cli(agent, "end", exec, "--status", "completed")
	if err != nil || !regexp.MustCompile(`^cmd_\S+ end applied \(execution version \d+\)\n$`).MatchString(out) {
		t.Fatalf("end: %v %q", err, out)
	}

	// Activity: the branch is under History, Completed; nothing else.
	out, err = s.cli(s.human, "activity")
	if err != nil {
		t.Fatalf("activity: %v %s", err, out)
	}
	for _, want := range []string{"Needs attention (0)", "In progress (0)", "History (1)", " · " + activity.LabelCompleted + " · 1 execution(s)"} {
		if !strings.Contains(out, want) {
			t.Fatalf("activity does not print %q:\n%s", want, out)
		}
	}
	row, ok := s.historyRow(t, ids.ExecutionID(exec))
	if !ok || row.Status != activity.LabelCompleted || row.ExecutionCount != 1 {
		t.Fatalf("the History row of %s: %+v %v", exec, row, ok)
	}
}
