package riskreview_test

import (
	"context"
	"encoding/json"
	"errors"
	"path"
	"strings"
	"testing"

	"github.com/openprogram/lifecycle/shared/permission"
	"github.com/openprogram/lifecycle/shared/permission/bashscan"
	"github.com/openprogram/lifecycle/shared/permission/riskreview"
)

// knownNames is the list of programs the known-safe analysis may allow,
// written out again here so that the fuzzer checks the analysis against
// it rather than against itself.
var knownNames = map[string]bool{}

func init() {
	for _, n := range strings.Fields(`echo printf pwd true false : whoami id uname seq sleep expr basename dirname
		which type test [ tr numfmt exit wait set cat tac head tail wc nl cut paste rev comm diff cmp md5sum sha1sum
		sha224sum sha256sum sha384sum sha512sum shasum b2sum cksum od hexdump strings column expand unexpand fold ls
		du df stat realpath readlink grep egrep fgrep cd pushd sort tree file base64 date uniq jq find rg sed command
		git go mkdir touch`) {
		knownNames[n] = true
	}
}

// FuzzReviewBash: the reviewer never panics, answers a verdict or a
// no-verdict error, and allows only static programs of known programs
// that write nowhere outside the project, the temporary directories and
// the harmless devices.
//
//	go test -run '^$' -fuzz FuzzReviewBash -fuzztime 30s ./shared/permission/riskreview/
func FuzzReviewBash(f *testing.F) {
	for _, seed := range []string{
		"ls -la src && git status", "go test ./...", "find . -name x -delete", "git -c core.pager=id log",
		"cat README.md > /dev/null", "bash -c 'ls; pwd'", "echo x > .git/config", "mkdir -p build && touch build/x",
		"python3 -c 'print(1)'", "cd / && ls", "rg --pre ./x y", "sed -n 1,5p main.go", "f() { ls; }; f",
		"echo $(id)", "LANG=C sort a | uniq -c", "git branch -D main", "cat ../x", "rm -rf ~",
	} {
		f.Add(seed)
	}
	r := riskreview.New()
	f.Fuzz(func(t *testing.T, src string) {
		in := bash(src)
		// JSON replaces invalid UTF-8: judge the command the reviewer saw.
		var a struct{ Command string }
		if err := json.Unmarshal(in.Args, &a); err != nil {
			t.Fatal(err)
		}
		src = a.Command
		v, err := r.Review(context.Background(), in)
		if err != nil {
			var nv *permission.NoVerdictError
			if !errors.As(err, &nv) {
				t.Fatalf("error %v is not a no-verdict", err)
			}
			return
		}
		if !v.Valid() || v.Reason == "" {
			t.Fatalf("verdict %+v", v)
		}
		if v.Kind != permission.VerdictAllow {
			return
		}
		p, err := bashscan.Analyze(src)
		if err != nil || !p.Static() {
			t.Fatalf("allowed a program that is not static: %q", src)
		}
		for i := range p.Commands {
			c := &p.Commands[i]
			if c.Kind != bashscan.KindSimple || c.Script && len(c.Invocations) == 1 {
				continue
			}
			if len(c.Invocations) != 1 || !knownNames[c.BaseName()] {
				t.Fatalf("allowed %q, which runs %q", src, c.Text())
			}
		}
		for _, rd := range p.Redirects {
			t0 := rd.Target.Text
			if !rd.Access.Writes() || bashscan.HarmlessDevice(t0) {
				continue
			}
			if path.IsAbs(t0) && !strings.HasPrefix(path.Clean(t0), "/work/proj/") && !strings.HasPrefix(path.Clean(t0), "/tmp/") && !strings.HasPrefix(path.Clean(t0), "/var/tmp/") {
				t.Fatalf("allowed %q, which writes %s", src, t0)
			}
		}
	})
}
