package bashscan_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/permission/bashscan"
)

func texts(p *bashscan.Program) []string {
	var out []string
	for _, c := range p.Commands {
		out = append(out, c.Text())
	}
	return out
}

// Every simple command is extracted, wherever it hides.
func TestAnalyzeExtractsEveryCommand(t *testing.T) {
	cases := []struct {
		name, src string
		want      []string
	}{
		{"list", `echo ok && rm -rf ~`, []string{"echo ok", "rm -rf ~"}},
		{"or and semicolon", `a || b; c & d`, []string{"a", "b", "c", "d"}},
		{"pipeline", `cat f | grep x | sh`, []string{"cat f", "grep x", "sh"}},
		{"subshell and block", `(cd /; rm -rf x) && { echo a; echo b; }`, []string{"cd /", "rm -rf x", "echo a", "echo b"}},
		{"command substitution", `echo $(rm -rf /) "$(whoami)" ` + "`id`", []string{"echo $(rm -rf /) \"$(whoami)\" `id`", "rm -rf /", "whoami", "id"}},
		{"process substitution", `diff <(ls a) >(tee b)`, []string{"diff <(ls a) >(tee b)", "ls a", "tee b"}},
		{"redirection target substitution", `echo x > "$(mktemp)"`, []string{"echo x", "mktemp"}},
		{"heredoc body substitution", "cat <<EOF\n$(rm -rf /)\nEOF", []string{"cat", "rm -rf /"}},
		{"quoted heredoc is data", "cat <<'EOF'\n$(rm -rf /)\nEOF", []string{"cat"}},
		{"parameter default", `echo ${X:-$(rm -rf /)}`, []string{"echo ${X:-$(rm -rf /)}", "rm -rf /"}},
		{"if while for case", `if true; then a; fi; while b; do c; done; for i in $(seq 2); do d; done; case x in x) e;; esac`,
			[]string{"true", "a", "b", "c", "seq 2", "d", "e"}},
		{"function body", `f() { rm -rf /; }; f`, []string{"rm -rf /", "f"}},
		{"bash -c literal script", `bash -c 'echo hi; rm -rf /'`, []string{"bash -c echo hi; rm -rf /", "echo hi", "rm -rf /"}},
		{"nested -c", `sh -c "bash -c 'rm -rf /'"`, []string{"sh -c bash -c 'rm -rf /'", "bash -c rm -rf /", "rm -rf /"}},
		{"sudo bash -c", `sudo bash -c 'rm -rf /'`, []string{"sudo bash -c rm -rf /", "rm -rf /"}},
		{"trap action", `trap 'rm -rf /' EXIT`, []string{"trap rm -rf / EXIT", "rm -rf /"}},
		{"quote tricks", `r\m -r"f" '/'`, []string{"rm -rf /"}},
		{"assignment prefix", `FOO=1 npm test`, []string{"FOO=1 npm test"}},
		{"declaration", `export A=$(id)`, []string{"export A=$(id)", "id"}},
		{"time and negation", `time rm x; ! rm y`, []string{"rm x", "rm y"}},
		{"coproc", `coproc cat f`, []string{"cat f"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := bashscan.Analyze(tc.src)
			if err != nil {
				t.Fatalf("Analyze(%q): %v", tc.src, err)
			}
			if got := texts(p); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("commands of %q:\n got %q\nwant %q", tc.src, got, tc.want)
			}
		})
	}
}

func TestAnalyzeStaticAndOpaque(t *testing.T) {
	cases := []struct {
		name, src      string
		static, opaque bool
	}{
		{"literal", `npm run test -- --watch`, true, false},
		{"glob stays static", `ls *.go`, true, false},
		{"parameter", `echo $HOME`, false, false},
		{"computed name", `$CMD -rf /`, false, true},
		{"eval", `eval ls`, false, true},
		{"bash -c computed", `bash -c "$x"`, false, true},
		{"sourced computed", `source "$F"`, false, true},
		{"ansi-c quoting", `$'\x72m' -rf /`, false, true},
		{"arith with names", `(( x + 1 ))`, false, false},
		{"arith with numbers", `(( 1 + 2 ))`, true, false},
		{"test with computed arith", `[[ $x -eq 1 ]]`, false, false},
		{"fish -c", `fish -c 'ls'`, false, true},
		{"unparseable nested", `bash -c 'if then'`, false, true},
		{"sudo computed", `sudo $X`, false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := bashscan.Analyze(tc.src)
			if err != nil {
				t.Fatal(err)
			}
			_, opaque := p.Opaque()
			if p.Static() != tc.static || opaque != tc.opaque {
				t.Errorf("%q: static=%v opaque=%v, want static=%v opaque=%v", tc.src, p.Static(), opaque, tc.static, tc.opaque)
			}
		})
	}
}

func TestAnalyzeRefusesWhatItCannotReview(t *testing.T) {
	var tooLarge *bashscan.TooLargeError
	var syntaxErr *bashscan.SyntaxError
	big := strings.Repeat("echo ok; ", bashscan.MaxBytes/9+1)
	cases := []struct {
		name, src string
		want      any
	}{
		{"over the bound", big, &tooLarge},
		{"unclosed quote", `echo "abc`, &syntaxErr},
		{"unclosed subshell", `(echo a`, &syntaxErr},
		{"invalid utf-8", "echo \xff", &syntaxErr},
		{"nul byte", "echo a\x00b", &syntaxErr},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := bashscan.Analyze(tc.src)
			if err == nil || p != nil {
				t.Fatalf("Analyze accepted it: %v", texts(p))
			}
			if !errors.As(err, tc.want) {
				t.Fatalf("error %T %v, want %T", err, err, tc.want)
			}
		})
	}
	if _, err := bashscan.Analyze(`echo "abc`); err.(*bashscan.SyntaxError).Pos.Line != 1 {
		t.Errorf("syntax error without position: %v", err)
	}
}

func TestForms(t *testing.T) {
	cases := []struct {
		name, src string
		want      []string // forms of the first command
	}{
		{"basename", `/bin/rm -rf /`, []string{"/bin/rm -rf /", "rm -rf /"}},
		{"assignments", `X=1 rm a`, []string{"X=1 rm a", "rm a"}},
		{"wrappers", `sudo -u root nice -n 5 rm -rf /`, []string{"sudo -u root nice -n 5 rm -rf /", "nice -n 5 rm -rf /", "rm -rf /", "root nice -n 5 rm -rf /", "5 rm -rf /", "/"}},
		{"xargs", `xargs -n1 rm`, []string{"xargs -n1 rm", "rm"}},
		{"find -exec", `find . -exec rm -f {} \;`, []string{"find . -exec rm -f {} ;", "rm -f ./*"}},
		{"brace expansion", `rm -rf /{etc,usr}/x`, []string{"rm -rf /etc/x /usr/x"}},
		{"brace expansion of options", `ls -{l,a}`, []string{"ls -l -a"}},
		{"nested and quoted braces", `cat {a,'b c'}{1,2}`, []string{"cat a1 a2 b c1 b c2"}},
		{"a sequence beyond the bound stays a pattern", `echo {1..1000}`, []string{"echo *"}},
		{"braces that do not expand", `echo {} {x} a{b`, []string{"echo {} {x} a{b"}},
		{"computed words", `rm -rf $DIR/*`, []string{"rm -rf */*"}},
		{"command -v describes only", `command -v rm`, []string{"command -v rm", "rm"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := bashscan.Analyze(tc.src)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range p.Commands[0].Forms() {
				got = append(got, f.String())
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("forms of %q:\n got %q\nwant %q", tc.src, got, tc.want)
			}
		})
	}
}

func TestIntersect(t *testing.T) {
	W := bashscan.Wild
	p := func(parts ...any) bashscan.Pattern {
		var out bashscan.Pattern
		for _, x := range parts {
			switch x := x.(type) {
			case string:
				out = append(out, []rune(x)...)
			case rune:
				out = append(out, x)
			}
		}
		return out
	}
	cases := []struct {
		name string
		a, b bashscan.Pattern
		want bool
	}{
		{"equal literals", p("git push"), p("git push"), true},
		{"different literals", p("git push"), p("git pull"), false},
		{"prefix glob", p("git push ", W), p("git push origin main"), true},
		{"glob needs the space", p("ls ", W), p("lsof"), false},
		{"glob in the middle", p("git ", W, " main"), p("git checkout main"), true},
		{"text wildcard as command name", p("rm -rf ", W), p(W, " -rf /"), true},
		{"text wildcard cannot fix a literal mismatch", p("rm ", W), p("echo ", W), false},
		{"both wildcards", p(W, "x"), p("a", W), true},
		{"empty against wildcard", p(), p(W), true},
		{"empty against literal", p(), p("a"), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := bashscan.Intersect(tc.a, tc.b); got != tc.want {
				t.Errorf("Intersect(%s, %s) = %v", tc.a, tc.b, got)
			}
			if got := bashscan.Intersect(tc.b, tc.a); got != tc.want {
				t.Errorf("Intersect is not symmetric for %s, %s", tc.a, tc.b)
			}
		})
	}
}

func TestPathRefs(t *testing.T) {
	type ref struct {
		path   string
		access bashscan.Access
	}
	cases := []struct {
		name, src string
		want      []ref
	}{
		{"redirections", `cat < in.txt > out.txt 2>&1 >> log`, []ref{{"in.txt", bashscan.AccessRead}, {"out.txt", bashscan.AccessWrite}, {"log", bashscan.AccessWrite}}},
		{"compound redirection", `{ echo a; } > /etc/passwd`, []ref{{"/etc/passwd", bashscan.AccessWrite}}},
		{"rm and cp", `rm -f a b; cp src dst`, []ref{{"a", bashscan.AccessWrite}, {"b", bashscan.AccessWrite}, {"src", bashscan.AccessRead}, {"dst", bashscan.AccessWrite}}},
		{"dd", `dd if=/dev/zero of=/dev/sda`, []ref{{"/dev/zero", bashscan.AccessRead}, {"/dev/sda", bashscan.AccessWrite}}},
		{"sed -i", `sed -i 's/a/b/' f.txt`, []ref{{"f.txt", bashscan.AccessWrite}}},
		{"curl upload and output", `curl -d @secret.json -o out http://x`, []ref{{"secret.json", bashscan.AccessRead}, {"out", bashscan.AccessWrite}}},
		{"via sudo", `sudo tee /etc/hosts`, []ref{{"/etc/hosts", bashscan.AccessWrite}}},
		{"fd duplication is no file", `echo a >&2`, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := bashscan.Analyze(tc.src)
			if err != nil {
				t.Fatal(err)
			}
			var got []ref
			for _, r := range p.PathRefs() {
				got = append(got, ref{r.Path.Text, r.Access})
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("paths of %q:\n got %v\nwant %v", tc.src, got, tc.want)
			}
		})
	}
}

func TestReadOnly(t *testing.T) {
	cases := []struct {
		src  string
		want bool
	}{
		{`ls -la && git status && git log --oneline | head -5`, true},
		{`cat a | grep b | wc -l`, true},
		{`find . -name '*.go'`, true},
		{`find . -name '*.tmp' -delete`, false},
		{`echo x > out.txt`, false},
		{`echo x > /dev/null`, true},
		{`git push`, false},
		{`git branch -D main`, false},
		{`git branch -a`, true},
		{`sort -o out in`, false},
		{`bash -c 'ls; cat x'`, true},
		{`bash -c 'rm x'`, false},
		{`sudo ls`, false},
		{`echo $(rm -rf /)`, false},
		{`npm test`, false},
	}
	for _, tc := range cases {
		t.Run(tc.src, func(t *testing.T) {
			p, err := bashscan.Analyze(tc.src)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.ReadOnly(); got != tc.want {
				t.Errorf("ReadOnly(%q) = %v", tc.src, got)
			}
		})
	}
}

func TestContextOfCommands(t *testing.T) {
	p, err := bashscan.Analyze(`(curl -s x | cat) | sudo bash; bash <(wget -O- y) & f() { f | f & }`)
	if err != nil {
		t.Fatal(err)
	}
	byText := map[string]bashscan.Command{}
	for _, c := range p.Commands {
		byText[c.Text()] = c
	}
	curl, sh := byText["curl -s x"], byText["sudo bash"]
	if len(curl.Pipes) != 2 || len(sh.Pipes) != 1 {
		t.Fatalf("pipes: curl %v, sudo bash %v", curl.Pipes, sh.Pipes)
	}
	outer := sh.Pipes[0].Pipeline
	if curl.Pipes[1] != (bashscan.PipeStage{Pipeline: outer, Stage: 0}) || sh.Pipes[0].Stage != 1 {
		t.Errorf("curl %v and sudo bash %v are not stages 0 and 1 of one pipeline", curl.Pipes, sh.Pipes)
	}
	wget := byText["wget -O- y"]
	if wget.Via != bashscan.ViaProcessSubst || p.Commands[wget.Parent].BaseName() != "bash" || !wget.Background {
		t.Errorf("wget: via %q parent %d background %v", wget.Via, wget.Parent, wget.Background)
	}
	var self int
	for _, c := range p.Commands {
		if c.Function == "f" && c.Kind == bashscan.KindFuncCall {
			self++
		}
	}
	if self != 2 {
		t.Errorf("found %d self-calls inside f, want 2", self)
	}
}

// Brace expansion is bounded per word and per program: beyond the bound
// the command is Opaque (never allowed, a possible match of every deny),
// and the analysis stays fast.
func TestBraceExpansionBounds(t *testing.T) {
	cases := []struct {
		name   string
		src    string
		opaque bool
	}{
		{"a few words", "cat {a,b}{c,d} x{1..3}", false},
		{"one word beyond 64", "echo {1..65}", true},
		{"the program beyond 1024", "cat " + strings.Repeat("{a,b}{c,d}{e,f} ", 200), true},
		{"many commands share the bound", strings.Repeat("echo {a,b}{c,d}{e,f}{g,h}; ", 70), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			p, err := bashscan.Analyze(tc.src)
			if err != nil {
				t.Fatal(err)
			}
			_, opaque := p.Opaque()
			if opaque != tc.opaque {
				t.Fatalf("opaque = %v, want %v", opaque, tc.opaque)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Fatalf("analysis took %v", d)
			}
		})
	}
}
