package permission

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"sync"

	"github.com/bmatcuk/doublestar/v4"
)

// MaxLinks bounds the symbolic links followed while resolving one path
// (Linux's MAXSYMLINKS). More is a loop: the path cannot be resolved.
const MaxLinks = 40

// ResolveError: a path cannot be resolved against the file system (a link
// loop, too many links, a component that cannot be examined). A path that
// cannot be resolved cannot be shown to lie anywhere: it is never in the
// project scope, and a deny rule might match it.
type ResolveError struct {
	Path string
	Err  error
}

func (e *ResolveError) Error() string { return fmt.Sprintf("cannot resolve %s: %v", e.Path, e.Err) }
func (e *ResolveError) Unwrap() error { return e.Err }

// Errors a *ResolveError wraps (besides the file system's own).
var (
	ErrLinkLoop    = fmt.Errorf("more than %d symbolic links (a link loop)", MaxLinks)
	ErrLinkEmpty   = errors.New("a symbolic link with an empty target")
	ErrNotAbsolute = errors.New("not an absolute path")
)

// Physical resolves the absolute path p as the kernel does: component by
// component from "/", following every symbolic link (relative targets from
// the link's directory), with ".." taken physically (the parent of where a
// link led, not of the link's name: "notes/../x" with notes -> /etc is
// /x). The first component that does not exist ends the lookup; the rest
// is appended as written, since a write may create it (".." after a
// missing component goes back up, where lookup resumes). p is not cleaned
// first: cleaning "notes/../x" to "x" would be wrong for a link.
//
// It reads the file system only through fsys (Lstat and Readlink) and
// returns a *ResolveError for a loop or a component that cannot be
// examined.
func Physical(fsys FS, p string) (string, error) {
	if !path.IsAbs(p) {
		return "", &ResolveError{Path: p, Err: ErrNotAbsolute}
	}
	todo := strings.Split(p, "/")
	cur := "/"
	missing := 0 // trailing components of cur that do not exist
	links := 0
	for len(todo) > 0 {
		name := todo[0]
		todo = todo[1:]
		switch name {
		case "", ".":
			continue
		case "..":
			cur = path.Dir(cur)
			if missing > 0 {
				missing--
			}
			continue
		}
		next := path.Join(cur, name)
		if missing > 0 {
			cur, missing = next, missing+1
			continue
		}
		fi, err := fsys.Lstat(next)
		switch {
		case errors.Is(err, fs.ErrNotExist) || isNotDir(err):
			cur, missing = next, 1
			continue
		case err != nil:
			return "", &ResolveError{Path: p, Err: err}
		case fi.Mode()&fs.ModeSymlink == 0:
			cur = next
			continue
		}
		links++
		if links > MaxLinks {
			return "", &ResolveError{Path: p, Err: ErrLinkLoop}
		}
		target, err := fsys.Readlink(next)
		if err != nil {
			return "", &ResolveError{Path: p, Err: err}
		}
		if target == "" {
			return "", &ResolveError{Path: p, Err: fmt.Errorf("%s: %w", next, ErrLinkEmpty)}
		}
		if path.IsAbs(target) {
			cur = "/"
		}
		todo = append(strings.Split(target, "/"), todo...)
	}
	return cur, nil
}

// resolver resolves paths for one decision, remembering each result so a
// path is looked up once per decision and the decision can record what it
// judged (Decision.Resolutions). The paths a glob expanded to are looked
// up but not recorded: revalidation expands the glob again and judges
// what it names then.
type resolver struct {
	fs       FS
	mu       sync.Mutex
	memo     map[string]resolved
	recorded map[string]bool
	globs    map[string]globbed
}

type globbed struct {
	matches []string
	ok      bool
}

type resolved struct {
	phys string
	err  error
}

func newResolver(fsys FS) *resolver {
	return &resolver{fs: fsys, memo: map[string]resolved{}, recorded: map[string]bool{}, globs: map[string]globbed{}}
}

// glob expands pattern once per decision (globMatches).
func (r *resolver) glob(pattern string) ([]string, bool) {
	r.mu.Lock()
	g, ok := r.globs[pattern]
	r.mu.Unlock()
	if ok {
		return g.matches, g.ok
	}
	m, expanded := r.globMatches(pattern)
	r.mu.Lock()
	r.globs[pattern] = globbed{m, expanded}
	r.mu.Unlock()
	return m, expanded
}

// resolve resolves p and records the result.
func (r *resolver) resolve(p string) (string, error) { return r.lookup(p, true) }

func (r *resolver) lookup(p string, record bool) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if record {
		r.recorded[p] = true
	}
	if v, ok := r.memo[p]; ok {
		return v.phys, v.err
	}
	phys, err := Physical(r.fs, p)
	r.memo[p] = resolved{phys, err}
	return phys, err
}

// resolutions lists every recorded resolution, sorted by path.
func (r *resolver) resolutions() []PathResolution {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]PathResolution, 0, len(r.recorded))
	for p := range r.recorded {
		v := r.memo[p]
		out = append(out, pathResolution(p, v.phys, v.err))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

func pathResolution(p, phys string, err error) PathResolution {
	if err != nil {
		var re *ResolveError
		if errors.As(err, &re) {
			err = re.Err
		}
		return PathResolution{Path: p, Error: err.Error()}
	}
	if phys == p {
		return PathResolution{Path: p} // resolves to itself
	}
	return PathResolution{Path: p, Resolved: phys}
}

// PathResolution is how a path the decision judged resolved through the
// file system at decision time: Resolved (empty: to Path itself), or Error
// when it could not be resolved. Revalidation resolves Path again and
// denies on any difference.
type PathResolution struct {
	Path     string `json:"path"`
	Resolved string `json:"resolved,omitempty"`
	Error    string `json:"error,omitempty"`
}

func (r PathResolution) String() string {
	switch {
	case r.Error != "":
		return "unresolvable (" + r.Error + ")"
	case r.Resolved == "":
		return r.Path
	}
	return r.Resolved
}

// ResolutionError: a path resolves differently than when the decision was
// made (a link was created, removed or swapped since).
type ResolutionError struct {
	Path     string
	Was, Now PathResolution
}

func (e *ResolutionError) Error() string {
	return fmt.Sprintf("%s resolved to %s when the call was decided and now resolves to %s", e.Path, e.Was, e.Now)
}

// CheckResolutions resolves every recorded path again and returns a
// *ResolutionError for the first that resolves differently.
func CheckResolutions(fsys FS, rs []PathResolution) error {
	for _, was := range rs {
		phys, err := Physical(fsys, was.Path)
		now := pathResolution(was.Path, phys, err)
		if now != was {
			return &ResolutionError{Path: was.Path, Was: was, Now: now}
		}
	}
	return nil
}

// MaxResolutions bounds the paths one decision can record. A call that
// names more cannot be bound to where its paths led and is denied
// (CodeTooManyPaths): split it.
const MaxResolutions = 1024

// MaxGlobEntries bounds the directory entries one glob expansion examines;
// a larger expansion cannot be known and is judged like a computed path.
const MaxGlobEntries = 4096

// globMatches lists the existing paths a glob (an absolute, uncleaned
// pattern) names, component by component: a literal component is kept as
// written, a pattern component is matched against the entries of the
// directory where the path so far leads (hidden entries included: a
// superset of what the shell expands). Every match is then resolved like
// any path, so a glob cannot reach through a link (no* matching notes ->
// ..) what its static part would not show. ok is false when the glob
// cannot be expanded within MaxGlobEntries, a directory cannot be read for
// another reason than not existing, or the pattern is not understood (a
// brace spanning a "/").
func (r *resolver) globMatches(pattern string) ([]string, bool) {
	cur := []string{""}
	budget := MaxGlobEntries
	for _, c := range strings.Split(pattern, "/") {
		if c == "" || c == "." {
			continue
		}
		if !strings.ContainsAny(c, "*?[{") {
			for i := range cur {
				cur[i] += "/" + c
			}
			continue
		}
		var next []string
		for _, d := range cur {
			dir := d
			if dir == "" {
				dir = "/"
			}
			phys, err := r.lookup(dir, false)
			if err != nil {
				return nil, false
			}
			ents, err := r.fs.ReadDir(phys)
			if errors.Is(err, fs.ErrNotExist) || isNotDir(err) {
				continue
			}
			if err != nil {
				return nil, false
			}
			for _, e := range ents {
				if budget--; budget < 0 {
					return nil, false
				}
				ok, err := doublestar.Match(c, e.Name())
				if err != nil {
					return nil, false
				}
				if !ok {
					continue
				}
				m := d + "/" + e.Name()
				next = append(next, m)
				if e.Type()&fs.ModeSymlink == 0 {
					// Not a link: it leads where its directory does.
					r.mu.Lock()
					if _, known := r.memo[m]; !known {
						r.memo[m] = resolved{phys: path.Join(phys, e.Name())}
					}
					r.mu.Unlock()
				}
			}
		}
		if len(next) == 0 {
			return nil, true
		}
		cur = next
	}
	return cur, true
}
