package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openprogram/lifecycle/shared/lifecycle"
)

// Against a real `lifecycle serve`: every ask carries its risk in
// `lifecycle approvals` (a download run by a later call of the execution is
// HIGH), and `lifecycle policy replay` dry-runs a candidate over what the
// agent did, changing nothing.
func TestPolicyReplayAndRiskThroughTheCLI(t *testing.T) {
	s := startServeStack(t)
	s.setPolicy(t, `{"version":"live","mode":"default","allow":["Bash(echo *)"]}`)
	echo := bashAction(t, s, s.session, "echo hi")
	asked := bashAction(t, s, s.session, "cat notes.txt")
	if echo.Decision.Permission != lifecycle.PermissionAllow || asked.States.Permission != lifecycle.PermissionAsk {
		t.Fatalf("live decisions: %s, %s", echo.Decision.Permission, asked.States.Permission)
	}
	out, err := s.cli(s.human, "approvals")
	if err != nil || !strings.Contains(out, "risk ") || !strings.Contains(out, "cat notes.txt") {
		t.Fatalf("approvals: %v\n%s", err, out)
	}

	cand := filepath.Join(t.TempDir(), "candidate.json")
	if err := os.WriteFile(cand, []byte(`{"version":"cand","mode":"default","allow":["Bash(cat *)"],"deny":["Bash(echo *)"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
	}{
		{"the token's sessions", []string{"policy", "replay", "--file", cand, "--since", "1h"}},
		{"one session", []string{"policy", "replay", "--file", cand, "--since", "1h", "--session", string(s.session)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := s.cli(s.human, tc.args...)
			if err != nil {
				t.Fatalf("replay: %v\n%s", err, out)
			}
			for _, want := range []string{"2 actions replayed: 0 unchanged, 2 changed", "allow -> deny       1", "ask   -> allow      1",
				string(echo.ActionID) + "  allow -> deny", "candidate: deny_rule/deny_rule", "live:      allow_rule/allow_rule"} {
				if !strings.Contains(out, want) {
					t.Fatalf("replay output lacks %q:\n%s", want, out)
				}
			}
		})
	}
	// Nothing changed: the live policy is the same, the ask still waits.
	out, err = s.cli(s.human, "policy")
	if err != nil || !strings.Contains(out, `"live"`) {
		t.Fatalf("policy after the replay: %v\n%s", err, out)
	}
	if out, err := s.cli(s.human, "policy", "replay", "--since", "1h"); err == nil || !strings.Contains(out+err.Error(), "--file") {
		t.Fatalf("replay without --file: %v %s", err, out)
	}
}
