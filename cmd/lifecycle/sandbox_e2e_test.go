package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/sandbox"
)

// tempOutsideTmp is a directory outside /tmp: the sandbox's /tmp is a
// private tmpfs, so a state directory or home under /tmp would be
// invisible whatever the hiding does, and the test could not fail.
func tempOutsideTmp(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("/var/tmp", "lifecycle-sbx-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// Issue 20, through the API: an allowed Bash runs in bubblewrap's sandbox
// of the default profile, and the receipt records it.
func TestHostSandboxThroughAPI(t *testing.T) {
	if _, err := sandbox.Find(); err != nil {
		t.Skip(err)
	}
	dir := tempOutsideTmp(t)
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(filepath.Join(home, ".ssh"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".ssh", "id_ed25519"), []byte("PRIVATE-KEY-MATERIAL"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	outside := filepath.Join(dir, "outside")
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
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
			c.Write([]byte("HTTP/1.0 200 OK\r\nContent-Length: 11\r\n\r\nhost-secret"))
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port

	s := startServeStackIn(t, dir)
	// The probe runs as a script: the permission engine would refuse a
	// command naming ~/.ssh or the state directory itself (protected
	// paths); the script is what an allowed `npm test` could do unseen.
	probe := fmt.Sprintf("echo key=$(cat %[1]s/.ssh/id_ed25519 2>/dev/null); echo ssh=$(ls -A %[1]s/.ssh | wc -l); echo state=$(ls -A %[2]s | wc -l)\n",
		home, s.stateDir)
	if err := os.WriteFile(s.path("probe.sh"), []byte(probe), 0o644); err != nil {
		t.Fatal(err)
	}
	s.setPolicy(t, `{"version":"sbx","allow":["Bash(touch *)","Bash(bash probe.sh)","Bash(curl *)","Bash(echo *)"]}`)
	if entries, _ := os.ReadDir(s.stateDir); len(entries) == 0 {
		t.Fatal("the state directory is empty on the host: the test would prove nothing")
	}

	tests := []struct {
		name     string
		command  string
		outcome  lifecycle.Outcome
		code     string
		output   []string // substrings of the output
		noOutput []string // never in the output
		// approve: the permission engine asks (a path outside the project,
		// a script it cannot see into); a person approves, and the
		// approved command still runs in the sandbox.
		approve bool
		check   func(t *testing.T)
	}{
		{name: "a write in the workspace succeeds", command: "touch inside", outcome: lifecycle.OutcomeSucceeded,
			check: func(t *testing.T) {
				if !s.exists(t, "inside") {
					t.Fatal("the workspace write did not happen")
				}
			}},
		{name: "a write outside the workspace is denied and nothing is written", command: "touch " + filepath.Join(outside, "escaped"),
			outcome: lifecycle.OutcomeFailed, code: "sandbox_denied", output: []string{"Read-only file system"}, approve: true,
			check: func(t *testing.T) {
				if _, err := os.Stat(filepath.Join(outside, "escaped")); err == nil {
					t.Fatal("a file was written outside the workspace")
				}
			}},
		{name: "the host's loopback is unreachable without network", command: fmt.Sprintf("curl -sS --max-time 20 http://127.0.0.1:%d/", port),
			outcome: lifecycle.OutcomeFailed, code: "sandbox_denied", noOutput: []string{"host-secret"}},
		{name: "the state directory and ~/.ssh are invisible", command: "bash probe.sh", outcome: lifecycle.OutcomeSucceeded, approve: true,
			output: []string{"key=\n", "ssh=0\n", "state=0\n"}, noOutput: []string{"PRIVATE-KEY-MATERIAL"}},
	}
	// The relaxed form (network: true) of a command an allow rule allows
	// sandboxed is asked; once a person approves it, it runs with the
	// network it asked for, and the decision and the receipt both record
	// that profile.
	t.Run("the relaxed form asks and, once approved, runs with the recorded profile", func(t *testing.T) {
		tok := s.agent(t, s.session)
		id, err := s.submit(s.session, tok, "Bash", map[string]any{"command": fmt.Sprintf("curl -sS --max-time 20 http://127.0.0.1:%d/", port), "network": true})
		if err != nil {
			t.Fatal(err)
		}
		v, err := s.settled(tok, id, 60*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if v.States.Permission != lifecycle.PermissionAsk || v.Approval == nil || v.States.Started {
			t.Fatalf("the relaxed call was not asked: states %+v, decision %+v", v.States, v.Decision)
		}
		if st, err := s.do("POST", "/v1/approvals/"+string(v.Approval.ApprovalID), s.human,
			map[string]any{"decision": "approve", "digest": v.ArgsDigest}, nil, nil); err != nil {
			t.Fatalf("approve: %d %v", st, err)
		}
		if v, err = s.settled(tok, id, 60*time.Second); err != nil {
			t.Fatal(err)
		}
		if v.States.Outcome != lifecycle.OutcomeSucceeded || v.Receipt == nil || !strings.Contains(v.Receipt.Output, "host-secret") {
			t.Fatalf("the approved relaxed call did not reach the network: states %+v, receipt %+v", v.States, v.Receipt)
		}
		if v.Decision == nil || v.Decision.Sandbox == nil || !v.Decision.Sandbox.Network {
			t.Fatalf("the decision does not record the relaxed profile: %+v", v.Decision)
		}
		if rc := v.Receipt; rc.Sandbox == nil || rc.Sandbox.Mode != sandbox.ModeBwrap || !rc.Sandbox.Network {
			t.Fatalf("the receipt does not record the profile that ran: %+v", rc.Sandbox)
		}
	})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := bashAction(t, s, s.session, tc.command)
			if tc.approve && v.States.Permission == lifecycle.PermissionAsk && v.Approval != nil {
				if st, err := s.do("POST", "/v1/approvals/"+string(v.Approval.ApprovalID), s.human,
					map[string]any{"decision": "approve", "digest": v.ArgsDigest}, nil, nil); err != nil {
					t.Fatalf("approve: %d %v", st, err)
				}
				var err error
				if v, err = s.settled(s.agent(t, s.session), v.ActionID, 60*time.Second); err != nil {
					t.Fatal(err)
				}
			}
			if v.States.Permission != lifecycle.PermissionAllow || !v.States.Started || v.States.Outcome != tc.outcome || v.Receipt == nil {
				t.Fatalf("states %+v, want allowed, started, %s (decision %+v, receipt %+v)", v.States, tc.outcome, v.Decision, v.Receipt)
			}
			rc := v.Receipt
			if rc.ErrorCode != tc.code {
				t.Fatalf("error code %q, want %q (error %q, output %q)", rc.ErrorCode, tc.code, rc.Error, rc.Output)
			}
			if tc.code == "sandbox_denied" && !strings.Contains(rc.Error, "dangerouslyDisableSandbox") && !strings.Contains(rc.Error, `"network": true`) {
				t.Fatalf("the model-facing error does not say how to ask for more: %q", rc.Error)
			}
			for _, w := range tc.output {
				if !strings.Contains(rc.Output, w) {
					t.Fatalf("output %q lacks %q", rc.Output, w)
				}
			}
			for _, w := range tc.noOutput {
				if strings.Contains(rc.Output, w) {
					t.Fatalf("output %q shows %q", rc.Output, w)
				}
			}
			if rc.Sandbox == nil || rc.Sandbox.Mode != sandbox.ModeBwrap || rc.Sandbox.Network {
				t.Fatalf("the receipt does not record the default sandbox it ran in: %+v", rc.Sandbox)
			}
			if tc.check != nil {
				tc.check(t)
			}
		})
	}
}

// Without bubblewrap an allowed host call is refused before it starts,
// never run unconfined: not_started, the reason and the fix.
func TestHostRefusedWithoutBubblewrap(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip(err)
	}
	bin := t.TempDir()
	if err := os.Symlink(bash, filepath.Join(bin, "bash")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin) // bash, and no bwrap
	s := startServeStack(t)
	s.setPolicy(t, `{"version":"nobwrap","allow":["Bash(echo *)"]}`)
	began := time.Now()
	v := bashAction(t, s, s.session, "echo ran > ran.txt")
	if v.States.Permission != lifecycle.PermissionAllow || v.States.Started || v.States.Outcome != lifecycle.OutcomeNotStarted || v.Start != nil {
		t.Fatalf("states %+v start %+v, want allowed, not started (receipt %+v)", v.States, v.Start, v.Receipt)
	}
	if v.Receipt == nil || v.Receipt.ErrorCode != "sandbox_unavailable" || !strings.Contains(v.Receipt.Error, "apt-get install bubblewrap") {
		t.Fatalf("receipt %+v: want sandbox_unavailable naming apt-get install bubblewrap", v.Receipt)
	}
	if s.exists(t, "ran.txt") {
		t.Fatal("the command ran unconfined")
	}
	t.Logf("refused in %s", time.Since(began).Round(time.Millisecond))
}
