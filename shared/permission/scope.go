package permission

import (
	"path"
	"sort"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/openprogram/lifecycle/shared/permission/bashscan"
)

// Scope resolves paths in the trusted context and answers whether a path
// lies in the project scope.
//
// With a file system (NewScopeFS; the engine's Config.FS) every path is
// resolved against the real file system through symbolic links, with ".."
// taken physically (Physical): a path is in the scope only if where it
// really leads is, so a link that leaves the project leads outside it.
// Deny-like rules match every name of a path (as written and cleaned, and
// where it leads), allow rules and the mode's defaults only where it leads
// (Resolve). A path that cannot be resolved (a link loop, an unreadable
// directory) is in no scope and might match every deny-like rule.
//
// Without a file system (NewScope; the AWS stack, whose decisions run away
// from the host) paths are compared lexically (cleaned, not resolved
// through links) and only the host tool's own check at execution stands
// between a link and the outside.
type Scope struct {
	WorkingDir  string
	ProjectRoot string
	HomeDir     string
	// Dirs are the directories of the project scope: the root first, then
	// the policy's additional directories.
	Dirs []string

	res *resolver // nil: lexical
	// realDirs are the resolved Dirs; aliases map the resolved project
	// directories and home back to their trusted names (longest real path
	// first), so a rule written against the trusted names ("./src/**",
	// "~/.ssh/**") matches a resolved path even when a trusted directory
	// is itself reached through a link (/tmp -> /private/tmp).
	realDirs []string
	aliases  []alias
}

type alias struct{ real, name string }

// NewScope builds the lexical scope of a trusted context and a policy's
// additional directories.
func NewScope(t Trusted, additional []string) Scope { return NewScopeFS(t, additional, nil) }

// NewScopeFS builds the scope of a trusted context that resolves paths
// through fsys; a nil fsys gives the lexical scope.
func NewScopeFS(t Trusted, additional []string, fsys FS) Scope {
	s := Scope{WorkingDir: cleanAbs(t.WorkingDir), ProjectRoot: cleanAbs(t.ProjectRoot), HomeDir: cleanAbs(t.HomeDir)}
	if s.ProjectRoot != "" {
		s.Dirs = append(s.Dirs, s.ProjectRoot)
	}
	for _, d := range additional {
		if c := cleanAbs(d); c != "" {
			s.Dirs = append(s.Dirs, c)
		}
	}
	if fsys == nil {
		return s
	}
	s.res = newResolver(fsys)
	// The working directory is not an alias: it is trusted as a place to
	// start from, not as a name for wherever it leads.
	for i, d := range append(append([]string(nil), s.Dirs...), s.HomeDir) {
		if d == "" {
			continue
		}
		real, err := s.res.resolve(d)
		if err != nil {
			continue // nothing under it resolves either
		}
		if i < len(s.Dirs) {
			s.realDirs = append(s.realDirs, real)
		}
		if real != d {
			s.aliases = append(s.aliases, alias{real: real, name: d})
		}
	}
	sort.SliceStable(s.aliases, func(i, j int) bool { return len(s.aliases[i].real) > len(s.aliases[j].real) })
	return s
}

// Chdir returns the scope with relative paths resolved from dir, the Bash
// tool's cwd argument, placed as the host tool places it: an absolute dir
// as given, a relative one (even "~...") under the working directory,
// cleaned, then resolved. When dir cannot be placed (or resolved) every
// relative path is unknown. An empty dir changes nothing.
func (s Scope) Chdir(dir string) Scope {
	if dir == "" {
		return s
	}
	raw := dir
	if !path.IsAbs(dir) {
		if s.WorkingDir == "" {
			return s
		}
		raw = s.WorkingDir + "/" + dir
	}
	s.WorkingDir = path.Clean(raw)
	if s.res != nil {
		phys, err := s.res.resolve(s.WorkingDir)
		if err != nil {
			s.WorkingDir = ""
			return s
		}
		s.WorkingDir = s.display(phys)
	}
	return s
}

// Resolving reports whether the scope resolves paths through a file
// system (false: lexical).
func (s Scope) Resolving() bool { return s.res != nil }

// Resolutions lists every path this scope resolved, with the result, for
// the decision to record (nil for a lexical scope).
func (s Scope) Resolutions() []PathResolution {
	if s.res == nil {
		return nil
	}
	return s.res.resolutions()
}

func cleanAbs(p string) string {
	if p == "" || !path.IsAbs(p) {
		return ""
	}
	return path.Clean(p)
}

// join makes p absolute without cleaning it: "~" and "~/x" from the home
// directory, relative paths from dir.
func (s Scope) join(dir, p string) (string, bool) {
	switch {
	case p == "~" || strings.HasPrefix(p, "~/"):
		if s.HomeDir == "" {
			return "", false
		}
		return s.HomeDir + p[1:], true
	case strings.HasPrefix(p, "~"):
		return "", false
	case path.IsAbs(p):
		return p, true
	case dir == "":
		return "", false
	}
	return dir + "/" + p, true
}

// pathNames are the names of one path: as written (cleaned) and where it
// leads. phys has two entries when ".." follows a link: the kernel's
// reading ("notes/../x" is the parent of notes' target) and the cleaned
// one ("x", which a tool that cleans first opens); err is set when the
// path cannot be resolved.
type pathNames struct {
	lexical string
	phys    []string
	err     error
}

func (s Scope) names(dir, p string) (pathNames, bool) {
	raw, ok := s.join(dir, p)
	if !ok {
		return pathNames{}, false
	}
	return s.namesOf(raw, true), true
}

// namesOf resolves the absolute, uncleaned path raw; record says whether
// the decision records the resolution (not for what a glob expanded to:
// see resolver).
func (s Scope) namesOf(raw string, record bool) pathNames {
	n := pathNames{lexical: path.Clean(raw)}
	if s.res == nil {
		n.phys = []string{n.lexical}
		return n
	}
	a, err := s.res.lookup(raw, record)
	if err != nil {
		n.err = err
		return n
	}
	n.phys = []string{a}
	if hasDotDot(raw) {
		b, err := s.res.lookup(n.lexical, record)
		if err != nil {
			n.err = err
			return n
		}
		if b != a {
			n.phys = append(n.phys, b)
		}
	}
	return n
}

func hasDotDot(p string) bool {
	if !strings.Contains(p, "..") {
		return false
	}
	for _, c := range strings.Split(p, "/") {
		if c == ".." {
			return true
		}
	}
	return false
}

// display writes a resolved path under the trusted name of the trusted
// directory it lies in (the resolved path itself when none).
func (s Scope) display(phys string) string {
	for _, a := range s.aliases {
		if within(phys, a.real) {
			return path.Join(a.name, strings.TrimPrefix(phys, a.real))
		}
	}
	return phys
}

// Resolve makes p absolute: "~" and "~/x" from the home directory,
// relative paths from the working directory; with a file system, where p
// really leads (written under the trusted directory names). ok is false
// when p cannot be resolved ("~user", "~" without a home directory, a
// relative path without a working directory, a link loop, a component
// that cannot be examined, or ".." after a link, where the kernel and a
// tool that cleans the path first would disagree).
func (s Scope) Resolve(p string) (string, bool) {
	n, ok := s.names(s.WorkingDir, p)
	if !ok || n.err != nil || len(n.phys) != 1 {
		return "", false
	}
	return s.display(n.phys[0]), true
}

// Names lists every name p is known by, for deny-like rules (hard
// constraints, restrictions, deny and ask rules, protected paths), which
// must match any of them: the path as written (cleaned), and where it
// leads, under the trusted directory names and as resolved. ok is false
// when p cannot be resolved; names then holds what is known (possibly
// nothing) and a deny-like rule must treat p as a possible match.
func (s Scope) Names(p string) (names []string, ok bool) {
	n, ok := s.names(s.WorkingDir, p)
	if !ok {
		return nil, false
	}
	names = []string{n.lexical}
	if n.err != nil {
		return names, false
	}
	for _, ph := range n.phys {
		names = addName(names, s.display(ph))
		names = addName(names, ph)
	}
	return names, true
}

func addName(list []string, s string) []string {
	if contains(list, s) {
		return list
	}
	return append(list, s)
}

// Contains reports whether the absolute path abs lies in the project scope.
// With a file system abs must be a resolved path (Resolve, BashPath); the
// resolved project directories count as well as their trusted names.
func (s Scope) Contains(abs string) bool {
	for _, d := range s.Dirs {
		if within(abs, d) {
			return true
		}
	}
	for _, d := range s.realDirs {
		if within(abs, d) {
			return true
		}
	}
	return false
}

// within reports whether p is dir or below it.
func within(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

// escapeMeta quotes doublestar metacharacters in a literal path.
func escapeMeta(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '*', '?', '[', ']', '{', '}', '\\':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// rulePattern turns a rule path into an absolute doublestar pattern:
// "//x" and "/x" are absolute, "~/x" is under the home directory, anything
// else is relative to the project root. ok is false when the pattern
// cannot be placed (no home directory, no project root).
func (s Scope) rulePattern(raw string) (string, bool) {
	switch {
	case strings.HasPrefix(raw, "//"):
		return raw[1:], true
	case strings.HasPrefix(raw, "/"):
		return raw, true
	case raw == "~" || strings.HasPrefix(raw, "~/"):
		if s.HomeDir == "" {
			return "", false
		}
		return escapeMeta(s.HomeDir) + raw[1:], true
	case s.ProjectRoot == "":
		return "", false
	}
	rel := strings.TrimPrefix(raw, "./")
	if rel == "." || rel == "" {
		return escapeMeta(s.ProjectRoot), true
	}
	return strings.TrimSuffix(escapeMeta(s.ProjectRoot), "/") + "/" + rel, true
}

// pathMatch matches an absolute path against a rule's pattern. With
// conservative (deny, ask, hard constraints) a rule naming a directory also
// covers everything below it; allow rules match exactly.
func pathMatch(pattern, abs string, conservative bool) bool {
	if doublestar.MatchUnvalidated(pattern, abs) {
		return true
	}
	if !conservative {
		return false
	}
	for p := abs; p != "/" && p != "."; {
		p = path.Dir(p)
		if doublestar.MatchUnvalidated(pattern, p) {
			return true
		}
	}
	return false
}

// mayMatchUnder reports whether a rule pattern could match something at or
// below prefix (a path whose rest is unknown, e.g. the static part of a
// glob): the pattern matches prefix or one of its ancestors, or the
// pattern's static base starts with prefix.
func mayMatchUnder(pattern, prefix string) bool {
	if pathMatch(pattern, prefix, true) {
		return true
	}
	base, _ := doublestar.SplitPattern(pattern)
	return strings.HasPrefix(base, prefix) || strings.HasPrefix(prefix, base+"/") && strings.Contains(pattern, "**")
}

// bashDirs are the directories relative paths of prog may resolve from:
// the working directory and every directory a cd/pushd changes to, both
// as the shell names it (cd is logical: "cd notes/.." is the project) and,
// with a file system, where it really is. known is false when a change of
// directory cannot be known (or resolved).
func (s Scope) bashDirs(prog *bashscan.Program) (dirs []string, known bool) {
	dirs, known = []string{s.WorkingDir}, s.WorkingDir != ""
	for _, dc := range prog.DirChanges() {
		if !dc.Known {
			known = false
			continue
		}
		for _, d := range append([]string(nil), dirs...) {
			raw, ok := s.join(d, dc.Target.Text)
			if !ok {
				continue
			}
			dirs = addName(dirs, path.Clean(raw))
			if s.res == nil {
				continue
			}
			phys, err := s.res.resolve(raw)
			if err != nil {
				known = false
				continue
			}
			dirs = addName(dirs, phys)
		}
	}
	return dirs, known
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// BashPath resolves a path word of a Bash program. It returns the absolute
// candidates (for every directory the program may be in: where the path
// leads, under the trusted names first, then as resolved and as written)
// and whether the path is exactly known (one place it leads). For a glob
// word the candidates are the static part before the first pattern
// character, under which anything may be named (its directory part
// resolved, a partial last name appended as written), and, with a file
// system, every path the glob names now, each resolved: "no*" matching
// notes -> .. names the parent. A computed word, or one that cannot be
// resolved (a link loop) or expanded (over MaxGlobEntries), has no
// candidates: it may be anywhere.
func (s Scope) BashPath(prog *bashscan.Program, w bashscan.Word) (cands []string, exact bool) {
	if !w.Static {
		return nil, false
	}
	dirs, known := s.bashDirs(prog)
	t, partial := w.Text, ""
	if w.Glob {
		if i := strings.IndexAny(t, "*?[{"); i >= 0 {
			t = t[:i]
		}
		if j := strings.LastIndex(t, "/"); j >= 0 {
			t, partial = t[:j+1], t[j+1:]
		} else {
			t, partial = "", t
		}
		if t == "" {
			t = "."
		}
	}
	absolute := w.Tilde || path.IsAbs(t) || strings.HasPrefix(t, "~")
	progDirs := dirs
	if absolute {
		dirs = []string{""}
	}
	withPartial := func(p, partial string) string {
		if partial == "" {
			return p
		}
		return path.Join(p, partial)
	}
	var resolved, phys, lexical nameSet
	add := func(n pathNames, partial string) {
		lexical.add(withPartial(n.lexical, partial))
		for _, p := range n.phys {
			resolved.add(withPartial(s.display(p), partial))
			phys.add(withPartial(p, partial))
		}
	}
	for _, d := range dirs {
		n, ok := s.names(d, t)
		if !ok {
			continue
		}
		if n.err != nil {
			return nil, false
		}
		add(n, partial)
		if !w.Glob || s.res == nil {
			continue
		}
		// What the glob names now, each resolved: a match may be a link.
		raw, _ := s.join(d, w.Text)
		matches, ok := s.res.glob(raw)
		if !ok {
			return nil, false
		}
		for _, m := range matches {
			mn := s.namesOf(m, false)
			if mn.err != nil {
				return nil, false
			}
			// A match that stays under where the static part leads is
			// already a candidate ("anything under it"); one that leaves
			// it (a link, "..") is a candidate of its own.
			if !withinAny(mn.phys, n.phys) {
				add(mn, "")
			}
		}
	}
	if len(resolved.list) == 0 {
		return nil, false
	}
	if s.res != nil && s.throughMadeLink(prog, w, progDirs, append(resolved.list, append(phys.list, lexical.list...)...)) {
		return nil, false
	}
	exact = !w.Glob && len(resolved.list) == 1 && (absolute || known)
	all := resolved
	for _, c := range append(phys.list, lexical.list...) {
		all.add(c)
	}
	return all.list, exact
}

// withinAny: every path of ps lies within one of dirs.
func withinAny(ps, dirs []string) bool {
	for _, p := range ps {
		in := false
		for _, d := range dirs {
			if within(p, d) {
				in = true
				break
			}
		}
		if !in {
			return false
		}
	}
	return true
}

// linkMakers are the commands whose operands may become symbolic links
// while the program runs: ln makes them; cp (-R, -a, -P, -d), mv and rsync
// carry them over. (Others, like tar, unzip or git checkout, are not
// modelled.)
var linkMakers = map[string]bool{"ln": true, "cp": true, "mv": true, "rsync": true}

// throughMadeLink reports whether a path word (with the names of its
// candidates) may lead through a link another command of the program makes
// ("ln -s ~ x && echo > x/.bashrc", "cp -R notes copy && echo >
// copy/.bashrc", "mv /tmp/l x; echo > x"): at or under a place a link
// maker may create, or anywhere when such a command's operand is computed.
// Its resolution at decision time says nothing then. A link maker creates
// its last operand, or, when that is an existing directory, the base name
// of each other operand in it; "ln -s t" creates ./base(t). Options that
// move the destination (-t DIR) are not modelled.
func (s Scope) throughMadeLink(prog *bashscan.Program, w bashscan.Word, dirs, names []string) bool {
	ops := map[int][]bashscan.Word{}
	var wordCmd = -2
	for _, r := range prog.PathRefs() {
		if r.Path.Pos == w.Pos && r.Path.Text == w.Text {
			wordCmd = r.Command
		}
		if r.Command >= 0 && linkMakers[prog.Commands[r.Command].BaseName()] {
			ops[r.Command] = append(ops[r.Command], r.Path)
		}
	}
	hits := func(raw string) bool {
		n := s.namesOf(raw, false)
		for _, m := range append([]string{n.lexical}, n.phys...) {
			for _, c := range names {
				if within(c, m) {
					return true
				}
			}
		}
		return false
	}
	for cmd, words := range ops {
		if cmd == wordCmd {
			continue
		}
		for _, o := range words {
			if !o.Static {
				return true
			}
		}
		dest := words[len(words)-1]
		var made []string // relative to the directory the command runs in
		switch {
		case len(words) == 1 && prog.Commands[cmd].BaseName() == "ln":
			made = []string{path.Base(dest.Text)}
		case len(words) == 1:
			continue
		default:
			made = []string{dest.Text}
		}
		at := dirs
		if path.IsAbs(dest.Text) || strings.HasPrefix(dest.Text, "~") {
			at = []string{""}
		}
		for _, d := range at {
			for _, m := range made {
				raw, ok := s.join(d, m)
				if !ok {
					return true
				}
				if len(words) > 1 && s.isDir(raw) {
					// Into an existing directory: each operand's base name.
					for _, src := range words[:len(words)-1] {
						if hits(raw + "/" + path.Base(src.Text)) {
							return true
						}
					}
					continue
				}
				if hits(raw) {
					return true
				}
			}
		}
	}
	return false
}

// isDir: raw leads to an existing directory now (false when unknown: the
// caller then treats everything at or under raw as made).
func (s Scope) isDir(raw string) bool {
	phys, err := s.res.lookup(raw, false)
	if err != nil {
		return false
	}
	fi, err := s.res.fs.Lstat(phys)
	return err == nil && fi.IsDir()
}

// nameSet is an ordered set of names.
type nameSet struct {
	list []string
	seen map[string]bool
}

func (n *nameSet) add(s string) {
	if n.seen == nil {
		n.seen = map[string]bool{}
	}
	if !n.seen[s] {
		n.seen[s] = true
		n.list = append(n.list, s)
	}
}

// contained reports whether every place a Bash path word may name lies in
// the project scope: static, every directory the program may be in known,
// every name (as written and where it leads) in scope, and for a glob, a
// static directory part in scope with no "..".
func (s Scope) contained(prog *bashscan.Program, w bashscan.Word) bool {
	if !w.Static {
		return false
	}
	if w.Glob && strings.Contains(w.Text, "..") {
		return false
	}
	cands, exact := s.BashPath(prog, w)
	if len(cands) == 0 {
		return false
	}
	if !exact && !w.Glob {
		if _, known := s.bashDirs(prog); !known {
			return false
		}
	}
	if w.Glob {
		if _, known := s.bashDirs(prog); !known && !path.IsAbs(w.Text) && !w.Tilde {
			return false
		}
	}
	for _, c := range cands {
		if !s.Contains(c) {
			return false
		}
	}
	return true
}
