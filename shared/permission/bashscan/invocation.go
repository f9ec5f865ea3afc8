package bashscan

import (
	"path"
	"regexp"
	"strings"
)

// wrapper describes a command that runs another command given in its words.
type wrapper struct {
	// valueOpts take the next word as their value.
	valueOpts []string
	// positional words are consumed before the wrapped command
	// (timeout's duration, chroot's directory, flock's lock file).
	positional int
	// assignments: NAME=value words are skipped (env).
	assignments bool
	// scriptOpts take a shell script as their value (su -c, flock -c).
	scriptOpts []string
	// joinScript: the remaining words are joined and run by sh -c (watch).
	joinScript bool
	// describeOnly options make the wrapper print instead of run (command -v).
	describeOnly []string
}

var wrappers = map[string]wrapper{
	"sudo": {
		valueOpts:    []string{"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T", "-R", "--user", "--group", "--chdir", "--host", "--prompt", "--role", "--type", "--other-user", "--command-timeout", "--close-from", "--chroot"},
		describeOnly: []string{"-l", "-ll", "--list", "-v", "--validate", "-V", "--version", "-K", "-k"},
	},
	"doas":       {valueOpts: []string{"-u", "-C"}},
	"env":        {valueOpts: []string{"-u", "--unset", "-C", "--chdir"}, assignments: true, scriptOpts: []string{"-S", "--split-string"}},
	"nice":       {valueOpts: []string{"-n", "--adjustment"}},
	"ionice":     {valueOpts: []string{"-c", "-n", "-p", "-P", "-u", "--class", "--classdata", "--pid", "--pgid", "--uid"}},
	"nohup":      {},
	"time":       {valueOpts: []string{"-f", "--format", "-o", "--output"}},
	"timeout":    {valueOpts: []string{"-s", "--signal", "-k", "--kill-after"}, positional: 1},
	"stdbuf":     {valueOpts: []string{"-i", "-o", "-e", "--input", "--output", "--error"}},
	"command":    {describeOnly: []string{"-v", "-V"}},
	"builtin":    {},
	"exec":       {valueOpts: []string{"-a"}},
	"xargs":      {valueOpts: []string{"-I", "-n", "-P", "-L", "-s", "-d", "-E", "-a", "--max-args", "--max-procs", "--max-lines", "--max-chars", "--delimiter", "--eof", "--arg-file", "--process-slot-var"}},
	"chroot":     {valueOpts: []string{"--userspec", "--groups"}, positional: 1},
	"flock":      {valueOpts: []string{"-w", "--timeout", "-E", "--conflict-exit-code"}, scriptOpts: []string{"-c", "--command"}, positional: 1},
	"setsid":     {},
	"caffeinate": {valueOpts: []string{"-t", "-w"}},
	"unbuffer":   {},
	"strace":     {valueOpts: []string{"-o", "-e", "-p", "-s", "-E", "-u", "-P", "-a", "-b", "-I", "-X", "-O", "-S"}},
	"ltrace":     {valueOpts: []string{"-o", "-e", "-p", "-s", "-u", "-n", "-a", "-l", "-x"}},
	"su":         {valueOpts: []string{"-s", "--shell", "-g", "--group", "-G", "--supp-group", "-w", "--whitelist-environment"}, scriptOpts: []string{"-c", "--command", "--session-command"}, positional: 1},
	"runuser":    {valueOpts: []string{"-s", "--shell", "-g", "--group", "-G", "--supp-group", "-u", "--user", "-w"}, scriptOpts: []string{"-c", "--command", "--session-command"}, positional: 1},
	"watch":      {valueOpts: []string{"-n", "--interval", "-q", "--equexit", "-g"}, joinScript: true},
}

// shells run a script given with -c.
var shells = map[string]bool{
	"sh": true, "bash": true, "zsh": true, "dash": true, "ksh": true, "mksh": true, "ash": true, "busybox": false,
}

// otherShells take a -c script in a language this analysis does not parse.
var otherShells = map[string]bool{"fish": true, "csh": true, "tcsh": true, "pwsh": true, "nu": true, "xonsh": true, "elvish": true}

var assignment = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// invocations returns the command's own words and, level by level, the
// command lines its wrappers run. find -exec segments are included.
func invocations(args []Word) []Invocation {
	out := []Invocation{{Words: args}}
	cur := args
	for depth := 0; depth < 8 && len(cur) > 0; depth++ {
		name := ""
		if cur[0].Static {
			name = path.Base(cur[0].Text)
		}
		if name == "find" {
			out = append(out, findExecs(cur)...)
			break
		}
		wr, ok := wrappers[name]
		if !ok {
			break
		}
		inner, script, isScript := unwrap(wr, cur)
		if isScript {
			out = append(out, Invocation{Words: script, Wrapper: name, Script: true})
			break
		}
		if len(inner) == 0 {
			break
		}
		out = append(out, Invocation{Words: inner, Wrapper: name})
		cur = inner
	}
	return out
}

// unwrap returns the command line a wrapper runs, or the script it hands
// to a shell.
func unwrap(wr wrapper, words []Word) (inner, script []Word, isScript bool) {
	positional := wr.positional
	i := 1
	for i < len(words) {
		w := words[i]
		if !w.Static {
			break // a computed word: the wrapped command starts here (and is computed)
		}
		t := w.Text
		if t == "--" {
			i++
			break
		}
		if wr.assignments && assignment.MatchString(t) {
			i++
			continue
		}
		if strings.HasPrefix(t, "-") && t != "-" {
			if contains(wr.describeOnly, t) {
				return nil, nil, false
			}
			if contains(wr.scriptOpts, t) {
				if i+1 < len(words) {
					return nil, words[i+1 : i+2], true
				}
				return nil, nil, false
			}
			if contains(wr.valueOpts, t) {
				i += 2
				continue
			}
			i++
			continue
		}
		if positional > 0 {
			positional--
			i++
			continue
		}
		break
	}
	if i >= len(words) {
		return nil, nil, false
	}
	if wr.joinScript {
		return nil, words[i:], true
	}
	return words[i:], nil, false
}

// findExecs returns the commands of find's -exec, -execdir, -ok and -okdir
// actions (each ends at ";" or "+").
func findExecs(words []Word) []Invocation {
	var out []Invocation
	for i := 1; i < len(words); i++ {
		t := words[i].Text
		if !words[i].Static || (t != "-exec" && t != "-execdir" && t != "-ok" && t != "-okdir") {
			continue
		}
		j := i + 1
		for j < len(words) && !(words[j].Static && (words[j].Text == ";" || words[j].Text == "+")) {
			j++
		}
		if j > i+1 {
			out = append(out, Invocation{Words: words[i+1 : j], Wrapper: "find " + t})
		}
		i = j
	}
	return out
}

// wrapperSuffixes over-approximates what wrappers may run: every word after
// a wrapper's name that is not a static option could start the wrapped
// command. Used only to find possible rule matches, never to allow.
func wrapperSuffixes(invs []Invocation) [][]Word {
	var out [][]Word
	for _, iv := range invs {
		if iv.Script || len(iv.Words) < 2 {
			continue
		}
		if _, ok := wrappers[iv.Name()]; !ok {
			continue
		}
		for j := 1; j < len(iv.Words); j++ {
			if iv.Words[j].Option() {
				continue
			}
			out = append(out, iv.Words[j:])
		}
	}
	return out
}

// scriptOf reports whether the invocation hands a script to a shell and
// returns the script's words (joined with spaces to form its text). A
// computed script, or one in a language this analysis does not parse, is
// reported through opaque.
func scriptOf(iv Invocation) (words []Word, ok bool, opaque string) {
	if iv.Script {
		if !AllStatic(iv.Words) {
			return nil, true, "the script it runs is computed at run time"
		}
		return iv.Words, true, ""
	}
	name := iv.Name()
	switch {
	case name == "trap":
		rest := iv.Words[1:]
		if len(rest) > 0 && rest[0].Static && rest[0].Text == "--" {
			rest = rest[1:]
		}
		if len(rest) < 2 || rest[0].Option() {
			return nil, false, ""
		}
		if !rest[0].Static {
			return nil, true, "the trap action is computed at run time"
		}
		if rest[0].Text == "-" || rest[0].Text == "" {
			return nil, false, ""
		}
		return rest[:1], true, ""
	case shells[name] || otherShells[name]:
		hasC := false
		i := 1
		for i < len(iv.Words) {
			w := iv.Words[i]
			if !w.Static {
				break
			}
			t := w.Text
			if t == "--" || t == "-" {
				i++
				break
			}
			if !(strings.HasPrefix(t, "-") || strings.HasPrefix(t, "+")) {
				break
			}
			switch t {
			case "-o", "+o", "-O", "+O", "--rcfile", "--init-file":
				i += 2
				continue
			}
			if !strings.HasPrefix(t, "--") && strings.Contains(t, "c") {
				hasC = true
			}
			i++
		}
		if !hasC {
			return nil, false, ""
		}
		if otherShells[name] {
			return nil, true, name + " -c runs a script in a language this analysis does not parse"
		}
		if i >= len(iv.Words) {
			return nil, false, ""
		}
		if !iv.Words[i].Static {
			return nil, true, "the script it runs is computed at run time"
		}
		return iv.Words[i : i+1], true, ""
	}
	return nil, false, ""
}
