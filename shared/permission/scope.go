package permission

import (
	"path"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/openprogram/lifecycle/shared/permission/bashscan"
)

// Scope resolves paths in the trusted context and answers whether a path
// lies in the project scope. Paths are compared lexically (cleaned, not
// resolved through symbolic links): the executor runs in that same context.
type Scope struct {
	WorkingDir  string
	ProjectRoot string
	HomeDir     string
	// Dirs are the directories of the project scope: the root first, then
	// the policy's additional directories.
	Dirs []string
}

// NewScope builds the scope of a trusted context and a policy's additional
// directories.
func NewScope(t Trusted, additional []string) Scope {
	s := Scope{WorkingDir: cleanAbs(t.WorkingDir), ProjectRoot: cleanAbs(t.ProjectRoot), HomeDir: cleanAbs(t.HomeDir)}
	if s.ProjectRoot != "" {
		s.Dirs = append(s.Dirs, s.ProjectRoot)
	}
	for _, d := range additional {
		if c := cleanAbs(d); c != "" {
			s.Dirs = append(s.Dirs, c)
		}
	}
	return s
}

func cleanAbs(p string) string {
	if p == "" || !path.IsAbs(p) {
		return ""
	}
	return path.Clean(p)
}

// Resolve makes p absolute: "~" and "~/x" from the home directory, relative
// paths from the working directory. ok is false when p cannot be resolved
// ("~user", "~" without a home directory, a relative path without a
// working directory).
func (s Scope) Resolve(p string) (string, bool) {
	return s.resolveFrom(s.WorkingDir, p)
}

func (s Scope) resolveFrom(dir, p string) (string, bool) {
	switch {
	case p == "~" || strings.HasPrefix(p, "~/"):
		if s.HomeDir == "" {
			return "", false
		}
		return path.Clean(s.HomeDir + p[1:]), true
	case strings.HasPrefix(p, "~"):
		return "", false
	case path.IsAbs(p):
		return path.Clean(p), true
	case dir == "":
		return "", false
	}
	return path.Clean(path.Join(dir, p)), true
}

// Contains reports whether the absolute path abs lies in the project scope.
func (s Scope) Contains(abs string) bool {
	for _, d := range s.Dirs {
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
// the working directory and every directory a cd/pushd changes to. known
// is false when a change of directory cannot be known.
func (s Scope) bashDirs(prog *bashscan.Program) (dirs []string, known bool) {
	dirs, known = []string{s.WorkingDir}, s.WorkingDir != ""
	for _, dc := range prog.DirChanges() {
		if !dc.Known {
			known = false
			continue
		}
		for _, d := range append([]string(nil), dirs...) {
			if abs, ok := s.resolveFrom(d, dc.Target.Text); ok && !contains(dirs, abs) {
				dirs = append(dirs, abs)
			}
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
// candidates (one per directory the program may be in) and whether the
// path is exactly known. For a glob word the candidate is the static part
// before the first pattern character, under which anything may be named;
// a computed word, or one that cannot be resolved, has no candidates.
func (s Scope) BashPath(prog *bashscan.Program, w bashscan.Word) (cands []string, exact bool) {
	if !w.Static {
		return nil, false
	}
	dirs, known := s.bashDirs(prog)
	t := w.Text
	if w.Glob {
		if i := strings.IndexAny(t, "*?[{"); i >= 0 {
			t = t[:i]
		}
		if t == "" {
			t = "."
		}
	}
	if w.Tilde || path.IsAbs(t) {
		abs, ok := s.Resolve(t)
		if !ok {
			return nil, false
		}
		return []string{abs}, !w.Glob
	}
	for _, d := range dirs {
		if abs, ok := s.resolveFrom(d, t); ok && !contains(cands, abs) {
			cands = append(cands, abs)
		}
	}
	return cands, !w.Glob && known && len(cands) == 1
}

// contained reports whether every place a Bash path word may name lies in
// the project scope: static, every directory the program may be in known,
// and for a glob, a static directory part in scope with no "..".
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
