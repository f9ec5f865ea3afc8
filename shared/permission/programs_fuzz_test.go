package permission_test

import (
	"context"
	"encoding/json"
	"path"
	"strings"
	"testing"
	"unicode"

	"github.com/openprogram/lifecycle/shared/permission"
	"github.com/openprogram/lifecycle/shared/permission/bashscan"
)

// FuzzBashProgramRule: a rule naming only a program never allows more than
// that program. With the single rule Bash(P *), where P is the first
// command's name, an allowed program has no opaque command, no glob command
// name, no inline code and no command line (its own, an executed one, a
// synthetic delete, a script's command) that does not start with P.
//
//	go test -run '^$' -fuzz FuzzBashProgramRule -fuzztime 30s ./shared/permission/
func FuzzBashProgramRule(f *testing.F) {
	for _, seed := range []string{
		`find . -name '*.go' -exec grep -l x {} +`, `find ~ -delete`, `git -c core.pager=cat log`,
		`git -c alias.x='!rm -rf ~' x`, `go test -exec 'rm -rf ~' ./...`, `npm exec rimraf`, `python3 -c 'x'`,
		`tar -xf a --to-command=rm`, `awk '{system("rm")}'`, `sed 's/a/b/e' f`, `echo x | sh`, "sh <<EOF\nrm\nEOF",
		`/usr/bin/r[m] x`, `timeout 5 rm x`, `git status`, `rg foo`, `perl -lne 'print' f`, `less '+!rm' f`,
		`GIT_PAGER=rm git log`, `sudo bash -c 'rm x'`, `git submodule foreach rm`, `xargs rm`,
	} {
		f.Add(seed)
	}
	e, err := permission.NewEngine(permission.Config{})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, src string) {
		prog, err := bashscan.Analyze(src)
		if err != nil || len(prog.Commands) == 0 {
			return
		}
		first := prog.Commands[0]
		if first.Kind != bashscan.KindSimple || len(first.Args) == 0 || !first.Args[0].Static || first.Args[0].Glob {
			return
		}
		name := first.Args[0].Text
		if name == "" || strings.ContainsAny(name, "()*:\\") || strings.ContainsFunc(name, unicode.IsSpace) {
			return
		}
		doc, _ := json.Marshal(map[string]any{"version": "v1", "mode": "default", "allow": []string{"Bash(" + name + " *)"}})
		pol, err := permission.ParsePolicy(doc)
		if err != nil {
			return
		}
		args, _ := json.Marshal(map[string]string{"command": src})
		d, err := e.Decide(context.Background(), permission.Request{
			Trusted: trusted(true), Policy: pol,
			Call: permission.Call{ActionID: "act_fuzz", Tool: "Bash", Args: args},
		})
		if err != nil || d.Permission != allow {
			return
		}
		rule := bashscan.Pattern(append([]rune(name+" "), bashscan.Wild))
		bare := bashscan.Literal(name)
		startsWithP := func(text string) bool {
			lit := bashscan.Literal(text)
			return bashscan.Intersect(rule, lit) || bashscan.Intersect(bare, lit)
		}
		for i := range prog.Commands {
			c := &prog.Commands[i]
			if c.Opaque {
				t.Fatalf("Bash(%s *) allowed %q with an opaque command %q (%s)", name, src, c.Text(), c.OpaqueReason)
			}
			for _, ic := range c.InlineCode {
				if ic.Flag != name {
					t.Fatalf("Bash(%s *) allowed %q, which runs inline code %s", name, src, ic.Flag)
				}
			}
			for k, iv := range c.Invocations {
				if iv.Script || (k > 0 && iv.RunsScript()) || len(iv.Words) == 0 {
					continue
				}
				if iv.Words[0].Glob {
					t.Fatalf("Bash(%s *) allowed %q with a glob command name %q", name, src, iv.Words[0].Text)
				}
				text := bashscan.JoinText(iv.Words)
				if k == 0 {
					if c.Script && len(c.Assigns) == 0 {
						continue // its script's commands are checked on their own
					}
					text = c.Text()
				}
				if c.Kind != bashscan.KindSimple {
					continue
				}
				if !startsWithP(text) && !(k == 0 && path.Base(name) != name) {
					t.Fatalf("Bash(%s *) allowed %q, which runs %q (%s)", name, src, text, iv.Wrapper)
				}
			}
		}
	})
}
