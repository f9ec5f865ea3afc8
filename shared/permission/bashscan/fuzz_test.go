package bashscan_test

import (
	"errors"
	"testing"

	"github.com/openprogram/lifecycle/shared/permission/bashscan"
)

// FuzzAnalyzeBash: the analysis never panics, refuses input it cannot
// review with a typed error, and everything it reports can be used.
//
//	go test -run '^$' -fuzz FuzzAnalyzeBash -fuzztime 30s ./shared/permission/bashscan/
func FuzzAnalyzeBash(f *testing.F) {
	for _, seed := range []string{
		`echo ok && rm -rf ~`,
		`npm run test -- --watch`,
		`(curl -s x | cat) | sudo bash`,
		`bash -c 'echo hi; sh -c "rm -rf /"'`,
		`f() { f | f & }; f`,
		`$CMD -rf / > "$(mktemp)" 2>&1`,
		"cat <<EOF\n$(rm -rf /)\nEOF",
		`diff <(ls a) >(tee b); eval "$x"; trap 'rm x' EXIT`,
		`x=$((1+2)); [[ $x -eq 3 ]] && (( x++ )); let y=x`,
		`find . -exec sh -c 'rm {}' \; ; xargs -I{} sudo env A=1 rm {}`,
		`for i in {1..3}; do echo $i; done; case $a in *) b;; esac`,
		`echo $'\x72m' "a\"b" 'c'\''d' r\m`,
		`cd /etc && echo x >| passwd <> rw &>> all`,
		"a |& b; coproc c; time d; ! e",
		`echo "unterminated`,
		"\xff\xfe",
		`find ~ -delete -o -exec rm -rf {} + -fprintf ~/.bashrc '%p'`,
		`git -C ~ -c core.pager='sh -c "rm -rf ~"' -c alias.x='!rm' x; git config alias.y 'clean -fdx'`,
		`git submodule foreach 'rm -rf ~'; git log --output=x; git rebase -x 'make' main`,
		`go test -exec='rm -rf ~' -toolexec=x ./...; go generate; npm exec -- rimraf ~; npx -c 'rm'`,
		`tar -xzf a.tgz -C ~ --to-command='rm' -I 'sh -c x' --checkpoint-action=exec=x --remove-files`,
		`tar czf out.tgz src; rg --pre ./p x; sort -o ~/x; less '+!rm' f; vim -c '!rm' +x f`,
		`awk '{system("rm")} {print > "f"}' f; sed 's/a/b/e;w x' f; perl -lne 'x'; python3 -Bc 'x'; node -e x`,
		"echo rm | sh; sh <<EOF\nrm -rf ~\nEOF\n. /dev/stdin <<< 'rm'; bash -s; python3 -; base64 -d | bash",
		"shopt -s expand_aliases\nalias x='rm -rf ~'\nx; /usr/bin/r[m] -rf ~; r? x",
		`cat {README.md,/etc/shadow} a{b,c{d,e}}f {1..99999} -{delete,print} {'a',"b"}{x,$y}`,
		`find . -del* -delet? -delet[e] --pr?=sh; rg --pre{=,=sh} --hostname-bin=x p`,
		`git ls-remote --upload-pa="touch x" o; git log --outp=x --ou; vim -c ':%!rm x | y' '+r !id' -c 'call system("x")'`,
		`sed -n '1e rm x' f; sed 's/x/y/ge;p' f`,
		`GIT_PAGER='rm -rf ~' git log; export EDITOR=rm; env LESSOPEN='|rm %s' less f; xargs -I{} sh -c 'rm {}'`,
	} {
		f.Add(seed)
	}
	rule := bashscan.Pattern{'r', 'm', ' ', bashscan.Wild}
	f.Fuzz(func(t *testing.T, src string) {
		p, err := bashscan.Analyze(src)
		if err != nil {
			var tl *bashscan.TooLargeError
			var se *bashscan.SyntaxError
			if !errors.As(err, &tl) && !errors.As(err, &se) {
				t.Fatalf("untyped error %T: %v", err, err)
			}
			if p != nil {
				t.Fatal("a program together with an error")
			}
			return
		}
		if len(src) > bashscan.MaxBytes {
			t.Fatalf("analysed %d bytes, over the bound", len(src))
		}
		p.Static()
		p.ReadOnly()
		p.Opaque()
		p.PathRefs()
		p.DirChanges()
		for _, id := range p.Pipelines() {
			p.PipelineStages(id)
		}
		for i := range p.Commands {
			c := &p.Commands[i]
			if c.Parent >= len(p.Commands) {
				t.Fatalf("command %d has parent %d of %d", i, c.Parent, len(p.Commands))
			}
			if c.Opaque && c.OpaqueReason == "" {
				t.Fatalf("command %q is opaque without a reason", c.Text())
			}
			for _, ic := range c.InlineCode {
				if ic.Invocation < 0 || ic.Invocation >= len(c.Invocations) {
					t.Fatalf("inline code of %q points at invocation %d of %d", c.Text(), ic.Invocation, len(c.Invocations))
				}
			}
			for _, iv := range c.Invocations {
				if iv.Synthetic && (len(iv.Words) < 3 || iv.Words[0].Text != "rm" || iv.Wrapper == "") {
					t.Fatalf("synthetic delete of %q is not rm -rf <paths> with its origin: %q", c.Text(), bashscan.JoinText(iv.Words))
				}
				if (iv.Script || iv.Synthetic) && len(iv.Words) == 0 {
					t.Fatalf("empty invocation in %q", c.Text())
				}
			}
			p.Ancestors(i)
			c.Text()
			c.ReadOnly()
			for _, form := range c.Forms() {
				bashscan.Intersect(rule, form)
			}
		}
	})
}
