package bashscan

import (
	"fmt"
	"regexp"
	"strings"
)

// The program model: for each well-known program, the options that make it
// do more than its plain use. Allowing a program by a prefix rule
// (Bash(find *)) must not allow everything it can launch, write or delete,
// so every such option becomes a fact of the analysis:
//
//   - an executed command line is an Invocation (Wrapper names the option,
//     "find -exec", "go test -exec"), judged by the rules like any command;
//   - a shell command given as an option value (git -c core.pager='...',
//     tar --to-command='...') is a Script invocation, parsed like sh -c, or
//     makes the command Opaque when it is computed;
//   - a delete (find -delete, git clean, tar --remove-files) is a Synthetic
//     invocation "rm -rf <paths>", so a deny of Bash(rm *) catches it;
//   - a file written (find -fprint, sort -o, git log --output, tar -x under
//     -C) is a PathRef with AccessWrite (Recursive for a tree);
//   - inline program code (python3 -c, perl -e, awk '{system(...)}') is an
//     InlineCode, which only a rule naming its flag allows;
//   - a program whose commands cannot be known (go generate, a shell or
//     interpreter reading its script from standard input) is Opaque.
//
// Plain uses stay plain: git status, find . -name '*.go', go test ./...,
// npm test, npm run build, pip install, tar -czf out.tgz src, rg foo.

// effects are what one invocation does besides its plain use.
type effects struct {
	runs   []Invocation
	paths  []PathRef
	inline []InlineCode // Invocation is filled in by the caller
	opaque string
	// readsStdin: a shell (or source) reading its script from standard
	// input; a literal here-document is then parsed for the deny rules.
	readsStdin bool
	// scriptFiles: the script file a shell, interpreter or source runs.
	scriptFiles []Word
}

func (e *effects) run(label string, words []Word) {
	if len(words) > 0 {
		e.runs = append(e.runs, Invocation{Words: words, Wrapper: label})
	}
}

func (e *effects) script(label string, w Word) {
	e.runs = append(e.runs, Invocation{Words: []Word{w}, Wrapper: label, Script: true})
}

// del records a delete of paths (recursive) as the synthetic "rm -rf paths".
func (e *effects) del(label string, paths []Word) {
	if len(paths) == 0 {
		return
	}
	pos := paths[0].Pos
	words := append([]Word{literalWord("rm", pos), literalWord("-rf", pos)}, paths...)
	e.runs = append(e.runs, Invocation{Words: words, Wrapper: label, Synthetic: true})
}

func (e *effects) write(src string, w Word, recursive bool) {
	e.paths = append(e.paths, PathRef{Path: w, Access: AccessWrite, Source: src, Recursive: recursive})
}

func (e *effects) code(flag string, w Word) {
	e.inline = append(e.inline, InlineCode{Flag: flag, Code: w})
}

func (e *effects) setOpaque(why string) {
	if e.opaque == "" {
		e.opaque = why
	}
}

// model analyses one invocation of a program.
type model func(iv Invocation, e *effects)

// programs maps a program's base name to its model: baseModels, every
// interpreter and every shell. Filled in init to keep the models free to
// refer to the tables.
var programs map[string]model

var baseModels = map[string]model{
	"find":     findModel,
	"git":      gitModel,
	"go":       goModel,
	"npm":      npmModel,
	"npx":      npxModel,
	"pnpm":     pnpmModel,
	"yarn":     yarnModel,
	"bunx":     func(iv Invocation, e *effects) { e.run("bunx", operandsFrom(iv.Words[1:], nil)) },
	"pip":      pipModel,
	"pip3":     pipModel,
	"tar":      tarModel,
	"gtar":     tarModel,
	"bsdtar":   tarModel,
	"rg":       rgModel,
	"sort":     sortModel,
	"less":     pagerModel,
	"more":     pagerModel,
	"man":      manModel,
	"vim":      vimModel,
	"vi":       vimModel,
	"nvim":     vimModel,
	"gvim":     vimModel,
	"view":     vimModel,
	"vimdiff":  vimModel,
	"ex":       vimModel,
	"emacs":    emacsModel,
	"awk":      awkModel,
	"gawk":     awkModel,
	"mawk":     awkModel,
	"nawk":     awkModel,
	"sed":      sedModel,
	"gsed":     sedModel,
	"xargs":    xargsModel,
	"env":      envModel,
	"rsync":    rsyncModel,
	"ssh":      sshModel,
	"scp":      sshModel,
	"sftp":     sshModel,
	"sqlite3":  sqliteModel,
	"zip":      zipModel,
	"unzip":    unzipModel,
	"ed":       stdinOnly("ed reads its editing commands (which may run ! shell commands) from standard input"),
	"at":       stdinOnly("at reads the commands it schedules from standard input or a file"),
	"batch":    stdinOnly("batch reads the commands it schedules from standard input or a file"),
	"crontab":  crontabModel,
	"source":   sourceModel,
	".":        sourceModel,
	"parallel": parallelModel,
	"make":     makeModel,
	"script": func(iv Invocation, e *effects) {
		scriptModel(iv, e)
		if len(e.runs) == 0 && !hasOpt(iv.Words[1:], "-V", "--version", "-h", "--help") {
			e.setOpaque("script without -c starts a shell that reads its commands from standard input")
		}
	},
	"tmux": func(iv Invocation, e *effects) {
		for _, w := range iv.Words[1:] {
			if !w.Static || (!strings.HasPrefix(w.Text, "-") && !contains([]string{"ls", "list-sessions", "list-windows", "list-panes", "has-session", "has", "kill-session", "kill-server", "attach", "attach-session", "a", "detach", "-V"}, w.Text)) {
				e.setOpaque("tmux runs commands (or types keys) in a terminal session")
				return
			}
		}
	},
	"screen": func(iv Invocation, e *effects) {
		if !hasOpt(iv.Words[1:], "-ls", "-list", "-v", "-r", "-x") {
			e.setOpaque("screen runs commands in a terminal session")
		}
	},
	"gmake":  makeModel,
	"enable": enableModel,
	"hyperfine": func(iv Invocation, e *effects) {
		// every operand is a shell command it benchmarks
		for _, w := range operandsFrom(iv.Words[1:], []string{"-w", "--warmup", "-r", "--runs", "-m", "--min-runs", "-M", "--max-runs", "-p", "--prepare", "-c", "--cleanup", "-s", "--setup", "-S", "--shell", "-n", "--command-name", "--export-json", "--export-markdown", "--export-csv", "-L", "--parameter-list", "-P", "--parameter-scan", "-D", "--parameter-step-size", "-u", "--time-unit", "--style", "--output"}) {
			e.script("hyperfine", w)
		}
		ws := iv.Words[1:]
		for k := 0; k < len(ws); k++ {
			if v, next, ok := optValue(ws, k, "-p", "--prepare", "-c", "--cleanup", "-s", "--setup", "-S", "--shell"); ok {
				e.script("hyperfine "+strings.SplitN(ws[k].Text, "=", 2)[0], v)
				k = next - 1
			}
		}
	},
	"nix-shell": func(iv Invocation, e *effects) {
		ws := iv.Words[1:]
		for k := 0; k < len(ws); k++ {
			if v, next, ok := optValue(ws, k, "--run", "--command"); ok {
				e.script("nix-shell --run", v)
				k = next - 1
			}
		}
	},
}

// runner is a program that runs a command line given after a subcommand
// (uv run CMD, poetry run CMD, bundle exec CMD, conda run -n env CMD).
type runner struct {
	sub       string // "" when the command follows the program's options directly
	valueOpts []string
	// positional words before the command (direnv exec DIR CMD).
	positional int
}

var runners = map[string][]runner{
	"uv":               {{sub: "run", valueOpts: []string{"--with", "--with-editable", "--with-requirements", "--python", "-p", "--project", "--directory", "--env-file", "--extra", "--group", "--package", "--index", "--default-index", "--index-url", "--extra-index-url", "-C", "--config-setting"}}},
	"uvx":              {{valueOpts: []string{"--with", "--from", "--python", "-p", "--index", "--index-url"}}},
	"pipx":             {{sub: "run", valueOpts: []string{"--spec", "--python", "--index-url", "--pip-args"}}},
	"poetry":           {{sub: "run", valueOpts: []string{"-C", "--directory", "-P", "--project"}}},
	"pipenv":           {{sub: "run"}},
	"pdm":              {{sub: "run"}},
	"hatch":            {{sub: "run"}},
	"rye":              {{sub: "run"}},
	"bundle":           {{sub: "exec"}},
	"bundler":          {{sub: "exec"}},
	"conda":            {{sub: "run", valueOpts: []string{"-n", "--name", "-p", "--prefix", "--cwd"}}},
	"mamba":            {{sub: "run", valueOpts: []string{"-n", "--name", "-p", "--prefix", "--cwd"}}},
	"micromamba":       {{sub: "run", valueOpts: []string{"-n", "--name", "-p", "--prefix", "--cwd"}}},
	"direnv":           {{sub: "exec", positional: 1}},
	"op":               {{sub: "run", valueOpts: []string{"--env-file"}}},
	"doppler":          {{sub: "run", valueOpts: []string{"-p", "--project", "-c", "--config", "--command"}}},
	"aws-vault":        {{sub: "exec", positional: 1, valueOpts: []string{"-d", "--duration", "-t", "--mfa-token", "-n", "--region"}}},
	"ssh-agent":        {{valueOpts: []string{"-a", "-E", "-P", "-t"}}},
	"fakeroot":         {{valueOpts: []string{"-l", "--lib", "--faked", "-s", "-i"}}},
	"eatmydata":        {{}},
	"valgrind":         {{}},
	"xvfb-run":         {{valueOpts: []string{"-n", "--server-num", "-s", "--server-args", "-f", "--auth-file", "-e", "--error-file", "-p", "--xauth-protocol", "-w", "--wait"}}},
	"perf":             {{sub: "stat", valueOpts: []string{"-e", "--event", "-p", "--pid", "-o", "--output", "-r", "--repeat"}}, {sub: "record", valueOpts: []string{"-e", "--event", "-p", "--pid", "-o", "--output", "-F", "--freq"}}, {sub: "trace"}},
	"dbus-run-session": {{valueOpts: []string{"--config-file", "--dbus-daemon"}}},
}

// runnerModel: the command line after the runner's subcommand is an
// invocation.
func runnerModel(iv Invocation, e *effects) {
	name := iv.Name()
	for _, r := range runners[name] {
		at := 0
		if r.sub != "" {
			ops := operandsFrom(iv.Words[1:], r.valueOpts)
			if len(ops) == 0 || !ops[0].Static || ops[0].Text != r.sub {
				continue
			}
			at = len(iv.Words) - len(ops)
		}
		inner, _, _ := unwrap(wrapper{valueOpts: r.valueOpts, positional: r.positional}, iv.Words[at:])
		label := name
		if r.sub != "" {
			label += " " + r.sub
		}
		e.run(label, inner)
		return
	}
}

// makeModel: make -f - reads its makefile (whose recipes are shell
// commands) from standard input. Running the project's own Makefile is
// plain use, like npm run.
func makeModel(iv Invocation, e *effects) {
	ws := iv.Words[1:]
	for k := 0; k < len(ws); k++ {
		if v, next, ok := optValue(ws, k, "-f", "--file", "--makefile"); ok {
			if !v.Static || stdinLike(v.Text) {
				e.setOpaque("make reads its makefile (shell recipes) from standard input or a file known only at run time")
			}
			e.scriptFiles = append(e.scriptFiles, v)
			k = next - 1
			continue
		}
		if w := ws[k]; w.Static && strings.HasPrefix(w.Text, "SHELL=") {
			e.script("make SHELL=", dropPrefix(w, "SHELL="))
		}
	}
}

// enableModel: enable -f loads a builtin from a shared library.
func enableModel(iv Invocation, e *effects) {
	if hasOpt(iv.Words[1:], "-f") {
		e.setOpaque("enable -f loads shell builtins from a shared library")
	}
}

// modelFor returns the model of a program name (base name), if any.
func modelFor(name string) model {
	if m := programs[name]; m != nil {
		return m
	}
	if (strings.HasPrefix(name, "python") || strings.HasPrefix(name, "pypy")) && pythonName.MatchString(name) {
		return interpModel
	}
	return nil
}

var pythonName = regexp.MustCompile(`^(python|pypy)[0-9.]*$`)

// --- option helpers --------------------------------------------------------

// optValue reads an option that takes a value at words[i]: "-x v", "-xv"
// (one-letter names), "--name v" and "--name=v". It returns the value and
// the index of the next word.
func optValue(words []Word, i int, names ...string) (Word, int, bool) {
	w := words[i]
	if !w.Static {
		return Word{}, i, false
	}
	for _, n := range names {
		switch {
		case w.Text == n:
			if i+1 < len(words) {
				return words[i+1], i + 2, true
			}
			return Word{}, i + 1, false
		case strings.HasPrefix(n, "--") && strings.HasPrefix(w.Text, n+"="):
			return dropPrefix(w, n+"="), i + 1, true
		case len(n) == 2 && n[0] == '-' && n[1] != '-' && strings.HasPrefix(w.Text, n) && len(w.Text) > 2 && !strings.HasPrefix(w.Text, "--"):
			return dropPrefix(w, n), i + 1, true
		}
	}
	return Word{}, i, false
}

// dropPrefix is the word without a literal prefix of its value ("--output=F"
// -> "F"), keeping what is computed in the rest.
func dropPrefix(w Word, prefix string) Word {
	n := len([]rune(prefix))
	out := Word{Static: w.Static, Glob: w.Glob, Pos: w.Pos}
	if n <= len(w.Pattern) {
		out.Pattern = append(Pattern(nil), w.Pattern[n:]...)
	}
	if w.Static {
		out.Text = strings.TrimPrefix(w.Text, prefix)
	} else {
		out.Text = w.Text
	}
	out.Tilde = w.Static && strings.HasPrefix(out.Text, "~")
	return out
}

// hasOpt reports whether a static word equals one of names (or is
// "--name=..." for a long name).
func hasOpt(words []Word, names ...string) bool {
	for _, w := range words {
		if !w.Static {
			continue
		}
		for _, n := range names {
			if w.Text == n || strings.HasPrefix(n, "--") && strings.HasPrefix(w.Text, n+"=") {
				return true
			}
		}
	}
	return false
}

// shortFlag reports whether a cluster of short options ("-fdx") contains
// letter.
func shortFlag(w Word, letter byte) bool {
	return w.Static && len(w.Text) > 1 && w.Text[0] == '-' && w.Text[1] != '-' && strings.IndexByte(w.Text[1:], letter) >= 0
}

// operandsFrom returns the words from the first operand on, skipping
// options and the values of valueOpts ("--" ends the options).
func operandsFrom(words []Word, valueOpts []string) []Word {
	for i := 0; i < len(words); i++ {
		w := words[i]
		if !w.Static {
			return words[i:]
		}
		if w.Text == "--" {
			return words[i+1:]
		}
		if !strings.HasPrefix(w.Text, "-") || w.Text == "-" {
			return words[i:]
		}
		if contains(valueOpts, w.Text) {
			i++
		}
	}
	return nil
}

// joinUnder places a path word under a directory word (git -C dir, tar -C
// dir): absolute and ~ paths stay as they are.
func joinUnder(dir *Word, w Word) Word {
	if dir == nil || (w.Static && (strings.HasPrefix(w.Text, "/") || w.Tilde)) {
		return w
	}
	sep := literalWord("/", w.Pos)
	out := Word{Static: dir.Static && w.Static, Glob: dir.Glob || w.Glob, Tilde: dir.Tilde, Pos: w.Pos}
	out.Text = dir.Text + "/" + w.Text
	out.Pattern = append(append(append(Pattern(nil), dir.Pattern...), sep.Pattern...), w.Pattern...)
	return out
}

// computedWord is a value known only at run time.
func computedWord(text string, pos Pos) Word {
	return Word{Text: text, Pattern: Pattern{Wild}, Pos: pos}
}

// --- find ------------------------------------------------------------------

func findModel(iv Invocation, e *effects) {
	ws := iv.Words
	i := 1
	for i < len(ws) && ws[i].Static {
		t := ws[i].Text
		if t == "-H" || t == "-L" || t == "-P" || strings.HasPrefix(t, "-O") {
			i++
			continue
		}
		if t == "-D" {
			i += 2
			continue
		}
		break
	}
	var starts []Word
	for ; i < len(ws); i++ {
		w := ws[i]
		if w.Static && (strings.HasPrefix(w.Text, "-") || w.Text == "(" || w.Text == "!" || w.Text == ",") {
			break
		}
		starts = append(starts, w)
	}
	if len(starts) == 0 {
		starts = []Word{literalWord(".", ws[0].Pos)}
	}
	for ; i < len(ws); i++ {
		w := ws[i]
		if !w.Static {
			continue
		}
		switch w.Text {
		case "-exec", "-execdir", "-ok", "-okdir":
			j := i + 1
			for j < len(ws) && !(ws[j].Static && (ws[j].Text == ";" || ws[j].Text == "+")) {
				j++
			}
			seg := ws[i+1 : j]
			if len(seg) > 0 {
				if injects(seg, "{}") {
					e.setOpaque("find " + w.Text + " puts file names into the text of the script it runs")
				}
				for _, s := range starts {
					e.run("find "+w.Text, substitute(seg, "{}", s))
				}
			}
			i = j
		case "-delete":
			e.del("find -delete", starts)
		case "-fprint", "-fprint0", "-fls", "-fprintf":
			if i+1 < len(ws) {
				e.write("find "+w.Text, ws[i+1], false)
				i++
			}
			if w.Text == "-fprintf" {
				i++
			}
		}
	}
}

// substitute replaces the placeholder (find's {}, xargs -I's string) in a
// command line with what it stands for: a path under start.
func substitute(words []Word, placeholder string, start Word) []Word {
	out := make([]Word, len(words))
	for k, w := range words {
		if !w.Static || !strings.Contains(w.Text, placeholder) {
			out[k] = w
			continue
		}
		if !start.Static {
			out[k] = Word{Text: w.Text, Pattern: Pattern{Wild}, Pos: w.Pos}
			continue
		}
		under := strings.TrimSuffix(start.Text, "/") + "/*"
		text := strings.ReplaceAll(w.Text, placeholder, under)
		var p Pattern
		parts := strings.Split(w.Text, placeholder)
		for n, part := range parts {
			if n > 0 {
				p = append(p, Literal(strings.TrimSuffix(start.Text, "/")+"/")...)
				p = appendWild(p)
			}
			p = append(p, Literal(part)...)
		}
		out[k] = Word{Text: text, Static: true, Glob: true, Tilde: strings.HasPrefix(text, "~"), Pattern: p, Pos: w.Pos}
	}
	return out
}

// injects reports whether a command line run by find or xargs hands a
// script to a shell or interpreter with the placeholder inside the script's
// text: the data it stands for becomes code.
func injects(words []Word, placeholder string) bool {
	if len(words) == 0 || !words[0].Static {
		return false
	}
	name := Invocation{Words: words}.Name()
	_, interp := interpreters[name]
	if !shells[name] && !otherShells[name] && !interp && !pythonName.MatchString(name) {
		return false
	}
	for _, w := range words[1:] {
		if w.Static && strings.Contains(w.Text, placeholder) && w.Text != placeholder {
			return true
		}
	}
	return false
}

// --- go --------------------------------------------------------------------

func goModel(iv Invocation, e *effects) {
	ws := iv.Words
	i := 1
	if i+1 < len(ws) && ws[i].Static && ws[i].Text == "-C" {
		i += 2
	}
	if i >= len(ws) || !ws[i].Static {
		return
	}
	sub, rest := ws[i].Text, ws[i+1:]
	label := "go " + sub
	switch sub {
	case "generate":
		e.setOpaque("go generate runs the commands written in //go:generate lines of the source files")
		return
	case "env":
		if !hasOpt(rest, "-w", "-u") {
			return
		}
		f := literalWord("~/.config/go/env", ws[i].Pos)
		f.Tilde = true
		e.write("go env -w", f, false)
		for _, w := range operandsFrom(rest, nil) {
			if !w.Static {
				e.setOpaque("go env -w sets a value computed at run time")
				continue
			}
			k, v, _ := strings.Cut(w.Text, "=")
			switch k {
			case "GOFLAGS":
				if strings.Contains(v, "exec") || strings.Contains(v, "vettool") || strings.Contains(v, "extld") {
					e.setOpaque("go env -w GOFLAGS makes later go commands run a program")
				}
			case "CC", "CXX", "FC", "AR", "PKG_CONFIG", "GOTOOLCHAIN":
				e.script("go env -w "+k, literalWord(v, w.Pos))
			}
		}
		return
	}
	for k := 0; k < len(rest); k++ {
		w := rest[k]
		lit := literalPrefix(w)
		if !strings.HasPrefix(lit, "-") {
			if sub == "run" {
				break // the program's own arguments follow
			}
			continue
		}
		if w.Static && w.Text == "--" {
			break
		}
		// Go flags: -name, --name, -name=value, --name=value.
		flag := "-" + strings.TrimLeft(lit, "-")
		name, _, hasValue := strings.Cut(flag, "=")
		value := func() (Word, bool) {
			if hasValue {
				return dropPrefix(w, lit[:strings.Index(lit, "=")+1]), true
			}
			if k+1 < len(rest) {
				k++
				return rest[k], true
			}
			return Word{}, false
		}
		switch name {
		case "-exec", "-toolexec", "-vettool":
			if v, ok := value(); ok {
				e.script(label+" "+name, v)
			}
		case "-o":
			if v, ok := value(); ok {
				e.write(label+" -o", v, false)
			}
		case "-ldflags":
			if v, ok := value(); ok && (!v.Static || strings.Contains(v.Text, "extld")) {
				e.setOpaque(label + " -ldflags may name a linker program to run (-extld)")
			}
		}
	}
}

// literalPrefix is the text of a word up to its first computed part.
func literalPrefix(w Word) string {
	var b strings.Builder
	for _, r := range w.Pattern {
		if r == Wild {
			break
		}
		b.WriteRune(r)
	}
	return b.String()
}

// --- npm, npx, pnpm, yarn --------------------------------------------------

var npmValueOpts = []string{"-w", "--workspace", "--prefix", "-C", "--userconfig", "--cache", "--registry", "-p", "--package", "--loglevel"}

// execRest: the words run by npm exec / npx: an explicit --call/-c script,
// or the command line from the first operand.
func execRest(label string, rest []Word, e *effects) {
	for k := 0; k < len(rest); k++ {
		if v, next, ok := optValue(rest, k, "-c", "--call"); ok {
			e.script(label+" --call", v)
			k = next - 1
			continue
		}
		w := rest[k]
		if !w.Static || w.Text == "--" || !strings.HasPrefix(w.Text, "-") {
			e.run(label, operandsFrom(rest[k:], npmValueOpts))
			return
		}
		if contains(npmValueOpts, w.Text) {
			k++
		}
	}
}

func npmModel(iv Invocation, e *effects) {
	ops := operandsFrom(iv.Words[1:], npmValueOpts)
	if len(ops) == 0 || !ops[0].Static {
		return
	}
	switch ops[0].Text {
	case "exec", "x":
		execRest("npm "+ops[0].Text, ops[1:], e)
	}
}

func npxModel(iv Invocation, e *effects) { execRest("npx", iv.Words[1:], e) }

func pnpmModel(iv Invocation, e *effects) {
	ops := operandsFrom(iv.Words[1:], npmValueOpts)
	if len(ops) == 0 || !ops[0].Static {
		return
	}
	switch ops[0].Text {
	case "dlx", "exec":
		if hasOpt(iv.Words[1:], "-c", "--shell-mode") {
			if cmd := operandsFrom(ops[1:], npmValueOpts); len(cmd) > 0 {
				e.script("pnpm "+ops[0].Text+" --shell-mode", joinWords(cmd))
			}
			return
		}
		execRest("pnpm "+ops[0].Text, ops[1:], e)
	}
}

func yarnModel(iv Invocation, e *effects) {
	ops := operandsFrom(iv.Words[1:], npmValueOpts)
	if len(ops) == 0 || !ops[0].Static {
		return
	}
	switch ops[0].Text {
	case "dlx", "exec":
		execRest("yarn "+ops[0].Text, ops[1:], e)
	}
}

// --- pip -------------------------------------------------------------------

// pipModel: installing is plain use; options that place files elsewhere
// write there.
func pipModel(iv Invocation, e *effects) {
	ws := iv.Words[1:]
	for k := 0; k < len(ws); k++ {
		if v, next, ok := optValue(ws, k, "-t", "--target", "--prefix", "--root", "-d", "--dest", "-w", "--wheel-dir", "--src", "--log", "--report"); ok {
			e.write("pip "+strings.SplitN(ws[k].Text, "=", 2)[0], v, true)
			k = next - 1
		}
	}
}

// --- tar -------------------------------------------------------------------

var letters = regexp.MustCompile(`^[A-Za-z]+$`)

// tarValueLetters are GNU tar's short options that take a value.
const tarValueLetters = "bCfFgHIKLNTVX"

type tarOpt struct {
	name string // "-f", "--file", ...
	val  Word
}

func tarModel(iv Invocation, e *effects) {
	ws := iv.Words[1:]
	var opts []tarOpt
	var ops []Word
	pendingVals := []byte{} // old-style cluster letters waiting for values
	for k := 0; k < len(ws); k++ {
		w := ws[k]
		if !w.Static {
			ops = append(ops, w)
			continue
		}
		t := w.Text
		switch {
		case len(pendingVals) > 0:
			opts = append(opts, tarOpt{"-" + string(pendingVals[0]), w})
			pendingVals = pendingVals[1:]
		case t == "--":
			ops = append(ops, ws[k+1:]...)
			k = len(ws)
		case strings.HasPrefix(t, "--"):
			name, _, hasVal := strings.Cut(t, "=")
			if hasVal {
				opts = append(opts, tarOpt{name, dropPrefix(w, name+"=")})
				continue
			}
			switch name {
			case "--file", "--directory", "--to-command", "--use-compress-program", "--info-script", "--new-volume-script",
				"--rsh-command", "--rmt-command", "--index-file", "--listed-incremental", "--files-from", "--exclude-from",
				"--checkpoint-action", "--owner", "--group", "--mode", "--transform", "--xform", "--exclude", "--label", "--format", "--blocking-factor":
				if k+1 < len(ws) {
					opts = append(opts, tarOpt{name, ws[k+1]})
					k++
				}
			default:
				opts = append(opts, tarOpt{name: name})
			}
		case strings.HasPrefix(t, "-") && len(t) > 1:
			for n := 1; n < len(t); n++ {
				c := t[n]
				if strings.IndexByte(tarValueLetters, c) >= 0 {
					if n+1 < len(t) {
						opts = append(opts, tarOpt{"-" + string(c), dropPrefix(w, t[:n+1])})
					} else if k+1 < len(ws) {
						opts = append(opts, tarOpt{"-" + string(c), ws[k+1]})
						k++
					}
					break
				}
				opts = append(opts, tarOpt{name: "-" + string(c)})
			}
		case k == 0 && letters.MatchString(t):
			// Old style: "tar czf out.tgz src"; value letters take the
			// following words in order.
			for n := 0; n < len(t); n++ {
				if strings.IndexByte(tarValueLetters, t[n]) >= 0 {
					pendingVals = append(pendingVals, t[n])
				} else {
					opts = append(opts, tarOpt{name: "-" + string(t[n])})
				}
			}
		default:
			ops = append(ops, w)
		}
	}
	mode := ""
	var dir *Word
	var files []Word
	absolute := false
	for _, o := range opts {
		switch o.name {
		case "-c", "--create":
			mode = "create"
		case "-r", "--append", "-u", "--update", "-A", "--catenate", "--concatenate", "--delete":
			mode = "append"
		case "-x", "--extract", "--get":
			mode = "extract"
		case "-C", "--directory":
			d := joinUnder(dir, o.val)
			dir = &d
		case "-f", "--file":
			files = append(files, o.val)
		case "-P", "--absolute-names":
			absolute = true
		case "--to-command":
			e.script("tar --to-command", o.val)
		case "-I", "--use-compress-program":
			e.script("tar --use-compress-program", o.val)
		case "-F", "--info-script", "--new-volume-script":
			e.script("tar --info-script", o.val)
		case "--rsh-command", "--rmt-command":
			e.script("tar "+o.name, o.val)
		case "--checkpoint-action":
			if o.val.Static {
				if cmd, ok := strings.CutPrefix(o.val.Text, "exec="); ok {
					e.script("tar --checkpoint-action=exec", literalWord(cmd, o.val.Pos))
				}
			} else {
				e.script("tar --checkpoint-action", o.val)
			}
		case "--index-file", "-g", "--listed-incremental":
			e.write("tar "+o.name, o.val, false)
		case "--remove-files":
			var gone []Word
			for _, w := range ops {
				gone = append(gone, joinUnder(dir, w))
			}
			e.del("tar --remove-files", gone)
		}
	}
	switch mode {
	case "create", "append":
		for _, f := range files {
			if !(f.Static && f.Text == "-") {
				e.write("tar -f", f, false)
			}
		}
	case "extract":
		target := literalWord(".", iv.Words[0].Pos)
		if dir != nil {
			target = *dir
		}
		if absolute {
			e.write("tar -x --absolute-names", computedWord("(any path in the archive)", iv.Words[0].Pos), true)
		}
		e.write("tar -x", target, true)
	}
}

// --- rg, sort, less, man ---------------------------------------------------

func rgModel(iv Invocation, e *effects) {
	ws := iv.Words[1:]
	for k := 0; k < len(ws); k++ {
		if v, next, ok := optValue(ws, k, "--pre"); ok {
			e.runs = append(e.runs, Invocation{Words: []Word{v}, Wrapper: "rg --pre", appends: true})
			k = next - 1
			continue
		}
		// --hostname-bin runs its program, without arguments, to learn
		// the host name (for hyperlinks).
		if v, next, ok := optValue(ws, k, "--hostname-bin"); ok {
			e.run("rg --hostname-bin", []Word{v})
			k = next - 1
		}
	}
}

func sortModel(iv Invocation, e *effects) {
	ws := iv.Words[1:]
	for k := 0; k < len(ws); k++ {
		if v, next, ok := optValue(ws, k, "-o", "--output"); ok {
			e.write("sort -o", v, false)
			k = next - 1
			continue
		}
		if v, next, ok := optValue(ws, k, "--compress-program"); ok {
			e.runs = append(e.runs, Invocation{Words: []Word{v}, Wrapper: "sort --compress-program", appends: true})
			k = next - 1
		}
	}
}

var plainPagerStart = regexp.MustCompile(`^\+([0-9]*[GgF]?|/[^!|]*|[0-9]+)$`)

// pagerModel: less and more run a pager command given as +cmd at start
// (less "+!cmd" runs a shell command); less -o writes a log file.
func pagerModel(iv Invocation, e *effects) {
	ws := iv.Words[1:]
	for k := 0; k < len(ws); k++ {
		w := ws[k]
		if w.Static && strings.HasPrefix(w.Text, "+") && !plainPagerStart.MatchString(w.Text) {
			e.code(w.Text, w)
			continue
		}
		if !w.Static && strings.HasPrefix(w.Text, "+") {
			e.code("+", w)
			continue
		}
		if v, next, ok := optValue(ws, k, "-o", "-O", "--log-file", "--LOG-FILE", "-k", "--lesskey-file"); ok {
			if ws[k].Text == "-k" || strings.HasPrefix(ws[k].Text, "--lesskey") {
				e.code(ws[k].Text, v)
			} else {
				e.write(iv.Name()+" --log-file", v, false)
			}
			k = next - 1
		}
	}
}

func manModel(iv Invocation, e *effects) {
	ws := iv.Words[1:]
	for k := 0; k < len(ws); k++ {
		if v, next, ok := optValue(ws, k, "-P", "--pager", "--html", "-H"); ok {
			e.script("man "+strings.SplitN(ws[k].Text, "=", 2)[0], v)
			k = next - 1
		}
	}
}

// --- editors ---------------------------------------------------------------

func vimModel(iv Invocation, e *effects) {
	ws := iv.Words[1:]
	exMode := iv.Name() == "ex"
	for k := 0; k < len(ws); k++ {
		w := ws[k]
		if !w.Static {
			if strings.HasPrefix(w.Text, "+") || strings.HasPrefix(w.Text, "-") {
				e.code(w.Text, w)
				e.setOpaque("an editor command of " + iv.Name() + " is computed at run time")
			}
			continue
		}
		switch {
		case w.Text == "-c" || w.Text == "--cmd":
			if k+1 < len(ws) {
				e.code(w.Text, ws[k+1])
				vimCommand(iv.Name()+" "+w.Text, ws[k+1], e)
				k++
			}
		case strings.HasPrefix(w.Text, "+") && !plainPagerStart.MatchString(w.Text):
			e.code(w.Text, w)
			vimCommand(iv.Name()+" +", dropPrefix(w, "+"), e)
		case w.Text == "-e" || w.Text == "-E" || w.Text == "-es" || w.Text == "-Es" || w.Text == "-se":
			exMode = true
		case w.Text == "-S" || w.Text == "-u" || w.Text == "-U" || w.Text == "-s" || w.Text == "-w" || w.Text == "-W" || w.Text == "-i" || w.Text == "-T" || w.Text == "-t" || w.Text == "-q" || w.Text == "--servername" || w.Text == "--remote-send":
			if w.Text == "--remote-send" && k+1 < len(ws) {
				e.code(w.Text, ws[k+1])
			}
			if w.Text == "-w" || w.Text == "-W" {
				if k+1 < len(ws) {
					e.write(iv.Name()+" "+w.Text, ws[k+1], false)
				}
			}
			k++
		}
	}
	if exMode {
		e.setOpaque("in Ex mode " + iv.Name() + " reads editor commands (which may run shell commands) from standard input")
	}
}

// exShellStart finds a shell command in an Ex command line: ":!cmd",
// ":%!cmd" (a filter), ":r !cmd", ":w !cmd", ":silent !cmd". The shell
// command is the rest of the line ("|" included).
var exShellStart = regexp.MustCompile(`^[\s:]*(?:sil(?:e(?:n(?:t)?)?)?!?\s*)?[%.$0-9,;+\-'<>]*\s*(?:(?:r(?:e(?:a(?:d)?)?)?|w(?:r(?:i(?:t(?:e)?)?)?)?)\s+)?!`)

// exCodeWords are Ex commands that run code or shell commands in ways the
// analysis does not parse (a function call, a terminal, an interpreter).
var exCodeWords = regexp.MustCompile(`(?i)system|systemlist|job_start|jobstart|term|call|exe|norm|py|lua|perl|ruby|mz|tcl|source|so\b|!|<cmd>|feedkeys|luado|pydo|rubydo|perldo`)

// vimCommand judges one editor command given with -c, --cmd or +: a shell
// command it runs (":!rm -rf ~") is parsed like sh -c and meets the rules
// as the command it is; an Ex command that may run code the analysis does
// not parse makes the invocation Opaque (a possible match of every deny).
func vimCommand(label string, w Word, e *effects) {
	if !w.Static {
		e.setOpaque(label + " is computed at run time")
		return
	}
	for _, piece := range strings.Split(w.Text, "|") {
		if m := exShellStart.FindStringIndex(piece); m != nil {
			// The shell command runs to the end of the line, "|" included.
			rest := w.Text[strings.Index(w.Text, piece)+m[1]:]
			e.script(label+" !", literalWord(rest, w.Pos))
			return
		}
		if exCodeWords.MatchString(piece) {
			e.setOpaque(fmt.Sprintf("%s %q may run code or shell commands that the analysis does not parse", label, w.Text))
			return
		}
	}
}

func emacsModel(iv Invocation, e *effects) {
	ws := iv.Words[1:]
	for k := 0; k < len(ws); k++ {
		if v, next, ok := optValue(ws, k, "--eval", "-eval", "--execute", "-f", "--funcall", "-funcall"); ok {
			e.code(strings.SplitN(ws[k].Text, "=", 2)[0], v)
			k = next - 1
		}
	}
}

// --- xargs, env, parallel, script ------------------------------------------

// xargsModel: with -I/-i/--replace the replace string inside a script text
// makes the input data code.
func xargsModel(iv Invocation, e *effects) {
	ws := iv.Words[1:]
	repl := ""
	for k := 0; k < len(ws); k++ {
		w := ws[k]
		if !w.Static {
			break
		}
		if w.Text == "-I" && k+1 < len(ws) && ws[k+1].Static {
			repl = ws[k+1].Text
			k++
			continue
		}
		if strings.HasPrefix(w.Text, "-I") && len(w.Text) > 2 {
			repl = w.Text[2:]
			continue
		}
		if w.Text == "-i" || w.Text == "--replace" {
			repl = "{}"
			continue
		}
		if strings.HasPrefix(w.Text, "--replace=") || strings.HasPrefix(w.Text, "-i") && len(w.Text) > 2 {
			repl = strings.TrimPrefix(strings.TrimPrefix(w.Text, "--replace="), "-i")
			continue
		}
		if !strings.HasPrefix(w.Text, "-") {
			if repl != "" && injects(ws[k:], repl) {
				e.setOpaque("xargs puts its input into the text of the script it runs")
			}
			return
		}
	}
}

// commandVars hold a command line that programs run (git runs $GIT_PAGER,
// less runs $LESSOPEN, ...).
var commandVars = set("GIT_PAGER", "PAGER", "GIT_EDITOR", "EDITOR", "VISUAL", "GIT_SSH_COMMAND", "GIT_SSH",
	"GIT_EXTERNAL_DIFF", "GIT_SEQUENCE_EDITOR", "GIT_ASKPASS", "SSH_ASKPASS", "SUDO_ASKPASS", "GIT_PROXY_COMMAND",
	"LESSOPEN", "LESSCLOSE", "MANPAGER", "SYSTEMD_PAGER", "BROWSER", "PROMPT_COMMAND", "CC", "CXX", "FC",
	"LD", "AR", "PKG_CONFIG", "FZF_DEFAULT_COMMAND", "RSYNC_RSH", "MAKE", "GIT_TRACE2_EVENT_TARGET")

// varScripts are the command lines that assignments of commandVars hand to
// programs started with them.
func varScripts(assigns []Word) []Invocation {
	var out []Invocation
	for _, a := range assigns {
		lit := []rune{}
		for _, r := range a.Pattern {
			if r == Wild {
				break
			}
			lit = append(lit, r)
		}
		name, _, ok := strings.Cut(string(lit), "=")
		name = strings.TrimSuffix(name, "+")
		if !ok || !(commandVars[name] || strings.HasPrefix(name, "GIT_CONFIG_VALUE_")) {
			continue
		}
		v := dropPrefix(a, string(lit[:len(name)])+"=")
		if strings.HasPrefix(a.Text, name+"+=") {
			v = dropPrefix(a, name+"+=")
		}
		if name == "LESSOPEN" || name == "LESSCLOSE" {
			for _, p := range []string{"||", "|", "-"} {
				if v.Static && strings.HasPrefix(v.Text, p) {
					v = dropPrefix(v, p)
				}
			}
		}
		if v.Static && (strings.TrimSpace(v.Text) == "" || boolOrNumber.MatchString(v.Text)) {
			continue
		}
		out = append(out, Invocation{Words: []Word{v}, Wrapper: name + "=", Script: true})
	}
	return out
}

func envModel(iv Invocation, e *effects) {
	var assigns []Word
	for _, w := range iv.Words[1:] {
		if w.Static && assignment.MatchString(w.Text) {
			assigns = append(assigns, w)
		}
	}
	e.runs = append(e.runs, varScripts(assigns)...)
}

// parallelModel: GNU parallel runs its command (before ::: or ::::) with a
// shell, once per argument.
func parallelModel(iv Invocation, e *effects) {
	ops := operandsFrom(iv.Words[1:], []string{"-j", "--jobs", "-S", "--sshlogin", "--joblog", "-a", "--arg-file", "--delay", "--timeout", "-n", "--max-args"})
	var cmd []Word
	for _, w := range ops {
		if w.Static && strings.HasPrefix(w.Text, ":::") {
			break
		}
		cmd = append(cmd, w)
	}
	if len(cmd) == 0 {
		e.setOpaque("parallel reads the commands it runs from standard input")
		return
	}
	if injects(cmd, "{}") || injects(cmd, "{1}") {
		e.setOpaque("parallel puts its arguments into the text of the script it runs")
	}
	e.script("parallel", joinWords(cmd))
}

// scriptModel: util-linux script -c runs a shell command.
func scriptModel(iv Invocation, e *effects) {
	ws := iv.Words[1:]
	for k := 0; k < len(ws); k++ {
		if v, next, ok := optValue(ws, k, "-c", "--command"); ok {
			e.script("script -c", v)
			k = next - 1
		}
	}
}

// --- rsync, ssh, sqlite3, zip ----------------------------------------------

func rsyncModel(iv Invocation, e *effects) {
	ws := iv.Words[1:]
	for k := 0; k < len(ws); k++ {
		if v, next, ok := optValue(ws, k, "-e", "--rsh"); ok {
			e.script("rsync --rsh", v)
			k = next - 1
			continue
		}
		if v, next, ok := optValue(ws, k, "--log-file", "--write-batch", "--only-write-batch"); ok {
			e.write("rsync "+strings.SplitN(ws[k].Text, "=", 2)[0], v, false)
			k = next - 1
		}
	}
}

var sshCommandOpts = regexp.MustCompile(`(?i)^(proxycommand|localcommand|knownhostscommand)[ =]`)

// sshModel: -o ProxyCommand=... and -o LocalCommand=... run locally.
func sshModel(iv Invocation, e *effects) {
	ws := iv.Words[1:]
	for k := 0; k < len(ws); k++ {
		v, next, ok := optValue(ws, k, "-o")
		if !ok {
			continue
		}
		k = next - 1
		if !v.Static {
			e.setOpaque(iv.Name() + " -o sets an option computed at run time (it may name a command)")
			continue
		}
		if m := sshCommandOpts.FindString(v.Text); m != "" {
			e.script(iv.Name()+" -o "+strings.TrimRight(m, " ="), literalWord(v.Text[len(m):], v.Pos))
		}
	}
}

var sqliteDangerous = regexp.MustCompile(`(?im)^\s*\.|\battach\b|load_extension|writefile|\bedit\s*\(|\bfts3_tokenizer\b`)

// sqliteModel: sqlite3 writes its database, runs dot-commands (.shell,
// .system, .output, .load) and reads SQL from standard input when none is
// given.
func sqliteModel(iv Invocation, e *effects) {
	valueOpts := []string{"-cmd", "--cmd", "-separator", "-newline", "-nullvalue", "-init", "-vfs", "-maxsize", "-mmap", "-pagecache", "-lookaside", "-heap"}
	readonly := false
	var ops []Word
	ws := iv.Words[1:]
	for k := 0; k < len(ws); k++ {
		w := ws[k]
		if w.Static && (w.Text == "-cmd" || w.Text == "--cmd") && k+1 < len(ws) {
			e.code(w.Text, ws[k+1])
			k++
			continue
		}
		if w.Static && (w.Text == "-readonly" || w.Text == "--readonly") {
			readonly = true
			continue
		}
		if w.Option() {
			if contains(valueOpts, w.Text) {
				k++
			}
			continue
		}
		ops = append(ops, w)
	}
	if len(ops) > 0 && !readonly {
		e.write("sqlite3", ops[0], false)
	}
	if len(ops) < 2 {
		if !hasOpt(ws, "-version", "--version", "-help", "--help") {
			e.setOpaque("sqlite3 reads its SQL and dot-commands (which may run shell commands) from standard input")
		}
		return
	}
	for _, sql := range ops[1:] {
		if !sql.Static || sqliteDangerous.MatchString(sql.Text) {
			e.code(sql.Text, sql)
		}
	}
}

func zipModel(iv Invocation, e *effects) {
	ws := iv.Words[1:]
	for k := 0; k < len(ws); k++ {
		if v, next, ok := optValue(ws, k, "-TT", "--unzip-command"); ok {
			e.script("zip --unzip-command", v)
			k = next - 1
		}
	}
	if ops := operandsFrom(ws, []string{"-TT", "--unzip-command", "-b", "-n", "-t", "-tt", "-x", "-i", "-O", "--output-file"}); len(ops) > 0 {
		e.write("zip", ops[0], false)
	}
}

func unzipModel(iv Invocation, e *effects) {
	ws := iv.Words[1:]
	if hasOpt(ws, "-l", "-t", "-v", "-p", "-c", "-Z") {
		return
	}
	target := literalWord(".", iv.Words[0].Pos)
	for k := 0; k < len(ws); k++ {
		if v, next, ok := optValue(ws, k, "-d"); ok {
			target = v
			k = next - 1
		}
	}
	e.write("unzip", target, true)
}

func crontabModel(iv Invocation, e *effects) {
	ws := iv.Words[1:]
	if hasOpt(ws, "-l", "-r") {
		return
	}
	e.setOpaque("crontab installs commands that run later, from a file or standard input")
}

func stdinOnly(why string) model {
	return func(iv Invocation, e *effects) {
		if hasOpt(iv.Words[1:], "--version", "-V", "--help", "-h", "-l") && iv.Name() != "ed" {
			return
		}
		e.setOpaque(why)
	}
}
