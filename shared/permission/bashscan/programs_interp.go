package bashscan

import "strings"

// The models of shells and interpreters: inline code, and a program read
// from standard input (see programs.go).

// --- shells and interpreters -----------------------------------------------

// stdinNames are the files that are standard input.
var stdinNames = set("-", "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0")

// stdinLike reports whether a script path is standard input or another
// open descriptor (/dev/fd/3, /proc/self/fd/3): what it holds is known only
// at run time.
func stdinLike(p string) bool {
	return stdinNames[p] || strings.HasPrefix(p, "/dev/fd/") || strings.HasPrefix(p, "/proc/") && strings.Contains(p, "/fd/")
}

// sourceModel: source /dev/stdin runs whatever reaches standard input.
func sourceModel(iv Invocation, e *effects) {
	ops := operandsFrom(iv.Words[1:], nil)
	if len(ops) > 0 && ops[0].Static && stdinLike(ops[0].Text) {
		e.setOpaque(iv.Name() + " reads its script from standard input")
		e.readsStdin = true
	} else if len(ops) > 0 {
		e.scriptFiles = append(e.scriptFiles, ops[0])
	}
}

// shellModel: a shell without -c runs a script file, or reads its script
// from standard input (no file, "-", -s, /dev/stdin): what reaches it
// through a pipe, a here-document or a here-string is code the analysis
// never saw. A script file computed at run time (bash <(curl ...)) is
// opaque too.
func shellModel(iv Invocation, e *effects) {
	name := iv.Name()
	ws := iv.Words[1:]
	i := 0
	for i < len(ws) {
		w := ws[i]
		if !w.Static {
			break
		}
		t := w.Text
		if t == "--" {
			i++
			break
		}
		if t == "-" {
			break
		}
		if !(strings.HasPrefix(t, "-") || strings.HasPrefix(t, "+")) {
			break
		}
		switch t {
		case "--version", "--help", "-version", "-help":
			return
		case "-o", "+o", "-O", "+O", "--rcfile", "--init-file":
			i += 2
			continue
		}
		if otherShells[name] && t[0] == '-' {
			lower := strings.ToLower(strings.TrimLeft(t, "-"))
			if strings.HasPrefix(lower, "c") || strings.HasPrefix(lower, "e") || strings.HasPrefix(lower, "f") && name == "pwsh" {
				if strings.HasPrefix(lower, "f") {
					i++ // pwsh -File script: the script file follows
					break
				}
				e.setOpaque(name + " " + t + " runs a script in a language this analysis does not parse")
				return
			}
		}
		if !strings.HasPrefix(t, "--") && t[0] == '-' {
			if strings.Contains(t, "c") {
				return // -c: the script is an operand, parsed elsewhere
			}
			if strings.Contains(t, "s") {
				e.setOpaque(name + " -s reads its script from standard input")
				e.readsStdin = shells[name]
				return
			}
		}
		if clusterTakesValue(t) {
			i += 2
			continue
		}
		i++
	}
	switch {
	case i >= len(ws):
		if iv.appends {
			e.setOpaque(name + " runs script files named only at run time")
			return
		}
		e.setOpaque(name + " reads its script from standard input (a pipe, a here-document or a here-string)")
		e.readsStdin = shells[name]
	case !ws[i].Static:
		e.setOpaque(name + " runs a script file computed at run time")
	case stdinLike(ws[i].Text):
		e.setOpaque(name + " reads its script from standard input")
		e.readsStdin = shells[name]
	default:
		e.scriptFiles = append(e.scriptFiles, ws[i])
	}
}

// interpreter describes a language runtime: the options that take inline
// code, the options that take another value, and the options after which it
// needs no script (it runs a module, prints its version).
type interpreter struct {
	// inline options take code as their value ("-c", "-e", "--eval").
	inline []string
	// inlineLetters may end a cluster of short options ("-Bc code", "-lne
	// code") or carry attached code ("-cprint(1)").
	inlineLetters string
	// values take the next word.
	values []string
	// noScript options make a script operand unnecessary.
	noScript []string
	// stopLetters end a cluster of short options: the rest is their value
	// (perl -i.bak); the one-letter values are added to them.
	stopLetters string
	// stdin: with no script operand it reads its program from standard input.
	stdin bool
}

var interpreters = map[string]interpreter{
	"python3": {inline: []string{"-c"}, inlineLetters: "c", values: []string{"-W", "-X", "--check-hash-based-pycs"},
		noScript: []string{"-m", "-V", "--version", "-h", "--help", "-VV"}, stdin: true},
	"perl": {inline: []string{"-e", "-E"}, inlineLetters: "eE", stopLetters: "i", values: []string{"-I", "-M", "-m", "-x", "-0", "-C", "-d", "-D"},
		noScript: []string{"-v", "-V", "--version", "-h", "--help"}, stdin: true},
	"ruby": {inline: []string{"-e"}, inlineLetters: "e", stopLetters: "iFKT", values: []string{"-I", "-r", "-C", "-E", "--encoding", "-x"},
		noScript: []string{"-v", "--version", "-h", "--help"}, stdin: true},
	"node": {inline: []string{"-e", "--eval", "-p", "--print"}, values: []string{"-r", "--require", "--import", "--loader", "--experimental-loader", "-C", "--conditions", "--input-type", "--env-file"},
		noScript: []string{"-v", "--version", "-h", "--help", "--test", "--run", "--check", "-c"}, stdin: true},
	"php": {inline: []string{"-r", "-B", "-R", "-E", "-F"}, values: []string{"-c", "-d", "-z"},
		noScript: []string{"-v", "--version", "-h", "--help", "-m", "-i", "-l", "-S", "-a", "--ini"}, stdin: true},
	"lua":       {inline: []string{"-e"}, values: []string{"-l"}, noScript: []string{"-v", "-i"}, stdin: true},
	"luajit":    {inline: []string{"-e"}, values: []string{"-l", "-b", "-j", "-O"}, noScript: []string{"-v", "-i"}, stdin: true},
	"Rscript":   {inline: []string{"-e", "--expr"}, noScript: []string{"--version", "--help"}, stdin: false},
	"R":         {inline: []string{"-e"}, noScript: []string{"--version", "--help", "CMD"}, stdin: true},
	"osascript": {inline: []string{"-e"}, values: []string{"-l", "-s"}, stdin: true},
	"tclsh":     {stdin: true},
	"irb":       {inline: []string{"-e"}, noScript: []string{"-v", "--version"}, stdin: true},
	"bun":       {inline: []string{"-e", "--eval", "-p", "--print"}, noScript: []string{"run", "x", "test", "install", "add", "remove", "build", "init", "create", "-v", "--version", "--help", "pm", "upgrade", "link", "unlink", "outdated", "update", "publish"}},
	"deno":      {inline: []string{"eval"}, noScript: []string{"run", "test", "fmt", "lint", "check", "compile", "task", "install", "bench", "doc", "info", "cache", "--version", "-V", "--help", "upgrade", "serve", "add", "remove"}, stdin: true},
	"gdb":       {inline: []string{"-ex", "--ex", "-eval-command", "--eval-command", "-iex", "-init-eval-command"}},
}

// interpModel: inline code is an InlineCode; no script operand (or "-",
// /dev/stdin) means the program comes from standard input (Opaque); a
// computed script or option makes it Opaque too. A script file or module is
// plain use.
func interpModel(iv Invocation, e *effects) {
	name := iv.Name()
	in, ok := interpreters[name]
	if !ok {
		in = interpreters["python3"]
	}
	stop := in.stopLetters
	for _, v := range in.values {
		if len(v) == 2 && v[0] == '-' {
			stop += v[1:]
		}
	}
	ws := iv.Words[1:]
	for k := 0; k < len(ws); k++ {
		w := ws[k]
		if !w.Static {
			e.setOpaque(name + " runs a program or option computed at run time")
			return
		}
		t := w.Text
		if t == "--" {
			if k+1 < len(ws) && ws[k+1].Static && stdinNames[ws[k+1].Text] {
				e.setOpaque(name + " reads its program from standard input")
			} else if k+1 >= len(ws) && in.stdin {
				e.setOpaque(name + " reads its program from standard input (a pipe, a here-document or a here-string)")
			}
			return
		}
		if contains(in.inline, t) {
			if k+1 < len(ws) {
				e.code(t, ws[k+1])
			} else {
				e.code(t, literalWord("", w.Pos))
			}
			return
		}
		if v, _, ok := optValue(ws, k, longInline(in.inline)...); ok {
			e.code(strings.SplitN(t, "=", 2)[0], v)
			return
		}
		if contains(in.noScript, t) {
			return
		}
		if contains(in.values, t) {
			k++
			continue
		}
		if strings.HasPrefix(t, "-") && len(t) > 1 && t[1] != '-' && in.inlineLetters != "" {
			for n := 1; n < len(t); n++ {
				if strings.IndexByte(stop, t[n]) >= 0 {
					break
				}
				if strings.IndexByte(in.inlineLetters, t[n]) >= 0 {
					if n+1 < len(t) {
						e.code(t[:n+1], dropPrefix(w, t[:n+1]))
					} else if k+1 < len(ws) {
						e.code(t, ws[k+1])
					} else {
						e.code(t, literalWord("", w.Pos))
					}
					return
				}
			}
		}
		if strings.HasPrefix(t, "-") && !stdinNames[t] {
			continue
		}
		if stdinLike(t) {
			e.setOpaque(name + " reads its program from standard input")
		} else {
			e.scriptFiles = append(e.scriptFiles, w)
		}
		return
	}
	if in.stdin {
		if iv.appends {
			e.setOpaque(name + " runs program files named only at run time")
			return
		}
		e.setOpaque(name + " reads its program from standard input (a pipe, a here-document or a here-string)")
	}
}

// longInline are the long inline options, for their "--eval=code" form.
func longInline(opts []string) []string {
	var out []string
	for _, o := range opts {
		if strings.HasPrefix(o, "--") {
			out = append(out, o)
		}
	}
	return out
}

func init() {
	interpreters["nodejs"] = interpreters["node"]
	interpreters["pypy3"] = interpreters["python3"]
	interpreters["pypy"] = interpreters["python3"]
	interpreters["python"] = interpreters["python3"]
	interpreters["python2"] = interpreters["python3"]
	programs = map[string]model{}
	for name, m := range baseModels {
		programs[name] = m
	}
	for name := range interpreters {
		programs[name] = interpModel
	}
	for name := range runners {
		programs[name] = runnerModel
	}
	for name := range shells {
		programs[name] = shellModel
	}
	for name := range otherShells {
		programs[name] = shellModel
	}
}
