package permission_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/permission"
	"github.com/openprogram/lifecycle/shared/permission/bashscan"
)

// FuzzDecideBash decides arbitrary Bash commands under P3 of the corpus
// (allow: Bash; deny: Bash(rm *), Bash(curl *), Bash(sudo *)) and checks
// what must hold whatever the engine's analysis does:
//
//   - Decide never panics and fails only with *InvalidCallError;
//   - the same call decided twice gets the same permission, code and rule;
//   - an allow comes from the allow rule (P3 has no grant and mode default);
//   - nothing is allowed that the analysis refuses (too large, unparseable),
//     that has an opaque command, whose command or wrapped command name is
//     computed or a glob that may expand to rm, curl or sudo, or that runs
//     rm, curl or sudo itself or through a wrapper.
//
// The seeds are the commands of the corpus.
//
//	go test -run '^$' -fuzz '^FuzzDecideBash$' -fuzztime 30s ./shared/permission/
func FuzzDecideBash(f *testing.F) {
	w := newCorpusWorld(f)
	eng := newCorpusEngine(f, w)
	pol := corpusPolicies()[2]
	if pol.name != "P3" {
		f.Fatalf("policy %s, want P3", pol.name)
	}
	p := pol.parse(f)
	for _, e := range loadCorpus(f) {
		f.Add(w.expand(e.Command))
	}
	f.Add("")
	f.Add("\xff\xfe")
	var seq atomic.Int64
	decide := func(cmd string) (permission.Decision, error) {
		args, err := json.Marshal(map[string]string{"command": cmd})
		if err != nil {
			return permission.Decision{}, err
		}
		return eng.Decide(context.Background(), permission.Request{
			Trusted: permission.Trusted{SessionID: "ses_fuzz", WorkingDir: w.ws, ProjectRoot: w.ws, HomeDir: w.home, Interactive: true},
			Call:    permission.Call{ActionID: ids.ActionID(fmt.Sprintf("act_fuzz_%d", seq.Add(1))), Tool: "Bash", Args: args},
			Policy:  p,
		})
	}
	f.Fuzz(func(t *testing.T, cmd string) {
		// JSON carries invalid UTF-8 as U+FFFD: judge what the engine sees.
		cmd = strings.ToValidUTF8(cmd, "\uFFFD")
		d, err := decide(cmd)
		if err != nil {
			var ic *permission.InvalidCallError
			if !errors.As(err, &ic) {
				t.Fatalf("Decide(%q) failed with %T: %v", cmd, err, err)
			}
			return
		}
		again, err := decide(cmd)
		if err != nil || again.Permission != d.Permission || again.Reason.Code != d.Reason.Code || again.Reason.Rule != d.Reason.Rule {
			t.Fatalf("Decide(%q) is not deterministic: %s %s %q, then %s %s %q (%v)", cmd,
				d.Permission, d.Reason.Code, d.Reason.Rule, again.Permission, again.Reason.Code, again.Reason.Rule, err)
		}
		if d.Permission != lifecycle.PermissionAllow {
			return
		}
		if d.Reason.Source != permission.SourceAllowRule {
			t.Fatalf("Decide(%q) allowed by %s, want the allow rule", cmd, d.Reason.Source)
		}
		prog, err := bashscan.Analyze(cmd)
		if err != nil {
			t.Fatalf("Decide(%q) allowed input the analysis refuses: %v", cmd, err)
		}
		if c, ok := prog.Opaque(); ok {
			t.Fatalf("Decide(%q) allowed the opaque command %q (%s)", cmd, c.Text(), c.OpaqueReason)
		}
		for i := range prog.Commands {
			c := &prog.Commands[i]
			if c.Kind == bashscan.KindSimple && len(c.Args) > 0 && fuzzNameMayBeDenied(c.Args[0]) {
				t.Fatalf("Decide(%q) allowed %q, whose name %q may be a denied program", cmd, c.Text(), c.Args[0].Text)
			}
			for _, iv := range c.Invocations {
				if iv.Script || len(iv.Words) == 0 {
					continue
				}
				if w0 := iv.Words[0]; fuzzNameMayBeDenied(w0) {
					t.Fatalf("Decide(%q) allowed %q, which runs %q (via %q), maybe a denied program", cmd, c.Text(), w0.Text, iv.Wrapper)
				}
				switch iv.Name() {
				case "rm", "curl", "sudo":
					t.Fatalf("Decide(%q) allowed %q, which runs %s (via %q) past the deny rule", cmd, c.Text(), iv.Name(), iv.Wrapper)
				}
			}
		}
	})
}

// fuzzNameMayBeDenied: the command name w may run rm, curl or sudo
// although it is not spelled so: it is computed, or a glob whose last path
// element may match one of them (braces are taken to match anything).
func fuzzNameMayBeDenied(w bashscan.Word) bool {
	if !w.Static {
		return true
	}
	if !w.Glob {
		return false
	}
	base := w.Text[strings.LastIndex(w.Text, "/")+1:]
	if base == "" || strings.ContainsAny(base, "{}") {
		return true
	}
	for _, name := range []string{"rm", "curl", "sudo"} {
		// A malformed pattern ("x[") is no glob to the shell: literal.
		if ok, err := path.Match(base, name); ok || err != nil && base == name {
			return true
		}
	}
	return false
}
