package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/httpapi"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
)

// Issue 21, class 2, through the API: the policy allows what the engine
// analysed (bash), and the host runs that program, not what /bin/sh (dash)
// would make of the same text. Each payload creates a marker under dash;
// under bash, as analysed, it does not.
func TestHostBashRunsWhatWasAllowed(t *testing.T) {
	s := startServeStack(t)
	s.setPolicy(t, `{"version":"class2","allow":["Bash(ls *)"],"deny":["Bash(touch *)"]}`)
	cases := []struct {
		name, command, marker string
		outcome               lifecycle.Outcome
	}{
		// ls with the arguments touch and m1 (which do not exist: exit 2).
		{name: "&> redirects, the rest are ls arguments", command: "ls &>/dev/null touch m1", marker: "m1", outcome: lifecycle.OutcomeFailed},
		// A string comparison, not a redirection to m2.
		{name: "> inside [[ ]] compares", command: "ls >/dev/null && [[ z > m2 ]]", marker: "m2", outcome: lifecycle.OutcomeSucceeded},
		// Arithmetic, not nested subshells running 2 with output to 1.
		{name: "> inside (( )) compares", command: "ls >/dev/null && (( 2 > 1 ))", marker: "1", outcome: lifecycle.OutcomeSucceeded},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := bashAction(t, s, s.session, c.command)
			if v.States.Permission != lifecycle.PermissionAllow || v.States.Outcome != c.outcome || !v.States.Started {
				t.Fatalf("states %+v, want allowed, started, %s (decision %+v)", v.States, c.outcome, v.Decision)
			}
			if s.exists(t, c.marker) {
				t.Fatalf("the host ran something other than the analysed program: %s exists", c.marker)
			}
			if v.Receipt == nil || !strings.Contains(v.Receipt.Shell, "bash") || !filepath.IsAbs(strings.Fields(v.Receipt.Shell)[0]) {
				t.Fatalf("the receipt does not record the bash that ran: %+v", v.Receipt)
			}
			// For the record: /bin/sh as dash makes the same text run
			// something else, which is why the host must not use it.
			if dash, err := exec.LookPath("dash"); err == nil {
				dir := t.TempDir()
				cmd := exec.Command(dash, "-c", c.command)
				cmd.Dir = dir
				cmd.Run()
				if _, err := os.Stat(filepath.Join(dir, c.marker)); err != nil {
					t.Errorf("dash did not create %s: the payload no longer shows the difference", c.marker)
				}
			}
		})
	}
}

// The stall of issue 21: 32 allowed host Bash actions submitted at once
// all start, run exactly once and are recorded succeeded within a bound
// generous for a loaded two-core machine.
func TestParallelHostActionsAllRun(t *testing.T) {
	const n = 32
	s := startServeStack(t)
	s.setPolicy(t, `{"version":"parallel","allow":["Bash(echo *)","Bash(touch *)"]}`)
	tok := s.agent(t, s.session)
	began := time.Now()
	actions := make([]ids.ActionID, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id, err := s.submit(s.session, tok, "Bash", map[string]any{"command": fmt.Sprintf("echo %d >> runs.log && touch marker_%d", i, i)})
			if err != nil {
				t.Error(err)
			}
			actions[i] = id
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	views := make([]httpapi.ActionView, n)
	errs := make([]error, n)
	for i, id := range actions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			views[i], errs[i] = s.settled(tok, id, 90*time.Second-time.Since(began))
		}()
	}
	wg.Wait()
	var stuck []string
	for i, v := range views {
		if errs[i] != nil || v.States.Outcome != lifecycle.OutcomeSucceeded || !v.States.Started || v.Receipt == nil || v.Start == nil {
			stuck = append(stuck, fmt.Sprintf("%d: %+v %v", i, v.States, errs[i]))
		}
	}
	if len(stuck) > 0 {
		t.Fatalf("%d of %d host actions did not run and record succeeded:\n%s", len(stuck), n, strings.Join(stuck, "\n"))
	}
	t.Logf("%d parallel host actions recorded succeeded in %s", n, time.Since(began).Round(time.Millisecond))
	b, err := os.ReadFile(s.path("runs.log"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(string(b))
	slices.Sort(lines)
	var want []string
	for i := range n {
		want = append(want, fmt.Sprint(i))
		if !s.exists(t, fmt.Sprintf("marker_%d", i)) {
			t.Fatalf("marker_%d missing", i)
		}
	}
	slices.Sort(want)
	if !slices.Equal(lines, want) {
		t.Fatalf("each command must run exactly once; runs.log has %d lines: %v", len(lines), lines)
	}
}

// The service's environment does not reach an allowed command through the
// API path either: the host worker's credentials stay out, and a BASH_ENV
// the service inherited does not run before the analysed command.
func TestHostBashEnvironmentThroughAPI(t *testing.T) {
	rc := filepath.Join(t.TempDir(), "rc")
	marker := filepath.Join(t.TempDir(), "sourced")
	if err := os.WriteFile(rc, []byte("touch "+marker+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("BASH_ENV", rc)
	t.Setenv("LIFECYCLE_TOKEN", "host-worker-secret")
	s := startServeStack(t)
	s.setPolicy(t, `{"version":"env","allow":["Bash(printenv *)"]}`)
	v := bashAction(t, s, s.session, "printenv LIFECYCLE_TOKEN")
	if v.States.Permission != lifecycle.PermissionAllow || !v.States.Started || v.Receipt == nil {
		t.Fatalf("states %+v", v.States)
	}
	if strings.Contains(v.Receipt.Output, "secret") || v.States.Outcome != lifecycle.OutcomeFailed {
		t.Fatalf("the command saw the host's token: %+v", v.Receipt)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("BASH_ENV was sourced before the command")
	}
}
