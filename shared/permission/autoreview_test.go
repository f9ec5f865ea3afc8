package permission_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/permission"
	"github.com/openprogram/lifecycle/shared/permission/riskreview"
	"github.com/openprogram/lifecycle/shared/store"
)

// Auto mode with the built-in reviewer and no model (issue 21, class 6):
// proven-safe calls are allowed, known risks blocked and counted, anything
// else is not proven safe: asked (interactive) or denied (noninteractive)
// with the reason, and never counted.
func TestAutoModeWithoutModel(t *testing.T) {
	const (
		safe      = "safe"
		unproven  = "unproven"
		block     = "block"
		protected = "protected" // a protected path, named: denied before the review, not counted
		reach     = "reach"     // a possible reach of a protected path: asked (denied noninteractive), not counted
	)
	cases := []struct {
		name string
		call permission.Call
		kind string
		why  string // a part of the Detail
	}{
		{"ls", bashCall("ls"), safe, ""},
		{"ls -la src", bashCall("ls -la src"), safe, ""},
		{"git status", bashCall("git status"), safe, ""},
		{"git diff", bashCall("git diff"), safe, ""},
		{"git log", bashCall("git log --oneline -5"), safe, ""},
		{"go test", bashCall("go test ./..."), safe, ""},
		{"grep -r", bashCall("grep -r foo ."), safe, ""},
		{"cat README", bashCall("cat README.md"), safe, ""},
		{"mkdir -p build", bashCall("mkdir -p build"), safe, ""},
		{"wc glob", bashCall("wc -l *.go"), safe, ""},
		{"head", bashCall("head -20 main.go"), safe, ""},
		{"rg", bashCall("rg TODO"), safe, ""},
		{"Edit in the project", toolCall("Edit", "file_path", "src/main.go", "old_string", "a", "new_string", "b"), safe, ""},

		// Inline code may reach the protected paths: that constraint asks
		// before the reviewer is consulted.
		{"python -c", bashCall(`python3 -c 'import os; os.remove("x")'`), reach, "runs python3 code"},
		{"find -delete", bashCall("find build -delete"), unproven, "find -delete"},
		{"git -c pager", bashCall(`git -c core.pager='sh -c id' log`), unproven, "git -c core.pager"},
		{"npm exec", bashCall("npm exec x"), unproven, "npm exec"},
		{"cat outside", bashCall("cat ../.lifecycle/auth.key"), unproven, "outside the project scope"},
		{"make", bashCall("make test"), unproven, "make is not in the known-safe list"},
		{"WebFetch", toolCall("WebFetch", "url", "https://example.com/"), unproven, "WebFetch is not a tool"},
		{"Read outside", toolCall("Read", "file_path", "/etc/hosts"), unproven, "reads /etc/hosts"},

		{"rm -rf outside", bashCall("rm -rf /srv/data"), block, "recursively deletes /srv/data"},
		{"find -delete outside", bashCall("find /srv/data -delete"), block, "recursively deletes /srv/data"},
		{"find . -delete", bashCall("find . -delete"), block, "recursively deletes the whole project"},
		// The home directory holds ~/.ssh: the hard constraint denies
		// these before the reviewer, and they are not counted.
		{"rm -rf home", bashCall("rm -rf ~"), protected, "walks a directory that contains the protected path"},
		{"find ~ -delete", bashCall("find ~ -delete"), protected, "walks a directory that contains the protected path"},
		{"ssh key", bashCall("cat ~/.ssh/id_rsa"), protected, "names the protected path"},
		{"Write outside", toolCall("Write", "file_path", "/usr/local/bin/x", "content", "x"), block, "outside the project scope"},
	}
	for _, interactive := range []bool{true, false} {
		for _, tc := range cases {
			t.Run(fmt.Sprintf("%s/interactive=%v", tc.name, interactive), func(t *testing.T) {
				ctx := context.Background()
				st := openStore(t)
				e := autoEngine(t, st, riskreview.New())
				p := policy(t, "v1", permission.ModeAuto)
				// One earlier block: an allow resets the consecutive count,
				// a block adds one, an unproven call changes nothing.
				if _, _, err := st.ApplyCounter(ctx, permission.CounterKey("ses_test", "v1"), "earlier", store.CounterBlock); err != nil {
					t.Fatal(err)
				}
				tc.call.ActionID = newAction()
				d, err := e.Decide(ctx, permission.Request{Trusted: trusted(interactive), Call: tc.call, Policy: p})
				if err != nil {
					t.Fatal(err)
				}
				c, err := e.Counter(ctx, "ses_test", "v1")
				if err != nil {
					t.Fatal(err)
				}
				want := store.Counter{Consecutive: 1, Total: 1}
				switch tc.kind {
				case safe:
					if d.Permission != allow || d.Reason.Code != permission.CodeClassifierAllow {
						t.Fatalf("%s %+v, want a classifier allow", d.Permission, d.Reason)
					}
					want.Consecutive = 0
				case unproven:
					wantP, nonint := ask, false
					if !interactive {
						wantP, nonint = deny, true
					}
					if d.Permission != wantP || d.Reason.Source != permission.SourceClassifier || d.Reason.Code != permission.CodeNotProvenSafe ||
						d.Reason.Noninteractive != nonint || d.Fallback || d.RiskRefusal() {
						t.Fatalf("%s fallback=%v %+v, want %s not_proven_safe", d.Permission, d.Fallback, d.Reason, wantP)
					}
					if d.Reason.Verdict == nil || d.Reason.Verdict.Kind != permission.VerdictUnproven || d.Reason.Verdict.Category != riskreview.NotProvenSafe {
						t.Errorf("verdict %+v", d.Reason.Verdict)
					}
					if !interactive && !strings.Contains(d.Reason.Detail, "no interactive owner") {
						t.Errorf("noninteractive detail %q does not say why it is denied", d.Reason.Detail)
					}
				case block:
					if d.Permission != deny || d.Reason.Code != permission.CodeClassifierBlock || !d.RiskRefusal() {
						t.Fatalf("%s %+v, want a counted block", d.Permission, d.Reason)
					}
					want = store.Counter{Consecutive: 2, Total: 2}
				case protected:
					if d.Permission != deny || d.Reason.Source != permission.SourceHardConstraint || d.Reason.Code != permission.CodeProtectedPath || d.RiskRefusal() {
						t.Fatalf("%s %+v, want a protected-path deny", d.Permission, d.Reason)
					}
				case reach:
					wantP := ask
					if !interactive {
						wantP = deny
					}
					if d.Permission != wantP || d.Reason.Source != permission.SourceHardConstraint || d.Reason.Code != permission.CodeUnverifiable || d.RiskRefusal() {
						t.Fatalf("%s %+v, want %s for a possible protected reach", d.Permission, d.Reason, wantP)
					}
				}
				if tc.why != "" && !strings.Contains(d.Reason.Detail, tc.why) {
					t.Errorf("detail %q does not say %q", d.Reason.Detail, tc.why)
				}
				if d.Permission != allow {
					if _, err := d.Authorization(); err == nil {
						t.Error("a decision that is not allow authorizes execution")
					}
				}
				if c.Consecutive != want.Consecutive || c.Total != want.Total {
					t.Errorf("counter %+v, want consecutive %d total %d", c, want.Consecutive, want.Total)
				}
			})
		}
	}
}

// Unproven calls between blocks neither break nor extend a run of blocks:
// the third block still falls back, however many unproven calls came
// between.
func TestAutoModeUnprovenKeepsTheRefusalRun(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	e := autoEngine(t, st, riskreview.New())
	p := policy(t, "v1", permission.ModeAuto)
	steps := []struct {
		cmd  string
		want string
	}{
		{"rm -rf /srv/data", "deny"},
		{"python3 -c 'print(1)'", "ask"}, // a possible protected reach: not counted either
		{"make", "ask"},
		{"rm -rf ~", "deny"}, // a protected path: denied before the review, not counted
		{"rm -rf /opt", "deny"},
		{"npm exec x", "ask"},
		{"rm -rf /srv", "fallback-consecutive"},
	}
	for i, s := range steps {
		d, err := e.Decide(ctx, permission.Request{Trusted: trusted(true), Call: bashCall(s.cmd), Policy: p})
		if err != nil {
			t.Fatal(err)
		}
		if got := kind(d); got != s.want {
			t.Fatalf("step %d (%s): %s, want %s; %+v", i, s.cmd, got, s.want, d.Reason)
		}
	}
	c, _ := e.Counter(ctx, "ses_test", "v1")
	if c.Consecutive != 3 || c.Total != 3 {
		t.Errorf("counter %+v, want the three blocks only", c)
	}
}

// With a model configured (riskreview.WithModel, as the service wires
// Bedrock), calls outside the known-safe set go to the model; proven-safe
// calls and known risks are decided without it.
func TestAutoModeWithModel(t *testing.T) {
	ctx := context.Background()
	var calls atomic.Int32
	var seen []string
	model := permission.ClassifierFunc(func(ctx context.Context, in permission.ReviewInput) (permission.Verdict, error) {
		calls.Add(1)
		seen = append(seen, string(in.Args))
		if strings.Contains(string(in.Args), "make clean") {
			return permission.Verdict{Kind: permission.VerdictBlock, Category: "destructive", Reason: "cleans", Reviewer: "model"}, nil
		}
		return permission.Verdict{Kind: permission.VerdictAllow, Reason: "fine", Reviewer: "model"}, nil
	})
	st := openStore(t)
	e := autoEngine(t, st, riskreview.New(riskreview.WithModel(model)))
	p := policy(t, "v1", permission.ModeAuto)
	cases := []struct {
		cmd       string
		want      lifecycle.Permission
		reviewer  string
		modelCall bool
	}{
		{"git status", allow, riskreview.Name, false},
		{"rm -rf /srv/data", deny, riskreview.Name, false},
		{"make test", allow, "model", true},
		{"make clean", deny, "model", true},
	}
	for _, tc := range cases {
		before := calls.Load()
		d, err := e.Decide(ctx, permission.Request{Trusted: trusted(false), Call: bashCall(tc.cmd), Policy: p})
		if err != nil {
			t.Fatal(err)
		}
		if d.Permission != tc.want || d.Reason.Verdict == nil || d.Reason.Verdict.Reviewer != tc.reviewer {
			t.Errorf("%s: %s %+v, want %s by %s", tc.cmd, d.Permission, d.Reason, tc.want, tc.reviewer)
		}
		if called := calls.Load() > before; called != tc.modelCall {
			t.Errorf("%s: model called = %v, want %v", tc.cmd, called, tc.modelCall)
		}
	}
	if len(seen) != 2 || !strings.Contains(seen[0], "make test") {
		t.Errorf("the model saw %q", seen)
	}
	c, _ := e.Counter(ctx, "ses_test", "v1")
	if c.Total != 2 {
		t.Errorf("counter %+v, want the built-in and the model's block counted", c)
	}
}
