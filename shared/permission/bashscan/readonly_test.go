package bashscan_test

import (
	"testing"

	"github.com/openprogram/lifecycle/shared/permission/bashscan"
)

// Options that run a program, a pager or write a file are not read-only
// (plan mode), even on a read-only program (Codex CLI's is_safe_command
// tests list the same ones).
func TestReadOnlyRunningOptions(t *testing.T) {
	cases := []struct {
		src  string
		want bool
	}{
		{`rg TODO src`, true},
		{`rg --pre ./x TODO`, false},
		{`rg --pre=./x TODO`, false},
		{`rg --hostname-bin ./x TODO`, false},
		{`rg -z TODO`, false},
		{`rg -iz TODO`, false},
		{`rg --search-zip TODO`, false},
		{`git -c core.pager=id log`, false},
		{`git -ccore.pager=id log`, false},
		{`git --config-env=core.pager=X log`, false},
		{`git -p log`, false},
		{`git --paginate log`, false},
		{`git -C sub log --oneline`, true},
		{`git diff --ext-diff`, false},
		{`git log --output=x`, false},
		{`git cat-file --filters HEAD:x`, false},
		{`git grep -Oless foo`, false},
		{`git grep --open-files-in-pager foo`, false},
		{`sort --compress-program=./x big`, false},
		{`tree -o out.txt`, false},
		{`file -C -m magic`, false},
		{`tree -L 2`, true},
	}
	for _, tc := range cases {
		t.Run(tc.src, func(t *testing.T) {
			p, err := bashscan.Analyze(tc.src)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.ReadOnly(); got != tc.want {
				t.Errorf("ReadOnly(%q) = %v, want %v", tc.src, got, tc.want)
			}
		})
	}
}
