package riskreview

import (
	"fmt"
	"path"
	"regexp"
	"strings"

	"github.com/openprogram/lifecycle/shared/permission/bashscan"
)

// The known-safe analysis. A call is proven safe only when every part of it
// is shown harmless here; anything it does not know is not proven (never
// allowed by this reviewer alone). See doc.go for the list and its sources.

// safeBash proves a whole program safe: no opaque command, every directory
// change known and inside the scope, every command a known-safe program
// with safe options and paths, every redirection harmless.
func (rv reviewer) safeBash(prog *bashscan.Program) (bool, string) {
	if c, ok := prog.Opaque(); ok {
		return false, fmt.Sprintf("%q: %s", c.Text(), c.OpaqueReason)
	}
	for _, dc := range prog.DirChanges() {
		c := &prog.Commands[dc.Command]
		if !dc.Known {
			return false, fmt.Sprintf("%q changes to a directory not known before run time, so later relative paths cannot be placed", c.Text())
		}
		if ok, why := rv.readable(prog, c.Text(), dc.Target); !ok {
			return false, why
		}
	}
	for i := range prog.Commands {
		if ok, why := rv.safeCommand(prog, &prog.Commands[i]); !ok {
			return false, why
		}
	}
	for _, r := range prog.Redirects {
		what := "redirection " + r.Op + " " + r.Target.Text
		var ok bool
		var why string
		if r.Access.Writes() {
			ok, why = rv.writablePath(prog, what, r.Target)
		} else {
			ok, why = rv.readable(prog, what, r.Target)
		}
		if !ok {
			return false, why
		}
	}
	return true, ""
}

// systemBins: a program named by path is known only from these.
var systemBins = []string{"/bin/", "/usr/bin/", "/usr/local/bin/"}

func (rv reviewer) safeCommand(prog *bashscan.Program, c *bashscan.Command) (bool, string) {
	text := c.Text()
	if !c.Static() {
		return false, fmt.Sprintf("%q is computed at run time (an expansion or substitution decides what it does)", text)
	}
	for _, a := range c.Assigns {
		if !harmlessAssign(a) {
			return false, fmt.Sprintf("%q sets %s, which can change what later commands run or read", text, a.Text)
		}
	}
	switch c.Kind {
	case bashscan.KindTest, bashscan.KindArith, bashscan.KindFuncCall, bashscan.KindAssign, bashscan.KindDecl:
		// Static clauses and assignments of harmless variables; a function
		// call runs the body, whose commands are judged one by one.
		return true, ""
	}
	name := c.Name()
	if strings.Contains(name, "/") {
		known := false
		for _, d := range systemBins {
			if strings.HasPrefix(name, d) && !strings.Contains(name[len(d):], "/") {
				known = true
			}
		}
		if !known {
			return false, fmt.Sprintf("%q runs %s, a program named by its path rather than a system program", text, name)
		}
	}
	if c.Script && len(c.Invocations) == 1 {
		// bash -c '<literal>': its commands are recorded and judged one by
		// one; the shell's own options must not make it read a startup
		// file the agent may have written (-i, --rcfile, --init-file).
		for _, a := range c.Args[1:] {
			if !a.Option() {
				break
			}
			if !safeShellOption.MatchString(a.Text) {
				return false, fmt.Sprintf("%q: shell option %s is not proven safe (an interactive shell or a startup file runs more than the script)", text, a.Text)
			}
		}
		return true, ""
	}
	if len(c.Invocations) > 1 {
		return false, fmt.Sprintf("%q runs another command through %s; a wrapper is never proven safe", text, c.Invocations[1].Wrapper)
	}
	check, ok := safePrograms[c.BaseName()]
	if !ok {
		return false, fmt.Sprintf("%q: %s is not in the known-safe list (read-only programs with their safe options, go build/test/vet, mkdir and touch inside the project)", text, c.BaseName())
	}
	return check(&call{rv: rv, prog: prog, name: c.BaseName(), args: c.Args[1:], text: text})
}

// safeShellOption: -c with errexit, nounset, xtrace, verbose, login
// (the owner's profile), --noprofile, --norc and --posix.
var safeShellOption = regexp.MustCompile(`^(-[celuxv]+|--noprofile|--norc|--posix)$`)

// harmlessVars may be set in front of a known-safe command: locale,
// terminal and Go target settings that change no program that runs.
var harmlessVars = set("CGO_ENABLED", "GOOS", "GOARCH", "GOARM", "GOARM64", "GOAMD64", "GO386", "GOMAXPROCS",
	"LANG", "LANGUAGE", "TZ", "NO_COLOR", "FORCE_COLOR", "CLICOLOR", "TERM", "COLUMNS", "LINES", "CI")

func harmlessAssign(w bashscan.Word) bool {
	if !w.Static {
		return false
	}
	name, _, _ := strings.Cut(w.Text, "=")
	name = strings.TrimSuffix(name, "+")
	return harmlessVars[name] || strings.HasPrefix(name, "LC_") && !strings.ContainsAny(name, "-")
}

// call is one invocation of a known program.
type call struct {
	rv   reviewer
	prog *bashscan.Program
	name string
	args []bashscan.Word
	text string
}

// opt finds a static option equal to one of names, or "name=value" for a
// long option.
func (k *call) opt(names ...string) (string, bool) {
	for _, a := range k.args {
		if !a.Option() {
			continue
		}
		for _, n := range names {
			if a.Text == n || strings.HasPrefix(n, "--") && strings.HasPrefix(a.Text, n+"=") {
				return a.Text, true
			}
		}
	}
	return "", false
}

// shortIn finds a cluster of short options (-iz) containing one of letters.
func (k *call) shortIn(letters string) (string, bool) {
	for _, a := range k.args {
		t := a.Text
		if a.Option() && !strings.HasPrefix(t, "--") && len(t) > 1 && strings.ContainsAny(t[1:], letters) {
			return t, true
		}
	}
	return "", false
}

func (k *call) unsafeOpt(o, does string) (bool, string) {
	return false, fmt.Sprintf("%q: option %s of %s %s", k.text, o, k.name, does)
}

// readsAll requires every word that may name a file (each operand, and the
// value of each option) to lie inside the project scope or a temporary
// directory. Words that are not paths resolve inside the working directory
// and so pass; a word that looks like an outside path is never proven.
func (k *call) readsAll(words []bashscan.Word) (bool, string) {
	for _, w := range words {
		if ok, why := k.rv.readable(k.prog, k.text, optionValue(w)); !ok {
			return false, why
		}
	}
	return true, ""
}

// optionValue is the part of a word that may be a path: the word, or the
// value of "--opt=value" / "-fVALUE".
func optionValue(w bashscan.Word) bashscan.Word {
	if !w.Option() {
		return w
	}
	t := w.Text
	if strings.HasPrefix(t, "--") {
		_, v, ok := strings.Cut(t, "=")
		if !ok {
			return bashscan.Word{Text: ".", Static: true}
		}
		t = v
	} else if len(t) > 2 {
		t = t[2:]
	} else {
		t = "" // "-x", or "-" (standard input)
	}
	if t == "" {
		t = "."
	}
	return bashscan.Word{Text: t, Static: true, Glob: w.Glob, Tilde: strings.HasPrefix(t, "~")}
}

// readable: every place the word may name is inside the project scope, a
// temporary directory or a harmless device.
func (rv reviewer) readable(prog *bashscan.Program, what string, w bashscan.Word) (bool, string) {
	if !w.Static {
		return false, fmt.Sprintf("%s: the path %s is computed at run time", what, w.Text)
	}
	if readableDevice(w.Text) {
		return true, ""
	}
	if w.Glob && globMayLeave(w.Text) {
		return false, fmt.Sprintf("%s: the pattern %s may climb out of the project", what, w.Text)
	}
	cands, _ := rv.scope.BashPath(prog, w)
	if len(cands) == 0 {
		return false, fmt.Sprintf("%s: the path %s cannot be placed in the trusted context", what, w.Text)
	}
	for _, abs := range cands {
		if !rv.scope.Contains(abs) && !inTemp(abs) {
			return false, fmt.Sprintf("%s reads %s, outside the project scope and the temporary directories", what, abs)
		}
	}
	return true, ""
}

// globMayLeave: a pattern whose expansion may name a place outside the
// directory its static part names: "..", a brace expression (which may
// list any path: {a,/etc/hosts}), or a component that matches ".." (.*
// does in shells without globskipdots).
func globMayLeave(t string) bool {
	if strings.Contains(t, "..") || strings.ContainsAny(t, "{}") {
		return true
	}
	for _, comp := range strings.Split(t, "/") {
		if ok, err := path.Match(comp, ".."); ok || err != nil {
			return true
		}
	}
	return false
}

// readableDevice: devices that read nothing (/dev/null) or the program's own
// input; /dev/zero and /dev/urandom never end and /dev/tty waits for a
// person, so they are not proven harmless to read.
func readableDevice(p string) bool {
	return p == "/dev/null" || p == "/dev/stdin" || strings.HasPrefix(p, "/dev/fd/")
}

// writablePath: a harmless device, or a path known before run time inside
// the project scope or a temporary directory and outside any
// .git, .vscode or .idea directory, and not a file named HEAD (see configWrite).
func (rv reviewer) writablePath(prog *bashscan.Program, what string, w bashscan.Word) (bool, string) {
	if w.Static && bashscan.HarmlessDevice(w.Text) {
		return true, ""
	}
	if !w.Static || w.Glob {
		return false, fmt.Sprintf("%s: the written path %s is not known before run time", what, w.Text)
	}
	cands, _ := rv.scope.BashPath(prog, w)
	if len(cands) == 0 {
		return false, fmt.Sprintf("%s: the written path %s cannot be placed in the trusted context", what, w.Text)
	}
	for _, abs := range cands {
		if !rv.scope.Contains(abs) && !inTemp(abs) {
			return false, fmt.Sprintf("%s writes %s, outside the project scope and the temporary directories", what, abs)
		}
		if why, ok := configWrite(abs); ok {
			return false, fmt.Sprintf("%s writes %s, %s", what, abs, why)
		}
	}
	return true, ""
}

// configDirs hold configuration that decides what programs run: git's
// config and hooks (core.fsmonitor runs on git status, core.pager on git
// log), and the IDE settings a person's editor executes. Claude Code's
// bypassPermissions mode still prompts for writes to the same directories.
var configDirs = set(".git", ".vscode", ".idea")

// configWrite explains why writing abs may change what programs run: it
// is inside a configuration directory, or it is a file named HEAD, which
// makes its directory look like a (bare) git repository whose config a
// later git status in it would obey (core.fsmonitor). Names are compared
// as case-insensitive file systems (macOS, Windows) and HFS+ compare them:
// ".GIT", ".git." and ".g\u200cit" are ".git" there.
func configWrite(abs string) (string, bool) {
	parts := strings.Split(abs, "/")
	for i, part := range parts {
		name := strings.ToLower(strings.TrimRight(strings.Map(dropIgnorable, part), ". "))
		if configDirs[name] {
			return fmt.Sprintf("inside a %s directory (its configuration decides what programs run)", name), true
		}
		if i == len(parts)-1 && name == "head" {
			return "a file named HEAD, which makes its directory look like a git repository whose config git would obey", true
		}
	}
	return "", false
}

// dropIgnorable removes the code points HFS+ ignores in file names.
func dropIgnorable(r rune) rune {
	switch {
	case r >= 0x200c && r <= 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x206a && r <= 0x206f, r == 0xfeff:
		return -1
	}
	return r
}

// safePrograms are the known programs, each with the check of its options
// and paths.
var safePrograms = map[string]func(*call) (bool, string){}

func init() {
	// Programs that read no file named in their arguments.
	for _, n := range []string{"echo", "printf", "pwd", "true", "false", ":", "whoami", "id", "uname", "seq",
		"sleep", "expr", "basename", "dirname", "which", "type", "test", "[", "tr", "numfmt", "exit", "wait", "set"} {
		safePrograms[n] = noVarOption
	}
	// Programs that only read the files they are given (or the working
	// directory); every path must be inside the scope.
	for _, n := range []string{"cat", "tac", "head", "tail", "wc", "nl", "cut", "paste", "rev", "comm", "diff",
		"cmp", "md5sum", "sha1sum", "sha224sum", "sha256sum", "sha384sum", "sha512sum", "shasum", "b2sum", "cksum",
		"od", "hexdump", "strings", "column", "expand", "unexpand", "fold", "ls", "df", "stat", "realpath",
		"readlink", "cd", "pushd"} {
		safePrograms[n] = readerCheck(nil, "")
	}
	// Recursive readers that can follow symbolic links out of the project
	// while they walk it: not with the options that make them follow.
	for _, n := range []string{"grep", "egrep", "fgrep"} {
		safePrograms[n] = readerCheck([]string{"-R", "--dereference-recursive"}, followsLinks)
	}
	safePrograms["du"] = readerCheck([]string{"-L", "--dereference"}, followsLinks)
	safePrograms["sort"] = readerCheck([]string{"-o", "--output", "--compress-program"}, "writes a file or runs a program")
	safePrograms["tree"] = readerCheck([]string{"-o", "-R", "-l"}, "writes files or follows symbolic links")
	safePrograms["file"] = readerCheck([]string{"-C", "--compile"}, "writes a file")
	safePrograms["base64"] = readerCheck([]string{"-o", "--output"}, "writes a file")
	safePrograms["date"] = readerCheck([]string{"-s", "--set"}, "sets the system clock")
	safePrograms["uniq"] = uniqCheck
	safePrograms["jq"] = jqCheck
	safePrograms["find"] = findCheck
	safePrograms["rg"] = rgCheck
	safePrograms["sed"] = sedCheck
	safePrograms["command"] = commandCheck
	safePrograms["git"] = gitCheck
	safePrograms["go"] = goCheck
	safePrograms["mkdir"] = writerCheck(map[string]bool{"-p": true, "--parents": true, "-v": true, "--verbose": true}, map[string]bool{"-m": true, "--mode": true})
	safePrograms["touch"] = writerCheck(map[string]bool{"-a": true, "-c": true, "-m": true, "-h": true, "--no-create": true, "--no-dereference": true},
		map[string]bool{"-d": true, "-t": true, "--date": true, "-r": true, "--reference": true})
}

// noVarOption: printf -v and wait -p assign a variable (PATH, say), which
// changes what later commands run.
func noVarOption(k *call) (bool, string) {
	const does = "assigns a variable, which can change what later commands run"
	switch {
	case k.name == "printf" && len(k.args) > 0 && strings.HasPrefix(k.args[0].Text, "-v"):
		return k.unsafeOpt(k.args[0].Text, does)
	case k.name == "wait":
		if o, bad := k.shortIn("p"); bad {
			return k.unsafeOpt(o, does)
		}
	}
	return true, ""
}

// readerCheck: any option except the unsafe ones (and --files0-from, which
// reads a list of files the analysis cannot see); every path in scope.
func readerCheck(unsafe []string, does string) func(*call) (bool, string) {
	return func(k *call) (bool, string) {
		if o, bad := k.opt(unsafe...); bad {
			return k.unsafeOpt(o, does)
		}
		for _, u := range unsafe {
			// -o also hides in a cluster: sort -uo file.
			if len(u) == 2 && u[0] == '-' {
				if o, bad := k.shortIn(u[1:]); bad {
					return k.unsafeOpt(o, does)
				}
			}
		}
		if o, bad := k.opt("--files0-from"); bad {
			return k.unsafeOpt(o, "reads the names of further files from a file")
		}
		return k.readsAll(k.args)
	}
}

// uniq's second operand is an output file.
func uniqCheck(k *call) (bool, string) {
	if n := len(operands(k.args)); n > 1 {
		return false, fmt.Sprintf("%q: uniq writes its second operand", k.text)
	}
	return k.readsAll(k.args)
}

// jq reads only its files, but $ENV and env print the environment, which
// may hold the service's secrets.
func jqCheck(k *call) (bool, string) {
	for _, a := range k.args {
		if jqEnv.MatchString(a.Text) {
			return false, fmt.Sprintf("%q: the jq program may read the environment (env, $ENV), which can hold secrets", k.text)
		}
	}
	return k.readsAll(k.args)
}

var jqEnv = regexp.MustCompile(`(^|[^A-Za-z0-9_])\$?(env|ENV)($|[^A-Za-z0-9_])`)

// findActions execute, delete or write files.
var findActions = []string{"-exec", "-execdir", "-ok", "-okdir", "-delete", "-fls", "-fprint", "-fprint0", "-fprintf"}

const followsLinks = "follows symbolic links, which may lead out of the project"

func findCheck(k *call) (bool, string) {
	if o, bad := k.opt("-L", "-follow"); bad {
		return k.unsafeOpt(o, followsLinks)
	}
	for _, a := range k.args {
		for _, f := range findActions {
			if a.Static && a.Text == f {
				return k.unsafeOpt(f, "runs a program, deletes or writes files")
			}
		}
	}
	return k.readsAll(k.args)
}

// rg: --pre and --hostname-bin run programs; -z/--search-zip runs
// decompressors (as in Codex CLI's list).
func rgCheck(k *call) (bool, string) {
	if o, bad := k.opt("--pre", "--pre-glob", "--hostname-bin", "--search-zip"); bad {
		return k.unsafeOpt(o, "runs other programs")
	}
	if o, bad := k.shortIn("z"); bad {
		return k.unsafeOpt(o, "runs decompression programs")
	}
	if o, bad := k.opt("--follow"); bad {
		return k.unsafeOpt(o, followsLinks)
	}
	if o, bad := k.shortIn("L"); bad {
		return k.unsafeOpt(o, followsLinks)
	}
	return k.readsAll(k.args)
}

// sedPrint is "sed -n 'N[,M]p'": printing lines, nothing else (sed scripts
// can write files with w and run programs with e).
var sedPrint = regexp.MustCompile(`^(\d+|\$)(,(\d+|\$))?p$`)

func sedCheck(k *call) (bool, string) {
	if len(k.args) < 2 || k.args[0].Text != "-n" || !sedPrint.MatchString(k.args[1].Text) {
		return false, fmt.Sprintf("%q: only sed -n 'N,Mp' (printing lines) is proven safe; a sed script can write files and run programs", k.text)
	}
	return k.readsAll(k.args[2:])
}

// command -v / -V only describe a name.
func commandCheck(k *call) (bool, string) {
	if len(k.args) > 0 && (k.args[0].Text == "-v" || k.args[0].Text == "-V") {
		return true, ""
	}
	return false, fmt.Sprintf("%q runs another command", k.text)
}

// writerCheck: mkdir and touch inside the project. bool options stand
// alone; value options take the next word (or =value).
func writerCheck(bools, values map[string]bool) func(*call) (bool, string) {
	return func(k *call) (bool, string) {
		opts := true
		for i := 0; i < len(k.args); i++ {
			a := k.args[i]
			if opts && a.Text == "--" {
				opts = false
				continue
			}
			if opts && a.Option() {
				name, _, hasVal := strings.Cut(a.Text, "=")
				switch {
				case bools[a.Text]:
				case values[name] && hasVal:
					if ok, why := k.rv.readable(k.prog, k.text, optionValue(a)); !ok {
						return false, why
					}
				case values[a.Text] && i+1 < len(k.args):
					i++
					if ok, why := k.rv.readable(k.prog, k.text, k.args[i]); !ok {
						return false, why
					}
				default:
					return k.unsafeOpt(a.Text, "is not in the known-safe set")
				}
				continue
			}
			if ok, why := k.rv.writablePath(k.prog, k.text, a); !ok {
				return false, why
			}
		}
		return true, ""
	}
}

// Git: read-only subcommands (Codex CLI's status/log/diff/show/branch
// and Claude Code's read-only git commands), without the global options
// that change configuration or the repository, and without the options
// that write files or run programs. git runs only in the trusted working
// directory (no -C elsewhere, no cd before it): in a subdirectory, a bare
// repository shipped with the project would be discovered, and its config
// (core.fsmonitor, core.pager) obeyed.
var gitReadOnly = set("status", "log", "diff", "show", "rev-parse", "ls-files", "ls-tree", "blame", "describe",
	"shortlog", "rev-list", "show-ref", "merge-base", "cat-file", "grep", "whatchanged", "count-objects")

var gitSafeGlobal = set("--no-pager", "-P", "--no-optional-locks", "--no-replace-objects", "--literal-pathspecs",
	"--glob-pathspecs", "--noglob-pathspecs", "--icase-pathspecs")

var gitBranchList = set("-a", "--all", "-r", "--remotes", "-v", "-vv", "--verbose", "--list", "-l",
	"--show-current", "--no-color")

// gitBranchFilter options list branches and may take a commit.
var gitBranchFilter = set("--merged", "--no-merged", "--contains", "--no-contains")

func gitCheck(k *call) (bool, string) {
	if len(k.prog.DirChanges()) > 0 {
		return false, fmt.Sprintf("%q: git runs after a change of directory, where a repository shipped or written there (a bare repository's config) would decide what git runs", k.text)
	}
	args := k.args
	i := 0
	for i < len(args) && args[i].Option() {
		t := args[i].Text
		switch {
		case t == "-C" && i+1 < len(args):
			if cands, exact := k.rv.scope.BashPath(k.prog, args[i+1]); !exact || len(cands) != 1 || cands[0] != k.rv.scope.WorkingDir {
				return false, fmt.Sprintf("%q: git -C %s runs git in another directory, where a repository shipped or written there (a bare repository's config) would decide what git runs", k.text, args[i+1].Text)
			}
			i += 2
		case gitSafeGlobal[t]:
			i++
		default:
			return k.unsafeOpt(t, "can set configuration (a pager, an alias, a hook), use another repository or start a pager")
		}
	}
	if i >= len(args) {
		return true, ""
	}
	sub, rest := args[i].Text, args[i+1:]
	for _, a := range rest {
		t := a.Text
		if !a.Option() {
			continue
		}
		for _, bad := range []string{"--output", "--ext-diff", "--textconv", "--filters", "--exec", "--paginate", "--no-index", "--open-files-in-pager", "--upload-pack", "--receive-pack"} {
			if t == bad || strings.HasPrefix(t, bad+"=") {
				return k.unsafeOpt(t, "writes a file, runs a program or reads outside the repository")
			}
		}
		if strings.HasPrefix(t, "-O") {
			return k.unsafeOpt(t, "opens a pager or reads an order file")
		}
	}
	switch {
	case gitReadOnly[sub]:
	case sub == "branch":
		list := false
		for _, a := range rest {
			list = list || a.Text == "--list" || a.Text == "-l"
		}
		for j := 0; j < len(rest); j++ {
			t := rest[j].Text
			switch {
			case gitBranchFilter[t]:
				if j+1 < len(rest) && !rest[j+1].Option() {
					j++ // the commit it filters by
				}
			case gitBranchList[t], strings.HasPrefix(t, "--format="), strings.HasPrefix(t, "--sort="),
				strings.HasPrefix(t, "--merged="), strings.HasPrefix(t, "--contains="):
			case !rest[j].Option() && list:
				// a pattern of --list
			default:
				return false, fmt.Sprintf("%q: git branch with %s may create, rename or delete a branch; only listing is proven safe", k.text, t)
			}
		}
	case sub == "tag":
		if len(rest) > 0 && rest[0].Text != "-l" && rest[0].Text != "--list" {
			return false, fmt.Sprintf("%q: only listing tags (git tag, git tag -l) is proven safe", k.text)
		}
	case sub == "remote":
		for _, a := range rest {
			if a.Text != "-v" && a.Text != "--verbose" {
				return false, fmt.Sprintf("%q: only listing remotes (git remote -v) is proven safe", k.text)
			}
		}
	case sub == "stash" || sub == "worktree":
		if len(rest) == 0 || rest[0].Text != "list" {
			return false, fmt.Sprintf("%q: only git %s list is proven safe", k.text, sub)
		}
	default:
		return false, fmt.Sprintf("%q: git %s is not one of the read-only git commands the analysis knows", k.text, sub)
	}
	return k.readsAll(rest)
}

// Go: build, test, vet, list, version and env (reading). Flags are an
// allow list: -exec, -toolexec, -vettool, -overlay, -ldflags, -gcflags,
// -modfile, -C and every flag not named here are not proven safe.
var (
	goBoolFlags = set("v", "race", "msan", "asan", "benchmem", "short", "cover", "failfast", "json", "trimpath",
		"x", "n", "a", "work", "m", "u", "e", "deps", "find", "test", "export", "compiled", "buildvcs")
	goValueFlags = set("run", "bench", "benchtime", "count", "cpu", "timeout", "covermode", "coverpkg", "list",
		"p", "parallel", "shuffle", "tags", "mod", "skip", "fuzz", "fuzztime", "fuzzminimizetime", "vet", "f")
	goFileFlags = set("o", "coverprofile", "cpuprofile", "memprofile", "blockprofile", "mutexprofile", "trace")
)

func goCheck(k *call) (bool, string) {
	if len(k.args) == 0 {
		return true, ""
	}
	sub, rest := k.args[0].Text, k.args[1:]
	switch sub {
	case "version":
		return k.readsAll(rest)
	case "env":
		if o, bad := k.opt("-w", "-u"); bad {
			return k.unsafeOpt(o, "changes the go configuration")
		}
		return true, ""
	case "build", "test", "vet", "list":
	default:
		return false, fmt.Sprintf("%q: go %s is not one of build, test, vet, list, version, env", k.text, sub)
	}
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if a.Text == "-args" || a.Text == "--args" {
			break // the rest goes to the test binary, which go test runs anyway
		}
		if !a.Option() {
			t := a.Text
			if !(t == "." || t == ".." || strings.HasPrefix(t, "./") || strings.HasPrefix(t, "../") || path.IsAbs(t) || strings.HasSuffix(t, ".go")) {
				return false, fmt.Sprintf("%q: %s is an import path, which may name code outside the project (use a relative package path such as ./...)", k.text, t)
			}
			if ok, why := k.rv.readable(k.prog, k.text, a); !ok {
				return false, why
			}
			continue
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(a.Text, "-"), "=")
		switch {
		case goBoolFlags[name]:
		case goValueFlags[name]:
			if !hasVal {
				i++
			}
		case goFileFlags[name]:
			w := bashscan.Word{Text: val, Static: true}
			if !hasVal {
				if i+1 >= len(rest) {
					return false, fmt.Sprintf("%q: %s needs a file", k.text, a.Text)
				}
				i++
				w = rest[i]
			}
			if ok, why := k.rv.writablePath(k.prog, k.text, w); !ok {
				return false, why
			}
		default:
			return k.unsafeOpt(a.Text, "is not in the known-safe set (-exec, -toolexec, -vettool, -ldflags and -overlay can run other programs)")
		}
	}
	return true, ""
}

// safeRead: the file tools read only inside the project scope or a
// temporary directory (the engine already allows reads inside the scope
// without review; this covers what reaches the reviewer).
func (rv reviewer) safeRead(tool string, args map[string]any) (bool, string) {
	paths := pathArgs(args)
	if tool == "Grep" || tool == "Glob" {
		if _, ok := args["path"].(string); !ok || len(paths) == 0 {
			paths = append(paths, ".")
		}
		if pat, _ := args["pattern"].(string); tool == "Glob" && (path.IsAbs(pat) || strings.Contains(pat, "..")) {
			return false, fmt.Sprintf("%s pattern %s may search outside the project", tool, pat)
		}
	}
	if len(paths) == 0 {
		return false, fmt.Sprintf("%s names no path", tool)
	}
	for _, p := range paths {
		abs, ok := rv.scope.Resolve(p)
		if !ok {
			return false, fmt.Sprintf("%s %s: the path cannot be placed in the trusted context", tool, p)
		}
		if !rv.scope.Contains(abs) && !inTemp(abs) {
			return false, fmt.Sprintf("%s reads %s, outside the project scope and the temporary directories", tool, abs)
		}
	}
	return true, ""
}

// safeWrite: file edits inside the project scope or a temporary directory
// are allowed (fileWrite has already blocked every other place), except
// inside a .git, .vscode or .idea directory.
func (rv reviewer) safeWrite(args map[string]any) (bool, string) {
	paths := pathArgs(args)
	if len(paths) == 0 {
		return false, "the edit names no file"
	}
	for _, p := range paths {
		abs, ok := rv.scope.Resolve(p)
		if !ok {
			return false, fmt.Sprintf("writes %s, which cannot be placed in the trusted context", p)
		}
		if why, ok := configWrite(abs); ok {
			return false, fmt.Sprintf("writes %s, %s", abs, why)
		}
	}
	return true, ""
}
