package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/activity"
	"github.com/openprogram/lifecycle/shared/auth"
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
// an agent token; submit a Bash call, which waits for approval; a human
// approves it, either while the submit waits (the UI's card, or
// `approvals` and `approve` from another terminal) or after the wait
// ended (with the approval id the submit printed); `show` prints the
// three states, the decision, the receipt and the execution; the agent
// ends the execution; Activity lists the branch under History as
// Completed. Each step uses only what an earlier step printed.
func TestQuickStart(t *testing.T) {
	s := startServeStack(t)
	for _, tc := range []struct {
		name, session string
		// wait is submit's --wait: 30s is approved while it waits, 1s
		// ends first.
		wait string
	}{
		{"approved while submit waits", "ses_local", "30s"},
		{"approved after the wait ended", "ses_later", "1s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			quickStart(t, s, tc.session, tc.wait)
		})
	}
}

func quickStart(t *testing.T, s *serveStack, session, wait string) {
	human, err := s.issuer.Issue(auth.RoleHuman, ids.SessionID(session), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
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
		out, err := s.cli(agent, "submit", "--session", session, "--tool", "Bash", "--args", `{"command":"echo hi > hi.txt"}`, "--wait", wait)
		submitted <- result{out, err}
	}()
	done := func() result {
		select {
		case r := <-submitted:
			if r.err != nil {
				t.Fatalf("submit: %v %s", r.err, r.out)
			}
			return r
		case <-time.After(90 * time.Second):
			t.Fatal("submit --wait did not return")
		}
		return result{}
	}

	var approval, action string
	if wait == "1s" {
		// The wait ends first: submit prints the action and its pending
		// approval's id.
		r := done()
		approval = printed(t, "submit", r.out, regexp.MustCompile(`(?m)^approval\s+(\S+) pending$`))
		action = printed(t, "submit", r.out, regexp.MustCompile(`(?m)^action\s+(act_\S+)`))
	} else {
		// While it waits, from another terminal: `approvals` lists it.
		listed := regexp.MustCompile(`(?m)^(\S+)\s+Bash `)
		for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			out, err := s.cli(agent, "approvals")
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
	}
	// ./lifecycle approve <approval_id> --token $(./lifecycle token --role human --session ses_local)
	if out, err := s.cli(human, "approve", approval); err != nil || !strings.Contains(out, approval+" approved") {
		t.Fatalf("approve: %v %s", err, out)
	}
	if wait != "1s" {
		// The submit returns with the receipt.
		r := done()
		printed(t, "submit", r.out, regexp.MustCompile(`(?m)^outcome\s+(succeeded)$`))
		action = printed(t, "submit", r.out, regexp.MustCompile(`(?m)^action\s+(act_\S+)`))
	}

	// ./lifecycle show <action_id> --wait 30s: the three states, the
	// decision with its reason, the receipt, and the execution.
	out, err = s.cli(agent, "show", action, "--wait", "30s")
	if err != nil {
		t.Fatalf("show: %v %s", err, out)
	}
	for _, want := range []string{"permission  allow (approval/approved: approved by human", "outcome     succeeded", "delivery    projected",
		"approval    " + approval + " approved"} {
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
	out, err = s.cli(agent, "activity")
	if err != nil {
		t.Fatalf("activity: %v %s", err, out)
	}
	for _, want := range []string{"Needs attention (0)", "In progress (0)", "History (1)", " · " + activity.LabelCompleted + " · 1 execution(s)"} {
		if !strings.Contains(out, want) {
			t.Fatalf("activity does not print %q:\n%s", want, out)
		}
	}
	var a activity.Activity
	if _, err := s.do("GET", "/v1/sessions/"+session+"/activity", human, nil, &a, nil); err != nil {
		t.Fatal(err)
	}
	if len(a.History) != 1 || a.History[0].Status != activity.LabelCompleted || a.History[0].ExecutionCount != 1 ||
		len(a.History[0].Executions) != 1 || string(a.History[0].Executions[0].ExecutionID) != exec {
		t.Fatalf("the History of %s: %+v", session, a.History)
	}
}
