package bashscan

import (
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
	// busybox and toybox run the applet named by their first operand.
	"busybox":      {},
	"toybox":       {},
	"systemd-run":  {valueOpts: []string{"-u", "--unit", "-p", "--property", "-E", "--setenv", "--uid", "--gid", "-M", "--machine", "--description", "--slice", "-H", "--host", "--working-directory", "--on-active", "--on-calendar"}},
	"unshare":      {valueOpts: []string{"--mount-proc", "--propagation", "--setgroups", "-S", "--setuid", "-G", "--setgid", "-R", "--root", "-w", "--wd"}},
	"nsenter":      {valueOpts: []string{"-t", "--target", "-S", "--setuid", "-G", "--setgid", "-r", "--root", "-w", "--wd"}},
	"firejail":     {},
	"proot":        {valueOpts: []string{"-r", "-b", "-w", "-q"}},
	"faketime":     {positional: 1},
	"torsocks":     {},
	"proxychains":  {valueOpts: []string{"-f"}},
	"proxychains4": {valueOpts: []string{"-f"}},
	"taskset":      {positional: 1},
	"chrt":         {positional: 1},
	"cgexec":       {valueOpts: []string{"-g"}},
	"prlimit":      {valueOpts: []string{"-p", "--pid"}},
	"numactl":      {valueOpts: []string{"-N", "-m", "-C", "-p", "-i"}},
	"sg":           {scriptOpts: []string{"-c"}, positional: 1},
	// The dynamic loader runs the program it is given.
	"ld.so":                 {valueOpts: []string{"--library-path", "--preload", "--audit", "--argv0"}},
	"ld-linux.so.2":         {valueOpts: []string{"--library-path", "--preload", "--audit", "--argv0"}},
	"ld-linux-x86-64.so.2":  {valueOpts: []string{"--library-path", "--preload", "--audit", "--argv0"}},
	"ld-linux-aarch64.so.1": {valueOpts: []string{"--library-path", "--preload", "--audit", "--argv0"}},
}

// shells run a script given with -c.
var shells = map[string]bool{
	"sh": true, "bash": true, "zsh": true, "dash": true, "ksh": true, "mksh": true, "ash": true, "busybox": false,
}

// otherShells take a -c script in a language this analysis does not parse.
var otherShells = map[string]bool{"fish": true, "csh": true, "tcsh": true, "pwsh": true, "powershell": true, "nu": true, "xonsh": true, "elvish": true}

var assignment = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// maxInvocations bounds the command lines one command may expand to.
const maxInvocations = 64

// expansion is what one command may run, write and execute inline.
type expansion struct {
	invs   []Invocation
	inline []InlineCode
	paths  []PathRef
	opaque string
	// readsStdin: a shell or source reads its script from standard input.
	readsStdin bool
	// scriptFiles: script files a shell, interpreter or source runs.
	scriptFiles []Word
}

// expand returns the command's own words and, level by level, the command
// lines its wrappers run and the effects its program model finds (see
// programs.go): executed command lines, scripts, synthetic deletes, written
// files, inline code. assigns are the command's NAME=value prefixes.
func expand(args []Word, assigns []Word) expansion {
	var x expansion
	if len(args) > 0 {
		x.invs = []Invocation{{Words: args}}
	}
	x.invs = append(x.invs, varScripts(assigns)...)
	for _, a := range assigns {
		lit := literalPrefix(a)
		if (strings.HasPrefix(lit, "BASH_ENV=") || strings.HasPrefix(lit, "ENV=")) && (!a.Static || stdinLike(strings.SplitN(a.Text, "=", 2)[1])) {
			x.opaque = "the shell it starts sources a startup file known only at run time (BASH_ENV)"
		}
	}
	for k := 0; k < len(x.invs) && len(x.invs) < maxInvocations; k++ {
		iv := x.invs[k]
		if iv.Script || iv.Synthetic || len(iv.Words) == 0 || !iv.Words[0].Static {
			continue
		}
		name := iv.Name()
		if wr, ok := wrappers[name]; ok {
			inner, script, isScript := unwrap(wr, iv.Words)
			switch {
			case isScript:
				x.invs = append(x.invs, Invocation{Words: script, Wrapper: name, Script: true})
			case len(inner) > 0:
				x.invs = append(x.invs, Invocation{Words: inner, Wrapper: name, appends: name == "xargs"})
			default:
				if why := startsShell(name, iv.Words[1:]); why != "" && x.opaque == "" {
					x.opaque = why
				}
			}
		}
		m := modelFor(name)
		if m == nil {
			continue
		}
		e := effects{}
		m(iv, &e)
		for _, run := range e.runs {
			if len(x.invs) >= maxInvocations {
				if x.opaque == "" {
					x.opaque = "it runs more command lines than the analysis follows"
				}
				break
			}
			x.invs = append(x.invs, run)
		}
		for _, ic := range e.inline {
			ic.Invocation = k
			x.inline = append(x.inline, ic)
		}
		x.paths = append(x.paths, e.paths...)
		if e.opaque != "" && x.opaque == "" {
			x.opaque = e.opaque
		}
		x.readsStdin = x.readsStdin || e.readsStdin
		x.scriptFiles = append(x.scriptFiles, e.scriptFiles...)
	}
	return x
}

// startsShell explains why a wrapper given no command starts a shell that
// reads its commands from standard input (sudo -s, sudo -i, su, runuser,
// doas -s, sg, script), or returns "".
func startsShell(name string, args []Word) string {
	switch name {
	case "su", "runuser":
		return name + " without -c starts a shell that reads its commands from standard input"
	case "sudo", "doas":
		for _, w := range args {
			if w.Static && (w.Text == "--shell" || w.Text == "--login" || shortFlag(w, 's') || (name == "sudo" && shortFlag(w, 'i'))) {
				return name + " " + w.Text + " starts a shell that reads its commands from standard input"
			}
		}
	}
	return ""
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
			if v, _, ok := optValue(words, i, wr.scriptOpts...); ok {
				return nil, []Word{v}, true // env -S'rm -rf ~', su --command=...
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

// clusterTakesValue reports whether a shell's short-option cluster ends
// with -o or -O, whose value is the next word (set -euo pipefail).
func clusterTakesValue(t string) bool {
	return len(t) > 2 && (t[0] == '-' || t[0] == '+') && t[1] != '-' && (t[len(t)-1] == 'o' || t[len(t)-1] == 'O')
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
			if clusterTakesValue(t) {
				i += 2 // bash -euo pipefail -c '...': "pipefail" is -o's value
				continue
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
