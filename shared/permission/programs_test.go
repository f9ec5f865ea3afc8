package permission_test

import (
	"strings"
	"testing"

	"github.com/openprogram/lifecycle/shared/permission"
)

// Issue 21, class 3: allowing a program does not allow everything it can
// launch, write or delete. Each executed command line needs its own allow
// rule, a delete is judged as rm, writes stay in the project, and inline
// code needs a rule naming its flag.
func TestProgramModelDecisions(t *testing.T) {
	narrow := []string{"allow: Bash(git *)", "allow: Bash(find *)", "allow: Bash(cat *)", "allow: Bash(python3 *)",
		"allow: Bash(npm *)", "allow: Bash(go *)", "allow: Bash(tar *)", "allow: Bash(rg *)", "allow: Bash(awk *)",
		"allow: Bash(sed *)", "allow: Bash(perl *)", "allow: Bash(node *)", "allow: Bash(less *)", "allow: Bash(vim *)",
		"allow: Bash(sort *)", "allow: Bash(echo *)", "allow: Bash(sh *)", "allow: Bash(bash *)", "allow: Bash(base64 *)"}
	with := func(extra ...string) []string { return append(append([]string(nil), narrow...), extra...) }
	wholeDeny := []string{"allow: Bash", "deny: Bash(rm *)", "deny: Bash(curl *)", "deny: Bash(sudo *)"}
	cases := []decideCase{
		// The class 3 examples under the narrow allow list: none is allowed.
		{name: "find ~ -delete", rules: narrow, call: bashCall("find ~ -delete"), want: ask, source: permission.SourceMode},
		{name: "find ~ -exec rm -rf {} +", rules: narrow, call: bashCall("find ~ -exec rm -rf {} +"), want: ask, source: permission.SourceMode},
		{name: "find -fprintf ~/.bashrc", rules: narrow, call: bashCall("find . -fprintf ~/.bashrc '%p'"), want: ask, source: permission.SourceMode},
		{name: "git -c core.pager", rules: narrow, call: bashCall(`git -c core.pager='sh -c "touch /tmp/x"' log`), want: ask, source: permission.SourceMode},
		{name: "git -c alias with !", rules: narrow, call: bashCall(`git -c alias.x='!rm -rf ~' x`), want: ask, source: permission.SourceMode},
		{name: "git config alias", rules: narrow, call: bashCall(`git config alias.x '!touch /tmp/x'`), want: ask, source: permission.SourceMode},
		{name: "git submodule foreach", rules: narrow, call: bashCall(`git submodule foreach 'touch /tmp/x'`), want: ask, source: permission.SourceMode},
		{name: "git -C ~ clean -fdx", rules: narrow, call: bashCall("git -C ~ clean -fdx"), want: ask, source: permission.SourceMode},
		{name: "git log --output ~/.bashrc", rules: narrow, call: bashCall("git log --output ~/.bashrc"), want: ask, source: permission.SourceMode},
		{name: "go test -exec", rules: narrow, call: bashCall("go test -exec 'rm -rf ~' ./..."), want: ask, source: permission.SourceMode},
		{name: "npm exec", rules: narrow, call: bashCall("npm exec rimraf ~"), want: ask, source: permission.SourceMode},
		{name: "python3 -c", rules: narrow, call: bashCall(`python3 -c 'import shutil; shutil.rmtree("/tmp/x")'`), want: ask, source: permission.SourceMode},
		{name: "tar --to-command", rules: narrow, call: bashCall("tar -xf a.tar -C build --to-command='touch /tmp/x'"), want: ask, source: permission.SourceMode},
		{name: "tar -x -C ~", rules: narrow, call: bashCall("tar -xzf a.tgz -C ~"), want: ask, source: permission.SourceMode},
		{name: "rg --pre", rules: narrow, call: bashCall("rg --pre ./pre foo"), want: ask, source: permission.SourceMode},
		{name: "awk system()", rules: narrow, call: bashCall(`awk 'BEGIN{system("touch /tmp/x")}'`), want: ask, source: permission.SourceMode},
		{name: "sed e flag", rules: narrow, call: bashCall(`sed 's/.*/touch \/tmp\/x/e' f`), want: ask, source: permission.SourceAnalysis},
		{name: "deny rm: sed e runs a computed command", rules: wholeDeny, call: bashCall(`echo x | sed 's/x/rm -rf ~/e'`), want: ask, source: permission.SourceDenyRule},
		{name: "perl -e", rules: narrow, call: bashCall(`perl -e 'unlink "x"'`), want: ask, source: permission.SourceMode},
		{name: "node -e", rules: narrow, call: bashCall(`node -e 'require("fs").rmSync("x")'`), want: ask, source: permission.SourceMode},
		{name: "less +!cmd", rules: narrow, call: bashCall(`less '+!touch /tmp/x' f`), want: ask, source: permission.SourceMode},
		{name: "vim -c", rules: narrow, call: bashCall(`vim -c '!touch /tmp/x' f`), want: ask, source: permission.SourceMode},
		{name: "sort -o outside the project", rules: narrow, call: bashCall("sort -o ~/.bashrc f"), want: ask, source: permission.SourceMode},
		{name: "GIT_PAGER prefix", rules: narrow, call: bashCall("GIT_PAGER='touch /tmp/x' git log"), want: ask, source: permission.SourceMode},

		// The inner command's own rule allows it.
		{name: "find -exec grep with find and grep allowed", rules: with("allow: Bash(grep *)"),
			call: bashCall(`find . -name '*.go' -exec grep -l TODO {} +`), want: allow, source: permission.SourceAllowRule, rule: "Bash(find *) + Bash(grep *)"},
		{name: "find -exec grep with find alone", rules: narrow, call: bashCall(`find . -name '*.go' -exec grep -l TODO {} +`), want: ask, source: permission.SourceMode},
		{name: "find -delete with find and rm allowed", rules: with("allow: Bash(rm *)"),
			call: bashCall("find build -name '*.o' -delete"), want: allow, rule: "Bash(find *) + Bash(rm *)"},
		{name: "find ~ -delete with rm allowed still leaves the project", rules: with("allow: Bash(rm *)"),
			call: bashCall("find ~ -delete"), want: ask, source: permission.SourceMode},
		{name: "find ~ -exec rm with rm allowed still leaves the project", rules: with("allow: Bash(rm *)"),
			call: bashCall("find ~ -exec rm {} +"), want: ask, source: permission.SourceMode},
		{name: "find -exec rm inside the project", rules: with("allow: Bash(rm *)"),
			call: bashCall(`find build -name '*.o' -exec rm {} \;`), want: allow},
		{name: "git -c core.pager with the pager allowed", rules: with("allow: Bash(cat *)"),
			call: bashCall("git -c core.pager=cat log"), want: allow},
		{name: "go test -exec with its runner allowed", rules: with("allow: Bash(./bin/runner *)"),
			call: bashCall("go test -exec ./bin/runner ./..."), want: allow},
		{name: "git clean -fdx with rm allowed", rules: with("allow: Bash(rm *)"), call: bashCall("git -C build clean -fdx"), want: allow},
		{name: "npm exec with the tool allowed", rules: with("allow: Bash(eslint *)"), call: bashCall("npm exec eslint ."), want: allow},
		{name: "python3 -c with an explicit rule", rules: with("allow: Bash(python3 -c *)"), call: bashCall(`python3 -c 'print(1)'`), want: allow, rule: "Bash(python3 -c *)"},
		{name: "perl -lne with an explicit rule", rules: with("allow: Bash(perl -lne *)"), call: bashCall(`perl -lne 'print' f`), want: allow},
		{name: "awk with system() and a rule spelling it out", rules: with(`allow: Bash(awk {system("make")} *)`),
			call: bashCall(`awk '{system("make")}' f`), want: allow},
		{name: "a wrapper's command needs its own rule", rules: []string{"allow: Bash(timeout *)"}, call: bashCall("timeout 10 rm -rf build"), want: ask},
		{name: "a wrapper's command with its rule", rules: []string{"allow: Bash(timeout *)", "allow: Bash(make *)"}, call: bashCall("timeout 10 make test"), want: allow},

		// Plain uses stay allowed by a prefix rule.
		{name: "git status", rules: narrow, call: bashCall("git status"), want: allow},
		{name: "git log --oneline", rules: narrow, call: bashCall("git log --oneline -n 20"), want: allow},
		{name: "git diff", rules: narrow, call: bashCall("git diff --stat HEAD~1"), want: allow},
		{name: "git commit", rules: narrow, call: bashCall("git -c user.name=bot commit -am 'fix: x'"), want: allow},
		{name: "find -name", rules: narrow, call: bashCall("find . -name '*.go'"), want: allow},
		{name: "go test", rules: narrow, call: bashCall("go test ./..."), want: allow},
		{name: "go build -o inside", rules: narrow, call: bashCall("go build -o bin/x ./cmd/x"), want: allow},
		{name: "npm test", rules: narrow, call: bashCall("npm test"), want: allow},
		{name: "npm run build", rules: narrow, call: bashCall("npm run build"), want: allow},
		{name: "tar -czf inside the project", rules: narrow, call: bashCall("tar -czf out.tgz src"), want: allow},
		{name: "rg foo", rules: narrow, call: bashCall("rg foo"), want: allow},
		{name: "python3 script", rules: narrow, call: bashCall("python3 tools/gen.py"), want: allow},
		{name: "python3 -m pytest", rules: narrow, call: bashCall("python3 -m pytest -q"), want: allow},
		{name: "awk plain", rules: narrow, call: bashCall(`awk -F: '{print $1}' f`), want: allow},
		{name: "sed -i inside", rules: narrow, call: bashCall(`sed -i 's/a/b/g' main.go`), want: allow},
		{name: "bash script file", rules: narrow, call: bashCall("bash ./build.sh"), want: allow},

		// A deny of rm catches every delete; deny rules see every new invocation.
		{name: "deny rm catches find -delete", rules: wholeDeny, call: bashCall("find ~ -delete"), want: deny, source: permission.SourceDenyRule, rule: "Bash(rm *)"},
		{name: "deny rm catches find -exec rm", rules: wholeDeny, call: bashCall("find ~ -exec rm -rf {} +"), want: deny, source: permission.SourceDenyRule},
		{name: "deny rm catches git clean", rules: wholeDeny, call: bashCall("git -C ~ clean -fdx"), want: deny, source: permission.SourceDenyRule},
		{name: "deny rm catches tar --remove-files", rules: wholeDeny, call: bashCall("tar -czf a.tgz --remove-files src"), want: deny, source: permission.SourceDenyRule},
		{name: "deny rm -rf catches find -delete", rules: []string{"allow: Bash", "deny: Bash(rm -rf *)"}, call: bashCall("find ~ -delete"), want: deny},
		{name: "deny rm -r catches git clean", rules: []string{"allow: Bash", "deny: Bash(rm -r *)"}, call: bashCall("git clean -fdx"), want: deny},
		{name: "deny rm catches git -c alias", rules: wholeDeny, call: bashCall(`git -c alias.x='!rm -rf ~' x`), want: deny},
		{name: "deny rm catches git -c core.pager", rules: wholeDeny, call: bashCall(`git -c core.pager='sh -c "rm -rf ~"' log`), want: deny},
		{name: "deny rm catches git config alias", rules: wholeDeny, call: bashCall(`git config alias.x '!rm -rf ~'`), want: deny},
		{name: "deny rm catches git submodule foreach", rules: wholeDeny, call: bashCall(`git submodule foreach 'rm -rf ~'`), want: deny},
		{name: "deny rm catches go test -exec", rules: wholeDeny, call: bashCall(`go test -exec 'rm -rf ~' ./...`), want: deny},
		{name: "deny rm catches tar --to-command", rules: wholeDeny, call: bashCall(`tar -xf a --to-command='rm -rf ~'`), want: deny},
		{name: "deny rm catches GIT_PAGER", rules: wholeDeny, call: bashCall(`GIT_PAGER='rm -rf ~' git log`), want: deny},
		{name: "deny rm catches an alias value", rules: wholeDeny, call: bashCall(`alias x='rm -rf ~'`), want: deny},
		{name: "deny curl catches npm exec", rules: wholeDeny, call: bashCall(`npm exec -- curl -s x`), want: deny},
		{name: "whole-tool allow keeps plain commands", rules: wholeDeny, call: bashCall("git status && find . -name '*.go'"), want: allow},
		{name: "whole-tool allow covers inline code", rules: wholeDeny, call: bashCall(`python3 -c 'print(1)'`), want: allow},
		{name: "whole-tool allow covers find -exec of an allowed command", rules: wholeDeny, call: bashCall(`find . -exec grep -l x {} +`), want: allow},

		// Braces are expanded as Bash does; an option word with pattern
		// characters may expand to any option (a file named -delete).
		{name: "brace-spelled -delete meets the deny of rm", rules: wholeDeny, call: bashCall("find . -{delete,print}"), want: deny, source: permission.SourceDenyRule},
		{name: "brace-spelled -delete is no plain find", rules: narrow, call: bashCall("find build -{delete,print}"), want: ask, source: permission.SourceMode},
		{name: "glob-spelled -delete is opaque", rules: narrow, call: bashCall("find . -delet?"), want: ask, source: permission.SourceAnalysis},
		{name: "bracket-spelled -delete may match the deny of rm", rules: wholeDeny, call: bashCall("find . -delet[e]"), want: ask, source: permission.SourceDenyRule},
		{name: "a glob after = in a long option is its value", rules: narrow, call: bashCall("rg --glob=*.go TODO"), want: allow},
		{name: "a brace path meets a Read deny", rules: []string{"allow: Bash(cat *)", "deny: Read(/etc/**)"}, call: bashCall("cat {README.md,/etc/shadow}"), want: deny, source: permission.SourceDenyRule},
		{name: "a brace path inside the project", rules: []string{"allow: Bash(cat *)", "deny: Read(/etc/**)"}, call: bashCall("cat {README,NOTES}.md"), want: allow},
	}
	e := unprotectedEngine(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := runDecide(t, e, tc, true)
			if d.Permission != tc.want {
				t.Fatalf("%s: permission %s, want %s; reason %+v", tc.call.Args, d.Permission, tc.want, d.Reason)
			}
			if tc.source != "" && d.Reason.Source != tc.source {
				t.Errorf("source %s, want %s; reason %+v", d.Reason.Source, tc.source, d.Reason)
			}
			if tc.rule != "" && d.Reason.Rule != tc.rule {
				t.Errorf("rule %q, want %q", d.Reason.Rule, tc.rule)
			}
		})
	}
}

// unprotectedEngine protects nothing (no state directory, no credential
// stores): the program model's and the second shell's answers to the rules
// are tested on their own here, where ~/.ssh or an interpreter's possible
// reach of the state directory would otherwise meet the hard constraint
// first. TestProgramModelUnderProtection shows the merged answers.
func unprotectedEngine(t testing.TB) *permission.Engine {
	t.Helper()
	e, err := permission.NewEngine(permission.Config{CredentialStores: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// With the default protection the same commands meet the protected paths
// first: a walk of ~ is a definite touch of ~/.ssh, inline code (even with
// a rule naming its flag) and a shell reading stdin are possible reaches,
// which only a person approves.
func TestProgramModelUnderProtection(t *testing.T) {
	narrow := []string{"allow: Bash(find *)", "allow: Bash(git *)", "allow: Bash(python3 *)", "allow: Bash(python3 -c *)",
		"allow: Bash(echo *)", "allow: Bash(sh *)", "allow: Bash(rm *)"}
	denyRm := []string{"allow: Bash", "deny: Bash(rm *)"}
	cases := []decideCase{
		{name: "find ~ -delete with rm allowed", rules: narrow, call: bashCall("find ~ -delete"), want: deny, source: permission.SourceHardConstraint, code: permission.CodeProtectedPath},
		{name: "git -C ~ clean -fdx", rules: narrow, call: bashCall("git -C ~ clean -fdx"), want: deny, source: permission.SourceHardConstraint, code: permission.CodeProtectedPath},
		{name: "find ~ -delete under a deny of rm", rules: denyRm, call: bashCall("find ~ -delete"), want: deny, source: permission.SourceHardConstraint, code: permission.CodeProtectedPath},
		{name: "python3 -c with a rule naming -c", rules: narrow, call: bashCall(`python3 -c 'print(1)'`), want: ask, source: permission.SourceHardConstraint, code: permission.CodeUnverifiable},
		{name: "python3 script file", rules: narrow, call: bashCall("python3 tools/gen.py"), want: ask, source: permission.SourceHardConstraint, code: permission.CodeUnverifiable},
		{name: "a shell reading a pipe", rules: narrow, call: bashCall("echo ls | sh"), want: ask, source: permission.SourceHardConstraint, code: permission.CodeUnverifiable},
		{name: "a shell reading a pipe under a deny of rm", rules: denyRm, call: bashCall("echo rm -rf /srv/data | sh"), want: ask, source: permission.SourceHardConstraint, code: permission.CodeUnverifiable},
		{name: "a here-document's rm -rf ~", rules: denyRm, call: bashCall("sh <<EOF\nrm -rf ~\nEOF"), want: deny, source: permission.SourceHardConstraint, code: permission.CodeProtectedPath},
		{name: "a here-document's rm elsewhere meets the deny rule", rules: denyRm, call: bashCall("sh <<EOF\nrm -rf /srv/data\nEOF"), want: deny, source: permission.SourceDenyRule, code: permission.CodeDenyRule},
		{name: "find in the project with -delete and rm allowed", rules: narrow, call: bashCall("find build -name '*.o' -delete"), want: allow, source: permission.SourceAllowRule},
	}
	e := newEngine(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := runDecide(t, e, tc, true)
			if d.Permission != tc.want || d.Reason.Source != tc.source || tc.code != "" && d.Reason.Code != tc.code {
				t.Fatalf("%s: got %s %s/%s (%s), want %s %s/%s", tc.call.Args, d.Permission, d.Reason.Source, d.Reason.Code, d.Reason.Detail, tc.want, tc.source, tc.code)
			}
		})
	}
}

// The reason for inline code tells the user which rule would allow it.
func TestInlineCodeReasonNamesTheRule(t *testing.T) {
	e := unprotectedEngine(t)
	d := runDecide(t, e, decideCase{rules: []string{"allow: Bash(python3 *)"}, call: bashCall(`python3 -c 'print(1)'`)}, true)
	if d.Permission != ask || !strings.Contains(d.Reason.Detail, "Bash(python3 -c *)") {
		t.Fatalf("want an ask naming Bash(python3 -c *), got %s %+v", d.Permission, d.Reason)
	}
}

// Issue 21, class 4: commands that only exist when a second shell reads
// them are opaque: never allowed by a rule for another program, and a
// possible match of every Bash deny (denied noninteractive, asked with the
// deny rule named interactive).
func TestSecondShellDecisions(t *testing.T) {
	narrow := []string{"allow: Bash(echo *)", "allow: Bash(sh *)", "allow: Bash(bash *)", "allow: Bash(base64 *)",
		"allow: Bash(cat *)", "allow: Bash(python3 *)", "allow: Bash(node *)", "allow: Bash(shopt *)", "allow: Bash(alias *)", "allow: Bash(x *)", "allow: Bash(.)", "allow: Bash(. *)", "allow: Bash(source *)"}
	denyRm := []string{"allow: Bash", "deny: Bash(rm *)"}
	srcs := []string{
		"echo rm -rf ~ | sh",
		"sh <<EOF\nrm -rf ~\nEOF",
		". /dev/stdin <<EOF\nrm -rf ~\nEOF",
		"source /dev/stdin <<< 'rm -rf ~'",
		"echo cm0gLXJmIH4K | base64 -d | sh",
		"bash -s <<< 'rm -rf ~'",
		"cat x | bash -",
		"bash /dev/stdin < x",
		"source <(echo rm -rf ~)",
		"bash <(echo rm -rf ~)",
		"python3 - <<EOF\nimport shutil\nEOF",
		"echo 'import os' | python3",
		"echo 'x' | node",
		"shopt -s expand_aliases\nalias x='echo hi'\nx",
	}
	e := unprotectedEngine(t)
	for _, src := range srcs {
		t.Run(src, func(t *testing.T) {
			d := runDecide(t, e, decideCase{rules: narrow, call: bashCall(src)}, true)
			if d.Permission == allow {
				t.Fatalf("allowed by %s: %+v", d.Reason.Rule, d.Reason)
			}
			// A literal here-document's commands meet the deny rule
			// definitely (deny); otherwise the possible match asks.
			d = runDecide(t, e, decideCase{rules: denyRm, call: bashCall(src)}, true)
			if d.Permission == allow || d.Reason.Source != permission.SourceDenyRule || d.Reason.Rule != "Bash(rm *)" {
				t.Fatalf("interactive: want a decision naming the deny rule, got %s %+v", d.Permission, d.Reason)
			}
			d = runDecide(t, e, decideCase{rules: denyRm, call: bashCall(src)}, false)
			if d.Permission != deny {
				t.Fatalf("noninteractive: want deny, got %s %+v", d.Permission, d.Reason)
			}
		})
	}
}

// The here-document a shell reads is parsed: its commands meet the deny
// rules definitely.
func TestHereDocumentScriptIsDenied(t *testing.T) {
	e := unprotectedEngine(t)
	for _, src := range []string{"sh <<EOF\nrm -rf ~\nEOF", "bash <<'EOF'\necho ok\nrm -rf ~\nEOF", ". /dev/stdin <<EOF\nrm -rf ~\nEOF", "bash <<< 'rm -rf ~'"} {
		t.Run(src, func(t *testing.T) {
			d := runDecide(t, e, decideCase{rules: []string{"allow: Bash", "deny: Bash(rm *)"}, call: bashCall(src)}, true)
			if d.Permission != deny || d.Reason.Code != permission.CodeDenyRule {
				t.Fatalf("want a definite deny, got %s %+v", d.Permission, d.Reason)
			}
		})
	}
}

// A recursive write or delete above a denied path is a possible match of
// the path rule; one at the denied path is a definite match.
func TestRecursiveWritesMeetPathRules(t *testing.T) {
	e := unprotectedEngine(t)
	cases := []decideCase{
		{name: "rm -rf ~ may delete ~/.ssh", rules: []string{"allow: Bash", "deny: Edit(~/.ssh/**)"}, call: bashCall("rm -rf ~"), want: ask, source: permission.SourceDenyRule, code: permission.CodeUnverifiable},
		{name: "find ~ -delete may delete ~/.ssh", rules: []string{"allow: Bash", "deny: Edit(~/.ssh/**)"}, call: bashCall("find ~ -delete"), want: ask, source: permission.SourceDenyRule},
		{name: "tar -x into ~/.ssh", rules: []string{"allow: Bash", "deny: Edit(~/.ssh/**)"}, call: bashCall("tar -xf keys.tar -C ~/.ssh"), want: deny, source: permission.SourceDenyRule, code: permission.CodeDenyRule},
		{name: "git clean elsewhere does not meet the rule", rules: []string{"allow: Bash", "deny: Edit(~/.ssh/**)"}, call: bashCall("git -C build clean -fdx"), want: allow},
		{name: "rm -f of a file does not meet the rule (it is only outside the project)", rules: []string{"allow: Bash", "deny: Edit(~/.ssh/**)"}, call: bashCall("rm -f ~/notes.txt"), want: ask, source: permission.SourceMode},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := runDecide(t, e, tc, true)
			if d.Permission != tc.want {
				t.Fatalf("permission %s, want %s; reason %+v", d.Permission, tc.want, d.Reason)
			}
			if tc.source != "" && d.Reason.Source != tc.source {
				t.Errorf("source %s, want %s; reason %+v", d.Reason.Source, tc.source, d.Reason)
			}
			if tc.code != "" && d.Reason.Code != tc.code {
				t.Errorf("code %s, want %s", d.Reason.Code, tc.code)
			}
		})
	}
}

// A glob in a command word is a possible match of every command it could
// expand to, and never allowed by a pattern rule.
func TestGlobCommandNameDecisions(t *testing.T) {
	e := newEngine(t)
	// Paths outside the home directory: ~ would be a possible reach of the
	// credential stores first (a hard constraint), whatever the command name.
	for _, src := range []string{"/usr/bin/r[m] -rf /srv/data", "r? -rf /srv/data", "/bin/r* -rf /srv/data", "find . -exec /bin/r? {} +"} {
		t.Run(src, func(t *testing.T) {
			d := runDecide(t, e, decideCase{rules: []string{"allow: Bash", "deny: Bash(rm *)"}, call: bashCall(src)}, false)
			if d.Permission != deny || d.Reason.Rule != "Bash(rm *)" {
				t.Fatalf("want deny by Bash(rm *), got %s %+v", d.Permission, d.Reason)
			}
			d = runDecide(t, e, decideCase{rules: []string{"allow: Bash(/usr/bin/*)", "allow: Bash(r*)", "allow: Bash(/bin/*)", "allow: Bash(find *)"}, call: bashCall(src)}, true)
			if d.Permission == allow {
				t.Fatalf("a glob command name was allowed by %s", d.Reason.Rule)
			}
		})
	}
}
