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
			p.Ancestors(i)
			c.Text()
			c.ReadOnly()
			for _, form := range c.Forms() {
				bashscan.Intersect(rule, form)
			}
		}
	})
}
