package permission

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"strings"
	"sync"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/openprogram/lifecycle/shared/permission/bashscan"
)

// defaultCredentialStores are the credential stores of common developer
// tools, below the trusted context's home directory. Reading one hands the
// agent a credential; writing one (authorized_keys, a kube config) hands
// someone else the account.
var defaultCredentialStores = []string{
	"~/.ssh", "~/.aws", "~/.config/gcloud", "~/.azure", "~/.kube", "~/.docker/config.json",
	"~/.netrc", "~/.git-credentials", "~/.gnupg", "~/.npmrc", "~/.pypirc", "~/.config/gh/hosts.yml",
	"~/.config/hub", "~/.cargo/credentials", "~/.cargo/credentials.toml", "~/.terraform.d/credentials.tfrc.json",
	"~/.vault-token", "~/.pgpass", "~/.my.cnf", "~/.password-store", "~/.local/share/keyrings",
}

// DefaultCredentialStores returns the credential stores protected when
// Config.CredentialStores is nil: ~/.ssh, ~/.aws, ~/.config/gcloud, ~/.azure,
// ~/.kube, ~/.docker/config.json, ~/.netrc, ~/.git-credentials, ~/.gnupg,
// ~/.npmrc, ~/.pypirc, ~/.config/gh/hosts.yml and a few more token files
// (hub, cargo, terraform, vault, pgpass, my.cnf, pass, keyrings).
func DefaultCredentialStores() []string { return append([]string(nil), defaultCredentialStores...) }

// protector holds the protected paths: absolute ones fixed at start, and
// "~/..." ones placed under each trusted home directory (cached per home).
type protector struct {
	abs    []string
	home   []string // the part after "~/"
	mu     sync.Mutex
	byHome map[string][]string
}

func newProtector(protected, credentials []string) (*protector, error) {
	p := &protector{byHome: map[string][]string{}}
	for _, raw := range append(append([]string(nil), protected...), credentials...) {
		switch {
		case strings.HasPrefix(raw, "~/") && len(raw) > 2:
			p.home = append(p.home, path.Clean(raw[2:]))
		case path.IsAbs(raw) && path.Clean(raw) != "/":
			p.abs = appendReal(p.abs, path.Clean(raw))
		default:
			return nil, fmt.Errorf("permission engine: protected path %q is neither absolute nor under \"~/\" (and \"/\" itself cannot be protected)", raw)
		}
	}
	return p, nil
}

// appendReal adds a protected path and, when a symbolic link leads to it,
// the path it really names: a call is compared with both.
func appendReal(list []string, p string) []string {
	list = append(list, p)
	if r, err := Physical(OSFS{}, p); err == nil && r != p && !contains(list, r) {
		list = append(list, r)
	}
	return list
}

// paths are the absolute protected paths for a trusted home directory.
func (p *protector) paths(home string) []string {
	if home == "" || len(p.home) == 0 {
		return p.abs
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if got, ok := p.byHome[home]; ok {
		return got
	}
	out := append([]string(nil), p.abs...)
	for _, rel := range p.home {
		out = appendReal(out, path.Join(home, rel))
	}
	if len(p.byHome) > 64 { // a few homes in practice; never grow without bound
		p.byHome = map[string][]string{}
	}
	p.byHome[home] = out
	return out
}

// touch is one way a call reaches a protected path.
type touch struct {
	what     string // the word, path or command
	target   string // the protected path
	how      string // what the call does with it
	possible bool   // it might (computed or opaque input), it was not shown to
}

// protectCheck collects the touches of one call: the first definite one
// wins; otherwise the first possible one.
type protectCheck struct {
	x     *evalCtx
	paths []string
	dirs  []string // directories relative words may resolve from
	known bool     // every change of directory is known
	found *touch
	maybe *touch
	seen  map[string]bool // tokens already checked (token, glob, walk)
}

func (c *protectCheck) note(t touch) {
	if !t.possible {
		if c.found == nil {
			c.found = &t
		}
		return
	}
	if c.maybe == nil {
		c.maybe = &t
	}
}

// protectedTouch judges a call against the protected paths (evaluate's
// step 2). Reads, writes, deletes and listings are all touches: a
// protected path is never a question of access kind.
func (e *Engine) protectedTouch(x *evalCtx) (touch, bool) {
	c := &protectCheck{x: x, paths: e.protect.paths(x.scope.HomeDir), dirs: []string{x.scope.WorkingDir}, known: true}
	if len(c.paths) == 0 && x.view.fam != famBash {
		return touch{}, false
	}
	switch x.view.fam {
	case famBash:
		c.bash()
	case famRead, famEdit:
		c.fileTool()
	case famOther:
		c.anyArgs()
	}
	if c.found != nil {
		return *c.found, true
	}
	if c.maybe != nil {
		return *c.maybe, true
	}
	return touch{}, false
}

// protectReason turns a touch into the decision's reason.
func protectReason(t touch) Reason {
	if t.possible {
		return Reason{Source: SourceHardConstraint, Code: CodeUnverifiable, Rule: "protected: " + t.target, Command: t.what,
			Detail: fmt.Sprintf("%s %s, so it may reach the protected path %s (the service's state or a credential store); only a person can approve it", t.what, t.how, t.target)}
	}
	return Reason{Source: SourceHardConstraint, Code: CodeProtectedPath, Rule: "protected: " + t.target, Command: t.what,
		Detail: fmt.Sprintf("%s %s the protected path %s (the service's state or a credential store); no rule, grant, mode or approval allows it", t.what, t.how, t.target)}
}

// listingTools read a whole tree below their path.
var listingTools = map[string]bool{"Glob": true, "Grep": true, "LS": true}

func (c *protectCheck) fileTool() {
	tool := c.x.req.Call.Tool
	walk := listingTools[tool]
	for _, p := range c.x.view.paths {
		names, ok := c.namesFrom(c.x.scope.WorkingDir, p)
		if !ok {
			c.note(touch{what: tool + " " + p, target: "~", how: "names a path that cannot be resolved", possible: true})
		}
		for _, abs := range names {
			c.path(tool+" "+p, abs, false, walk, true)
		}
	}
	if tool == "Glob" {
		var a struct {
			Pattern string `json:"pattern"`
		}
		json.Unmarshal(c.x.req.Call.Args, &a)
		base := "."
		if len(c.x.view.paths) > 0 {
			base = c.x.view.paths[0]
		}
		if b, ok := c.x.scope.Resolve(base); ok && a.Pattern != "" {
			pat := a.Pattern
			if !path.IsAbs(pat) {
				pat = path.Join(b, pat)
			}
			c.path("Glob "+a.Pattern, pat, strings.ContainsAny(pat, "*?[{"), true, true)
			if i := strings.IndexAny(a.Pattern, "*?[{"); i >= 0 && strings.Contains(a.Pattern[i:], "..") {
				c.note(touch{what: "Glob " + a.Pattern, target: c.first(), how: "climbs out of its directory after a wildcard", possible: true})
			}
		}
	}
}

func (c *protectCheck) first() string {
	if len(c.paths) == 0 {
		return "-"
	}
	return c.paths[0]
}

// anyArgs: a tool whose arguments this engine does not model (MCP tools,
// anything else) touches a protected path when any string in its
// arguments names one.
func (c *protectCheck) anyArgs() {
	dec := json.NewDecoder(bytes.NewReader(c.x.req.Call.Args))
	for {
		tok, err := dec.Token()
		if err != nil {
			return
		}
		if s, ok := tok.(string); ok {
			c.text(c.x.req.Call.Tool+" argument "+protectShort(s), s, false)
		}
	}
}

func protectShort(s string) string {
	if len(s) > 80 {
		return s[:79] + "…"
	}
	return s
}

// pathSeparators split a word into the pieces a program may open:
// "--file=PATH", "if=PATH", "@PATH", "host:PATH", "open('PATH')".
const pathSeparators = " \t\n\r=@:,;()\"'`<>|&{}[]$\\"

// text checks every path-like piece of a text (a word, an argument, the
// whole command). Pieces are never walked: naming is what counts.
func (c *protectCheck) text(what, s string, glob bool) {
	if !strings.ContainsAny(s, pathSeparators) {
		c.token(what, s, glob, false)
		return
	}
	if len(s) <= 4096 && !strings.ContainsAny(s, "\n\r") {
		c.token(what, s, glob, false) // a file name with spaces or quotes in it
	}
	for _, piece := range strings.FieldsFunc(s, func(r rune) bool { return strings.ContainsRune(pathSeparators, r) }) {
		if piece != s {
			c.token(what, piece, glob && strings.ContainsAny(piece, "*?"), false)
		}
	}
}

// token resolves one path-like word (relative to every directory the
// program may be in) and checks it.
func (c *protectCheck) token(what, tok string, glob, walk bool) {
	if tok == "" {
		return
	}
	glob = glob && strings.ContainsAny(tok, "*?[{")
	key := tok
	if glob {
		key += "\x00g"
	}
	if walk {
		key += "\x00w"
	}
	if c.seen[key] {
		return
	}
	if c.seen == nil {
		c.seen = map[string]bool{}
	}
	c.seen[key] = true
	switch {
	case strings.HasPrefix(tok, "~") && tok != "~" && !strings.HasPrefix(tok, "~/"):
		return // another user's home: not this user's credentials
	case tok == "~" || strings.HasPrefix(tok, "~/") || path.IsAbs(tok):
		// Every name the path is known by: as written and where it leads
		// through symbolic links (Scope.Names).
		names, _ := c.namesFrom(c.x.scope.WorkingDir, tok)
		for _, abs := range names {
			c.path(what, abs, glob, walk, true)
		}
	default:
		// Resolved from every directory the program may be in: a word that
		// names a protected path from one of them is denied (cd .. && cat
		// .lifecycle/auth.key), unless a change of directory is unknown.
		for _, d := range c.dirs {
			if d == "" {
				continue
			}
			names, _ := c.namesFrom(d, tok)
			for _, abs := range names {
				c.path(what, abs, glob, walk, c.known)
			}
		}
	}
}

// namesFrom lists every name p (relative to dir) is known by, as deny-like
// rules see it (Scope.Names): the path as written, cleaned, and where it
// leads through symbolic links, so "up/.lifecycle/auth.key" with up -> ..
// names the key. The resolution is not recorded in the decision: these
// are the protected-path check's own look-ups, repeated at revalidation.
// ok is false when p cannot be resolved (names then holds the written
// name only).
func (c *protectCheck) namesFrom(dir, p string) (names []string, ok bool) {
	raw, ok := c.x.scope.join(dir, p)
	if !ok {
		return nil, false
	}
	n := c.x.scope.namesOf(raw, false)
	names = []string{n.lexical}
	if n.err != nil {
		return names, false
	}
	for _, ph := range n.phys {
		names = addName(names, c.x.scope.display(ph))
		names = addName(names, ph)
	}
	return names, true
}

// path checks one absolute path (or glob pattern). walk: the program
// reads the whole tree below it, so an ancestor of a protected path
// reaches it too.
func (c *protectCheck) path(what, abs string, glob, walk, exact bool) {
	base := abs
	if glob {
		base, _ = doublestar.SplitPattern(abs)
	}
	for _, p := range c.paths {
		if !glob {
			switch {
			case within(abs, p):
				c.note(touch{what: what, target: p, how: "names", possible: !exact})
			case walk && within(p, abs):
				c.note(touch{what: what, target: p, how: "walks a directory that contains", possible: !exact})
			}
			continue
		}
		switch {
		case within(base, p):
			c.note(touch{what: what, target: p, how: "names", possible: !exact})
		case globReaches(abs, base, p, walk):
			c.note(touch{what: what, target: p, how: "is a pattern that may expand to", possible: true})
		}
	}
}

// globReaches reports whether a pattern may expand to the protected path
// p, to something below it, or (walk) to one of its ancestors.
func globReaches(pat, base, p string, walk bool) bool {
	// Whatever a pattern expands to lies below its static base.
	if !within(p, base) {
		return false
	}
	if strings.Contains(pat, "**") {
		return true
	}
	comps := strings.Split(strings.TrimPrefix(pat, "/"), "/")
	// A prefix of the pattern deeper than p cannot match p: the work is
	// bounded by p's depth, not by the pattern's length.
	depth := strings.Count(p, "/")
	for k := 1; k <= len(comps) && k <= depth; k++ {
		if doublestar.MatchUnvalidated("/"+strings.Join(comps[:k], "/"), p) {
			return true
		}
	}
	if walk {
		for a := path.Dir(p); a != "/" && a != "."; a = path.Dir(a) {
			if doublestar.MatchUnvalidated(pat, a) {
				return true
			}
		}
		return pat == "/" || doublestar.MatchUnvalidated(pat, "/")
	}
	return false
}

// noFileAccess: builtins and programs that never open a path given as an
// argument, so a computed argument of theirs is harmless here.
var noFileAccess = protectSet("echo", "printf", "true", "false", ":", "test", "[", "sleep", "exit", "return",
	"shift", "unset", "export", "local", "declare", "readonly", "typeset", "set", "read", "wait", "kill",
	"break", "continue", "basename", "dirname", "expr", "seq", "cd", "pushd", "popd")

// lifecycleCLI mentions: the service's own CLI reads its keys.
var lifecycleCLI = regexp.MustCompile(`(?:^|[^A-Za-z0-9_.-])lifecycle['"\],]*[\s'",\[]+(token|serve|host|submit|show|approvals|approve|decline|command|activity|tail|policy)(?:[\s'",\]]|$)`)

func (c *protectCheck) bash() {
	b := c.x.bash
	src := c.x.view.command
	if b.err != nil {
		// Unanalysable input is asked (or denied) by the analysis step;
		// naming a protected path anywhere in it is denied outright.
		c.text("the command", src, true)
		return
	}
	prog := b.prog
	c.dirs, c.known = c.x.scope.bashDirs(prog)
	if m := lifecycleCLI.FindString(src); m != "" {
		c.note(touch{what: strings.TrimSpace(m), target: c.first(), how: "runs the service's own CLI, which reads the keys under"})
	}
	if !c.known {
		for _, dc := range prog.DirChanges() {
			if !dc.Known {
				c.note(touch{what: prog.Commands[dc.Command].Text(), target: c.first(), how: "changes to a directory that cannot be known before run time", possible: true})
			}
		}
	}
	for i := range prog.Commands {
		cmd := &prog.Commands[i]
		if cmd.Opaque {
			// The analysis step asks a person about it; but a shell or
			// interpreter whose script cannot be seen (stdin, a pipe, a
			// computed -c) is a possible reach of every protected path,
			// and that constraint comes first.
			c.opaqueRunner(cmd)
			continue
		}
		c.command(cmd)
	}
	for _, r := range prog.Redirects {
		if r.Target.Static {
			c.text("redirection "+r.Op+" "+r.Target.Text, r.Target.Text, r.Target.Glob)
		} else {
			c.note(touch{what: "redirection " + r.Op + " " + r.Target.Text, target: c.first(), how: "is computed at run time", possible: true})
		}
	}
	// Everything else the text names: here-document bodies, for-lists,
	// scripts in strings, words the analysis does not attribute.
	c.text("the command", src, true)
}

// opaqueRunner notes an opaque command that runs code it reads (a shell
// or interpreter) as a possible touch; other opaque commands (a computed
// command name, eval) are left to the analysis step.
func (c *protectCheck) opaqueRunner(cmd *bashscan.Command) {
	if len(c.paths) == 0 || cmd.Kind != bashscan.KindSimple {
		return
	}
	for _, iv := range cmd.Invocations {
		if iv.Script || len(iv.Words) == 0 || !iv.Words[0].Static {
			continue
		}
		if how, ok := runsCode(iv.Name(), iv.Words[1:]); ok {
			c.note(touch{what: cmd.Text(), target: c.first(), how: how, possible: true})
			return
		}
	}
}

func (c *protectCheck) command(cmd *bashscan.Command) {
	what := cmd.Text()
	for _, w := range append(append([]bashscan.Word(nil), cmd.Assigns...), cmd.Args...) {
		if w.Static {
			c.text(what, w.Text, w.Glob)
			continue
		}
		if home := c.x.scope.HomeDir; home != "" {
			// "$HOME/.ssh/id_rsa" names a protected path as surely as "~/.ssh/id_rsa".
			t := strings.NewReplacer(`"`, "", `'`, "", "${HOME}", home, "$HOME", home).Replace(w.Text)
			c.text(what, t, false)
		}
		if cmd.Kind == bashscan.KindSimple && !noFileAccess[cmd.BaseName()] {
			c.note(touch{what: what, target: c.first(), how: "has the word " + w.Text + ", computed at run time", possible: true})
		}
	}
	if cmd.Kind != bashscan.KindSimple {
		return
	}
	for _, iv := range cmd.Invocations {
		if iv.Script || len(iv.Words) == 0 {
			continue
		}
		c.invocation(what, iv)
	}
}

func (c *protectCheck) invocation(what string, iv bashscan.Invocation) {
	name := iv.Name()
	args := iv.Words[1:]
	switch {
	case name == "lifecycle":
		c.note(touch{what: what, target: c.first(), how: "runs the service's own CLI, which reads the keys under"})
		return
	case name == "go" && len(args) > 0 && args[0].Text == "run" && anyWord(args, func(s string) bool {
		s, _, _ = strings.Cut(s, "@")
		return strings.HasSuffix(strings.TrimSuffix(s, "/"), "cmd/lifecycle")
	}):
		c.note(touch{what: what, target: c.first(), how: "runs the service's own CLI, which reads the keys under"})
		return
	}
	if how, ok := printsCredentials(name, args); ok {
		c.note(touch{what: what, target: c.credentialTarget(), how: how})
	}
	if walkers(name, args) {
		for _, w := range args {
			if w.Static {
				c.token(what, w.Text, w.Glob, true)
				if k, v, ok := strings.Cut(w.Text, "="); ok && strings.HasPrefix(k, "-") {
					c.token(what, v, w.Glob, true)
				}
			}
		}
		if implicitDot[name] {
			c.token(what, ".", false, true)
		}
	}
	if how, ok := runsCode(name, args); ok && len(c.paths) > 0 {
		c.note(touch{what: what, target: c.first(), how: how, possible: true})
	}
	if !walkers(name, args) && !bounded[name] {
		// A program this check does not know may walk a directory it is
		// given (rimraf ~, a project's own tool): a directory above a
		// protected path is a possible reach, never allowed unseen.
		for _, w := range args {
			if w.Static && !w.Glob && !strings.HasPrefix(w.Text, "-") {
				c.ancestor(what, w.Text)
			}
		}
	}
}

// ancestor notes a possible reach when tok names a directory strictly
// above a protected path (from any directory the program may be in).
func (c *protectCheck) ancestor(what, tok string) {
	dirs := c.dirs
	if tok == "~" || strings.HasPrefix(tok, "~/") || path.IsAbs(tok) {
		dirs = []string{c.x.scope.WorkingDir}
	}
	for _, d := range dirs {
		if d == "" {
			continue
		}
		names, _ := c.namesFrom(d, tok)
		for _, abs := range names {
			for _, p := range c.paths {
				if p != abs && within(p, abs) {
					c.note(touch{what: what, target: p, how: "is given a directory that contains", possible: true})
					return
				}
			}
		}
	}
}

// bounded programs never walk the directories they are given (they list,
// print, test or change into one, or take no paths at all).
var bounded = protectSet("ls", "cat", "echo", "printf", "cd", "pushd", "popd", "stat", "test", "[", "mkdir", "touch",
	"wc", "head", "tail", "file", "realpath", "readlink", "basename", "dirname", "pwd", "which", "type", "true", "false",
	"sleep", "date", "df", "id", "whoami", "uname", "sort", "uniq", "cut", "tr", "cmp", "md5sum", "sha1sum",
	"sha256sum", "sha512sum", "jq", "env", "time", "timeout", "nice", "nohup", "command", "builtin", "exec", "eval",
	"export", "local", "declare", "readonly", "set", "unset", "shift", "read", "wait", "kill", "exit", "return",
	"break", "continue", "sudo", "doas", "xargs", "stdbuf", "ionice", "setsid")

func (c *protectCheck) credentialTarget() string {
	for _, p := range c.paths {
		if c.x.scope.HomeDir != "" && strings.HasPrefix(p, c.x.scope.HomeDir+"/") {
			return p
		}
	}
	return c.first()
}

func anyWord(words []bashscan.Word, f func(string) bool) bool {
	for _, w := range words {
		if w.Static && f(w.Text) {
			return true
		}
	}
	return false
}

// operandTexts are the static non-option words.
func operandTexts(words []bashscan.Word) []string {
	var out []string
	for _, w := range words {
		if w.Static && !strings.HasPrefix(w.Text, "-") {
			out = append(out, w.Text)
		}
	}
	return out
}

// hasFlag reports a long option (or its "=value" form) or a short letter,
// alone or combined ("-rn").
func hasFlag(words []bashscan.Word, long []string, short string) bool {
	for _, w := range words {
		if !w.Static || !strings.HasPrefix(w.Text, "-") || w.Text == "-" {
			continue
		}
		if strings.HasPrefix(w.Text, "--") {
			opt, _, _ := strings.Cut(w.Text, "=")
			if contains(long, opt) || contains(long, w.Text) {
				return true
			}
			continue
		}
		if short != "" && strings.ContainsAny(w.Text[1:], short) {
			return true
		}
	}
	return false
}

// alwaysWalks read (or move, link, archive, copy) whole trees below their
// path arguments; implicitDot start in the working directory when given
// none.
var (
	alwaysWalks = protectSet("find", "rg", "ag", "ack", "fd", "fdfind", "du", "ncdu", "tree", "rsync", "tar", "bsdtar",
		"zip", "7z", "7za", "7zr", "cpio", "git", "mv", "ln", "scp", "rclone", "restic", "borg", "unzip", "trash", "trash-put", "gio")
	implicitDot = protectSet("find", "rg", "ag", "ack", "fd", "fdfind", "du", "ncdu", "tree", "ls", "grep", "egrep", "fgrep", "zgrep", "git")
)

func walkers(name string, args []bashscan.Word) bool {
	switch {
	case alwaysWalks[name]:
		return true
	case name == "grep" || name == "egrep" || name == "fgrep" || name == "zgrep":
		return hasFlag(args, []string{"--recursive", "--dereference-recursive", "--directories=recurse"}, "rR") ||
			anyWord(args, func(s string) bool { return s == "recurse" })
	case name == "ls":
		return hasFlag(args, []string{"--recursive"}, "R")
	case name == "cp":
		return hasFlag(args, []string{"--recursive", "--archive"}, "rRa")
	case name == "rm" || name == "diff":
		return hasFlag(args, []string{"--recursive"}, "rR")
	case name == "chmod" || name == "chown" || name == "chgrp" || name == "chattr" || name == "setfacl" || name == "chcon":
		return hasFlag(args, []string{"--recursive"}, "R")
	}
	return false
}

var (
	shellNames  = protectSet("sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "csh", "tcsh", "pwsh", "powershell", "nu", "xonsh", "elvish", "busybox")
	interpreter = regexp.MustCompile(`^(python[0-9.]*|pypy[0-9.]*|ipython[0-9]*|perl[0-9.]*|ruby[0-9.]*|irb|node|nodejs|deno|bun|php[0-9.]*|lua[0-9.]*|luajit|tclsh[0-9.]*|wish|expect|Rscript|R|julia|osascript|jshell|groovy|scala)$`)
	awkNames    = protectSet("awk", "gawk", "mawk", "nawk")
	// launchers run a command line they read from stdin, a file or a string
	// this analysis does not parse.
	launchers = protectSet("xargs", "parallel", "script", "tmux", "screen", "ssh", "at", "batch", "systemd-run", "socat", "dtach", "abduco", "source", ".")
	infoOnly  = protectSet("--version", "-V", "--help", "-h", "-v", "-version", "-help")
	awkAccess = regexp.MustCompile(`getline|system|[>|]|@include|@load`)
)

// runsCode reports a program that can open files without naming them on
// its command line: an interpreter given code inline, in a script or on
// stdin, a shell reading a script file or stdin, a launcher of command
// lines it reads at run time, an archiver reading its file list.
func runsCode(name string, args []bashscan.Word) (string, bool) {
	allInfo := len(args) > 0
	for _, w := range args {
		if !w.Static || !infoOnly[w.Text] {
			allInfo = false
		}
	}
	switch {
	case allInfo:
		return "", false
	case shellNames[name]:
		if shellLiteralScript(args) {
			return "", false // the script is analysed command by command
		}
		return "runs a shell script from a file or stdin that this analysis cannot see", true
	case interpreter.MatchString(name):
		return "runs " + name + " code, which can open any file", true
	case awkNames[name]:
		ops := operandTexts(args)
		if hasFlag(args, []string{"--file", "--include", "--load", "--source"}, "file") || len(ops) == 0 || awkAccess.MatchString(ops[0]) {
			return "runs an awk program that can open files or commands", true
		}
	case launchers[name]:
		return "runs command lines it reads at run time", true
	case name == "tar" || name == "bsdtar":
		if hasFlag(args, []string{"--files-from"}, "T") {
			return "archives the paths listed in a file", true
		}
	case name == "rsync":
		if hasFlag(args, []string{"--files-from", "--include-from", "--exclude-from"}, "") {
			return "copies the paths listed in a file", true
		}
	case name == "zip":
		if anyWord(args, func(s string) bool { return s == "-@" }) {
			return "archives the paths read from stdin", true
		}
	}
	return "", false
}

// shellLiteralScript: the shell runs a literal "-c" script (bashscan parses
// it and records its commands).
func shellLiteralScript(args []bashscan.Word) bool {
	for i, w := range args {
		if !w.Static {
			return false
		}
		t := w.Text
		if !strings.HasPrefix(t, "-") || t == "-" || t == "--" {
			return false
		}
		if !strings.HasPrefix(t, "--") && strings.Contains(t, "c") {
			return i+1 < len(args) && args[i+1].Static
		}
	}
	return false
}

// printsCredentials: subcommands whose purpose is to print a stored
// credential, read from a store the command line does not name.
func printsCredentials(name string, args []bashscan.Word) (string, bool) {
	ops := operandTexts(args)
	at := func(seq ...string) bool {
		if len(ops) < len(seq) {
			return false
		}
		for i, s := range seq {
			if ops[i] != s {
				return false
			}
		}
		return true
	}
	const how = "prints a stored credential from"
	switch {
	case name == "gh" && (at("auth", "token") || at("auth", "status") && hasFlag(args, []string{"--show-token"}, "t")),
		name == "git" && (at("credential") || anyWord(args, func(s string) bool { return strings.HasPrefix(s, "credential-") })),
		strings.HasPrefix(name, "git-credential-"),
		name == "aws" && (at("configure", "get") || at("configure", "export-credentials") || at("ecr", "get-login-password")),
		name == "gcloud" && (anyWord(args, func(s string) bool {
			return s == "print-access-token" || s == "print-identity-token" || s == "config-helper"
		})),
		name == "az" && at("account", "get-access-token"),
		name == "kubectl" && at("config", "view") && hasFlag(args, []string{"--raw", "--flatten"}, ""),
		strings.HasPrefix(name, "docker-credential-"),
		name == "gpg" || name == "gpg2":
		if name == "gpg" || name == "gpg2" {
			if !hasFlag(args, []string{"--export-secret-keys", "--export-secret-subkeys", "--export-ssh-key"}, "") {
				return "", false
			}
		}
		return how, true
	case name == "security" && (at("find-generic-password") || at("find-internet-password")),
		name == "secret-tool" && at("lookup"),
		name == "pass" && len(ops) > 0:
		return how, true
	}
	return "", false
}

// set builds a name set.
func protectSet(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}
