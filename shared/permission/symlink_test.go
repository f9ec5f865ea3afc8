package permission_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/permission"
	"github.com/openprogram/lifecycle/shared/permission/riskreview"
)

// linkWorld is a home directory holding a project that ships symbolic
// links, on the real file system:
//
//	home/.ssh/deploy_key  home/.bashrc  home/secret.txt
//	home/proj/src/main.go  home/proj/README.md
//	home/proj/notes -> ..             (the home directory)
//	home/proj/rootlink -> /
//	home/proj/homelink -> <home>      (absolute)
//	home/proj/inside -> src           (stays in the project)
//	home/proj/dangling -> missing.txt (inside, target absent)
//	home/proj/dangling-out -> ../nowhere.txt
//	home/proj/loop -> loop, ping -> pong -> ping
//	base/alias -> home/proj           (the project reached through a link)
type linkWorld struct{ base, home, proj string }

func newLinkWorld(t *testing.T) linkWorld {
	t.Helper()
	base := t.TempDir() // deliberately not resolved: a linked TMPDIR exercises the aliases
	w := linkWorld{base: base, home: filepath.Join(base, "home")}
	w.proj = filepath.Join(w.home, "proj")
	for _, d := range []string{filepath.Join(w.home, ".ssh"), filepath.Join(w.proj, "src")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		filepath.Join(w.home, ".ssh", "deploy_key"): "PRIVATE",
		filepath.Join(w.home, ".bashrc"):            "# rc",
		filepath.Join(w.home, "secret.txt"):         "secret",
		filepath.Join(w.proj, "src", "main.go"):     "package main",
		filepath.Join(w.proj, "README.md"):          "readme",
	}
	for p, c := range files {
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		"notes": "..", "rootlink": "/", "homelink": w.home, "inside": "src",
		"dangling": "missing.txt", "dangling-out": "../nowhere.txt",
		"loop": "loop", "ping": "pong", "pong": "ping",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(w.proj, name)); err != nil {
			t.Skipf("symbolic links are not available: %v", err)
		}
	}
	if err := os.Symlink(w.proj, filepath.Join(base, "alias")); err != nil {
		t.Fatal(err)
	}
	return w
}

func (w linkWorld) trusted(root string) permission.Trusted {
	return permission.Trusted{SessionID: "ses_links", WorkingDir: root, ProjectRoot: root, HomeDir: w.home, Interactive: true}
}

func linkEngine(t *testing.T, auto bool) *permission.Engine {
	t.Helper()
	// The credential stores are not protected here: these cases test how
	// links are resolved against the rules and the project, and a link
	// world whose home holds ~/.ssh would otherwise meet the hard
	// constraint first (protect_test.go covers protected paths through
	// links: notes -> .., a link into the state directory).
	cfg := permission.Config{FS: permission.OSFS{}, ReviewTimeout: 5 * time.Second, CredentialStores: []string{}}
	if auto {
		cfg.Classifier, cfg.Counters = riskreview.New(), openStore(t)
	}
	e, err := permission.NewEngine(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

type linkCase struct {
	name string
	mode permission.Mode
	tool string // "Bash" with cmd, or a file tool with path
	path string
	cmd  string
	cwd  string // the Bash tool's cwd argument
	want lifecycle.Permission
	code permission.Code // checked when set
}

func (tc linkCase) call() permission.Call {
	switch tc.tool {
	case "Bash", "":
		if tc.cwd != "" {
			return permission.Call{ActionID: newAction(), Tool: "Bash", Args: args("command", tc.cmd, "cwd", tc.cwd)}
		}
		return bashCall(tc.cmd)
	case "Glob": // path is the pattern
		return toolCall("Glob", "pattern", tc.path)
	}
	return toolCall(tc.tool, "file_path", tc.path, "content", "x", "old_string", "a", "new_string", "b")
}

// The rules every case runs under: credentials and the shell's rc file are
// denied; echo, cat, cp, cd, ln, mv and mkdir are allowed.
var linkRules = []string{
	"deny: Read(~/.ssh/**)", "deny: Edit(~/.bashrc)",
	"allow: Bash(echo *)", "allow: Bash(cat *)", "allow: Bash(cp *)", "allow: Bash(cd *)",
	"allow: Bash(ln *)", "allow: Bash(mv *)", "allow: Bash(mkdir *)",
}

func runLinkCases(t *testing.T, e *permission.Engine, tr permission.Trusted, rules []string, cases []linkCase) {
	t.Helper()
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr := tr
			// One session per case: refusal counters are per session.
			tr.SessionID = ids.SessionID(fmt.Sprintf("ses_links%03d", i))
			mode := tc.mode
			if mode == "" {
				mode = permission.ModeDefault
			}
			req := permission.Request{Trusted: tr, Call: tc.call(), Policy: policy(t, "v1", mode, rules...)}
			done := make(chan struct{})
			var d permission.Decision
			var err error
			go func() { d, err = e.Decide(context.Background(), req); close(done) }()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("Decide did not return (a link loop?)")
			}
			if err != nil {
				t.Fatal(err)
			}
			if d.Permission != tc.want || tc.code != "" && d.Reason.Code != tc.code {
				t.Fatalf("%s %s%s: got %s (%s/%s: %s), want %s %s", tc.tool, tc.path, tc.cmd, d.Permission,
					d.Reason.Source, d.Reason.Code, d.Reason.Detail, tc.want, tc.code)
			}
			if d.Permission != deny && len(d.Resolutions) == 0 {
				t.Errorf("an %s decision recorded no path resolutions", d.Permission)
			}
		})
	}
}

func TestSymlinksFileTools(t *testing.T) {
	w := newLinkWorld(t)
	e := linkEngine(t, false)
	edits := permission.ModeAcceptEdits
	runLinkCases(t, e, w.trusted(w.proj), linkRules, []linkCase{
		{name: "read in the project", tool: "Read", path: "src/main.go", want: allow, code: permission.CodeReadOnlyInScope},
		{name: "read through a link that stays inside", tool: "Read", path: "inside/main.go", want: allow, code: permission.CodeReadOnlyInScope},
		{name: "read through notes -> .. leaves the project", tool: "Read", path: "notes/secret.txt", want: ask, code: permission.CodeNoRule},
		{name: "absolute path through notes -> ..", tool: "Read", path: w.proj + "/notes/secret.txt", want: ask, code: permission.CodeNoRule},
		{name: "deny rule matches the resolved path", tool: "Read", path: "notes/.ssh/deploy_key", want: deny, code: permission.CodeDenyRule},
		{name: "link -> $HOME", tool: "Read", path: "homelink/.ssh/deploy_key", want: deny, code: permission.CodeDenyRule},
		{name: "link -> /", tool: "Read", path: "rootlink/etc/hostname", want: ask, code: permission.CodeNoRule},
		{name: "dangling link to inside", tool: "Read", path: "dangling", want: allow},
		{name: "dangling link to outside", tool: "Read", path: "dangling-out", want: ask, code: permission.CodeNoRule},
		{name: "link loop never allowed", tool: "Read", path: "loop/x", want: ask, code: permission.CodeUnverifiable},
		{name: "two-link loop never allowed", tool: "Read", path: "ping", want: ask},
		{name: ".. after a link is not cleaned away", tool: "Read", path: "rootlink/../README.md", want: ask},
		{name: ".. without a link stays exact", tool: "Read", path: "src/../README.md", want: allow},
		{name: "Glob pattern through a link to a denied directory", tool: "Glob", path: "notes/.ssh/*", want: deny, code: permission.CodeDenyRule},
		{name: "Glob pattern through a link out", tool: "Glob", path: "notes/*.txt", want: ask},
		{name: "Glob pattern inside", tool: "Glob", path: "src/**/*.go", want: allow},

		{name: "acceptEdits in the project", mode: edits, tool: "Edit", path: "src/main.go", want: allow, code: permission.CodeEditInScope},
		{name: "acceptEdits through an inside link", mode: edits, tool: "Write", path: "inside/new.go", want: allow, code: permission.CodeEditInScope},
		{name: "acceptEdits through notes -> ..", mode: edits, tool: "Write", path: "notes/new.txt", want: ask, code: permission.CodeNoRule},
		{name: "acceptEdits: deny rule on the resolved rc file", mode: edits, tool: "Write", path: "notes/.bashrc", want: deny, code: permission.CodeDenyRule},
		{name: "acceptEdits: write through a dangling link to outside", mode: edits, tool: "Write", path: "dangling-out", want: ask, code: permission.CodeNoRule},
		{name: "acceptEdits: write through a dangling link to inside", mode: edits, tool: "Write", path: "dangling", want: allow},
		{name: "acceptEdits: loop", mode: edits, tool: "Write", path: "loop", want: ask},
		{name: "acceptEdits: .. after a link", mode: edits, tool: "Write", path: "rootlink/../x", want: ask},
	})
}

func TestSymlinksBash(t *testing.T) {
	w := newLinkWorld(t)
	e := linkEngine(t, false)
	runLinkCases(t, e, w.trusted(w.proj), linkRules, []linkCase{
		{name: "redirection in the project", cmd: "echo x >> marker", want: allow, code: permission.CodeAllowRule},
		{name: "redirection through an inside link", cmd: "echo x > inside/out.txt", want: allow},
		{name: "redirection through notes -> .. to the rc file", cmd: "echo x >> notes/.bashrc", want: deny, code: permission.CodeDenyRule},
		{name: "redirection through notes -> ..", cmd: "echo x >> notes/marker", want: ask, code: permission.CodeNoRule},
		{name: "redirection through link -> /", cmd: "echo x > rootlink/tmp/marker", want: ask},
		{name: "redirection through link -> $HOME", cmd: "echo x > homelink/marker", want: ask},
		{name: "redirection through a dangling link to outside", cmd: "echo x > dangling-out", want: ask},
		{name: "redirection into a loop", cmd: "echo x > loop/x", want: ask},
		{name: ".. after a link (lexically in the project)", cmd: "echo x > notes/../proj/marker", want: ask},
		{name: ".. after link -> /", cmd: "echo x > rootlink/../marker", want: ask},
		{name: ".. without a link", cmd: "echo x > src/../marker", want: allow},
		{name: "cat through notes -> .. to a key", cmd: "cat notes/.ssh/deploy_key", want: deny, code: permission.CodeDenyRule},
		{name: "cat through link -> $HOME", cmd: "cat homelink/.ssh/deploy_key", want: deny, code: permission.CodeDenyRule},
		{name: "input redirection through notes", cmd: "cat < notes/.ssh/deploy_key", want: deny, code: permission.CodeDenyRule},
		{name: "cp reads a key through notes", cmd: "cp notes/.ssh/deploy_key stolen", want: deny, code: permission.CodeDenyRule},
		{name: "cp writes through notes", cmd: "cp src/main.go notes/copy.go", want: ask},
		{name: "cp inside", cmd: "cp src/main.go inside/copy.go", want: allow},
		{name: "cd notes, then a relative read", cmd: "cd notes && cat .ssh/deploy_key", want: ask, code: permission.CodeUnverifiable},
		{name: "cd notes, then a relative write", cmd: "cd notes && echo x > marker", want: ask},
		{name: "cd into an inside link, then write", cmd: "cd inside && echo x > out.txt", want: allow},
		{name: "glob whose static part is a link out", cmd: "cat notes/.ss*/*", want: ask, code: permission.CodeUnverifiable},
		{name: "glob write through a link out", cmd: "echo x > notes/*.txt", want: ask},
		{name: "glob that matches a link out", cmd: "cat no*/.ssh/deploy_key", want: ask, code: permission.CodeUnverifiable},
		{name: "glob over every entry, links included", cmd: "cat */.ssh/deploy_key", want: ask, code: permission.CodeUnverifiable},
		{name: "glob destination matching a link out", cmd: "cp src/main.go no*", want: ask},
		{name: "glob inside the project", cmd: "cat src/*.go inside/*", want: allow},
		{name: "glob copy inside the project", cmd: "cp src/*.go inside/", want: allow},
		{name: "link made by the program, then written through", cmd: "ln -s ~ x && echo x >> x/.bashrc", want: ask},
		{name: "link to a file made, then written", cmd: "ln -s ../.bashrc rc; echo x >> rc", want: ask},
		{name: "one-operand ln, then written through", cmd: "ln -s ~/secret.txt && echo x >> secret.txt", want: ask},
		{name: "one-operand ln of a denied place", cmd: "ln -s ~/.ssh && cat .ssh/deploy_key", want: deny, code: permission.CodeDenyRule},
		{name: "cp -R copies notes -> .. as a link", cmd: "cp -R notes copy && echo x > copy/.bashrc", want: ask},
		{name: "mv brings a link in", cmd: "mv /tmp/prepared y; echo x > y", want: ask},
		{name: "cp into an existing directory makes its entries", cmd: "cp -R notes src && echo x > src/notes/marker", want: ask},
		{name: "cp into a directory leaves other names known", cmd: "cp -R notes src && echo x > src/other.txt", want: allow},
		{name: "copy and an unrelated write", cmd: "cp src/main.go src/copy.go && echo x > out.txt", want: allow},
		{name: "mkdir makes no link", cmd: "mkdir -p build && echo x > build/out.txt", want: allow},
		{name: "cwd argument: relative paths start there", cwd: "src", cmd: "cat ../../.ssh/deploy_key", want: deny, code: permission.CodeDenyRule},
		{name: "cwd argument through an inside link", cwd: "inside", cmd: "cat ../../.ssh/deploy_key", want: deny, code: permission.CodeDenyRule},
		{name: "cwd argument through notes -> ..", cwd: "notes", cmd: "echo x > marker", want: ask},
		{name: "cwd argument inside", cwd: "src", cmd: "echo x > out.txt", want: allow},
		{name: "cwd argument into a loop", cwd: "loop", cmd: "echo x > out.txt", want: ask},
		{name: "an absolute path beside a copy", cmd: "cp src/main.go src/copy.go && echo x > " + w.proj + "/out.txt", want: allow},
		{name: "an absolute path through a made link", cmd: "ln -s ~ x && echo x > " + w.proj + "/x/.profile", want: ask},
	})
}

// Auto mode: the built-in reviewer judges the resolved paths too. (Its
// writes outside the project are not tested here: it treats temporary
// directories as writable, and the test's home lives in one.)
func TestSymlinksAutoReview(t *testing.T) {
	w := newLinkWorld(t)
	e := linkEngine(t, true)
	auto := permission.ModeAuto
	runLinkCases(t, e, w.trusted(w.proj), nil, []linkCase{
		{name: "cat in the project", mode: auto, cmd: "cat src/main.go", want: allow},
		{name: "cat a key through notes -> ..", mode: auto, cmd: "cat notes/.ssh/deploy_key", want: deny, code: permission.CodeClassifierBlock},
		{name: "cp a key through link -> $HOME", mode: auto, cmd: "cp homelink/.ssh/deploy_key /dev/null", want: deny, code: permission.CodeClassifierBlock},
		{name: "Read a key through notes -> ..", mode: auto, tool: "Read", path: "notes/.ssh/deploy_key", want: deny, code: permission.CodeClassifierBlock},
		{name: "Write a key through notes -> ..", mode: auto, tool: "Write", path: "notes/.ssh/deploy_key", want: deny, code: permission.CodeClassifierBlock},
	})
}

// A trusted project root that is itself reached through a link (a linked
// TMPDIR, /tmp -> /private/tmp) keeps its scope and its rules; links inside
// it are still judged by where they lead.
func TestSymlinksTrustedRootThroughLink(t *testing.T) {
	w := newLinkWorld(t)
	e := linkEngine(t, false)
	rules := append([]string{"allow: Edit(./src/**)"}, linkRules...)
	runLinkCases(t, e, w.trusted(filepath.Join(w.base, "alias")), rules, []linkCase{
		{name: "read in the project", tool: "Read", path: "src/main.go", want: allow, code: permission.CodeReadOnlyInScope},
		{name: "allow rule relative to the linked root", tool: "Write", path: "src/new.go", want: allow, code: permission.CodeAllowRule},
		{name: "allow rule through an inside link", tool: "Write", path: "inside/new.go", want: allow, code: permission.CodeAllowRule},
		{name: "notes -> .. still leaves it", tool: "Read", path: "notes/secret.txt", want: ask},
		{name: "bash write in the project", cmd: "echo x > out.txt", want: allow},
		{name: "bash write through notes", cmd: "echo x > notes/out.txt", want: ask},
	})
}

// An allow rule names a place, not whatever a link shipped under it leads
// to: Edit(./docs/**) does not allow a write through docs -> $HOME.
func TestSymlinksAllowRuleIsNotFollowed(t *testing.T) {
	w := newLinkWorld(t)
	if err := os.Symlink(w.home, filepath.Join(w.proj, "docs")); err != nil {
		t.Fatal(err)
	}
	e := linkEngine(t, false)
	runLinkCases(t, e, w.trusted(w.proj), []string{"allow: Edit(./docs/**)", "allow: Read(./docs/**)"}, []linkCase{
		{name: "write through a link under an allowed directory", tool: "Write", path: "docs/.profile", want: ask},
		{name: "read through it", tool: "Read", path: "docs/secret.txt", want: ask},
	})
}

// A deny rule matches the path as written as well as where it leads.
func TestSymlinksDenyMatchesWrittenName(t *testing.T) {
	w := newLinkWorld(t)
	if err := os.Symlink(w.home, filepath.Join(w.proj, "docs")); err != nil {
		t.Fatal(err)
	}
	e := linkEngine(t, false)
	runLinkCases(t, e, w.trusted(w.proj), []string{"deny: Read(./docs/**)", "allow: Bash(cat *)", "allow: Read"}, []linkCase{
		{name: "file tool", tool: "Read", path: "docs/secret.txt", want: deny, code: permission.CodeDenyRule},
		{name: "bash", cmd: "cat docs/secret.txt", want: deny, code: permission.CodeDenyRule},
		{name: "where it leads is not denied", tool: "Read", path: "notes/secret.txt", want: allow},
	})
}

// Revalidation resolves the recorded paths again: a directory replaced by
// a link between decision and dispatch denies the call, naming the path.
func TestSymlinksRevalidate(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name   string
		engine func(t *testing.T) *permission.Engine
		call   func() permission.Call
		mode   permission.Mode
		swap   func(t *testing.T, w linkWorld, sub string)
		want   string // "allow" or a denial code
	}{
		{name: "unchanged", call: func() permission.Call { return bashCall("echo x > sub/out.txt") },
			swap: func(*testing.T, linkWorld, string) {}, want: "allow"},
		{name: "directory replaced by a link to home", call: func() permission.Call { return bashCall("echo x > sub/out.txt") },
			swap: func(t *testing.T, w linkWorld, sub string) { replace(t, sub, w.home) }, want: string(permission.CodeResolutionChanged)},
		{name: "directory replaced by a link that stays inside", call: func() permission.Call { return bashCall("echo x > sub/out.txt") },
			swap: func(t *testing.T, w linkWorld, sub string) { replace(t, sub, "src") }, want: string(permission.CodeResolutionChanged)},
		{name: "file tool: link swapped in after the decision", mode: permission.ModeAcceptEdits,
			call: func() permission.Call { return toolCall("Write", "file_path", "sub/new.txt", "content", "x") },
			swap: func(t *testing.T, w linkWorld, sub string) { replace(t, sub, "..") }, want: string(permission.CodeResolutionChanged)},
		{name: "project root swapped", call: func() permission.Call { return bashCall("echo x > out.txt") },
			swap: func(t *testing.T, w linkWorld, _ string) {
				if err := os.Rename(filepath.Join(w.base, "alias"), filepath.Join(w.base, "old-alias")); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(w.home, filepath.Join(w.base, "alias")); err != nil {
					t.Fatal(err)
				}
			}, want: string(permission.CodeResolutionChanged)},
		{name: "recorded resolutions without a file system", call: func() permission.Call { return bashCall("echo x > sub/out.txt") },
			engine: func(t *testing.T) *permission.Engine { return newEngine(t) },
			swap:   func(*testing.T, linkWorld, string) {}, want: string(permission.CodeResolutionUnverified)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newLinkWorld(t)
			root := filepath.Join(w.base, "alias")
			sub := filepath.Join(w.proj, "sub")
			if err := os.Mkdir(sub, 0o755); err != nil {
				t.Fatal(err)
			}
			e := linkEngine(t, false)
			mode := tc.mode
			if mode == "" {
				mode = permission.ModeDefault
			}
			req := permission.Request{Trusted: w.trusted(root), Call: tc.call(), Policy: policy(t, "v1", mode, linkRules...)}
			d, err := e.Decide(ctx, req)
			if err != nil || d.Permission != allow {
				t.Fatalf("decide: %+v %v", d, err)
			}
			tc.swap(t, w, sub)
			re := e
			if tc.engine != nil {
				re = tc.engine(t)
			}
			r, err := re.Revalidate(ctx, d, permission.ApprovalEvidence{}, req)
			if err != nil {
				t.Fatal(err)
			}
			got := string(r.Permission)
			if r.Permission == deny {
				got = string(r.Reason.Code)
			}
			if got != tc.want {
				t.Fatalf("revalidation %s, want %s: %+v", got, tc.want, r.Reason)
			}
			if tc.want == string(permission.CodeResolutionChanged) &&
				(r.Reason.Source != permission.SourceRevalidation || !strings.Contains(r.Reason.Detail, root)) {
				t.Fatalf("the reason must be a revalidation naming the path: %+v", r.Reason)
			}
		})
	}
}

// An approved ask is bound to where its paths led when it was asked.
func TestSymlinksRevalidateApprovedAsk(t *testing.T) {
	ctx := context.Background()
	w := newLinkWorld(t)
	sub := filepath.Join(w.proj, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	e := linkEngine(t, false)
	req := permission.Request{Trusted: w.trusted(w.proj), Call: bashCall("touch sub/x"), Policy: policy(t, "v1", permission.ModeDefault)}
	d, err := e.Decide(ctx, req)
	if err != nil || d.Permission != ask {
		t.Fatalf("decide: %+v %v", d, err)
	}
	replace(t, sub, w.home)
	r, err := e.Revalidate(ctx, d, approve(d), req)
	if err != nil || r.Permission != deny || r.Reason.Code != permission.CodeResolutionChanged {
		t.Fatalf("approved ask after a link swap: %+v %v", r, err)
	}
}

func replace(t *testing.T, dir, target string) {
	t.Helper()
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, dir); err != nil {
		t.Fatal(err)
	}
}

// memFS is an in-memory file system: the engine needs no disk to resolve.
type memFS struct {
	dirs  map[string]bool
	links map[string]string
	files map[string]bool
	deny  map[string]bool // Lstat fails with permission denied
}

type memInfo struct {
	name string
	mode fs.FileMode
}

func (i memInfo) Name() string       { return filepath.Base(i.name) }
func (i memInfo) Size() int64        { return 0 }
func (i memInfo) Mode() fs.FileMode  { return i.mode }
func (i memInfo) ModTime() time.Time { return time.Time{} }
func (i memInfo) IsDir() bool        { return i.mode.IsDir() }
func (i memInfo) Sys() any           { return nil }

func (m memFS) ReadFile(name string) ([]byte, error) { return nil, fs.ErrNotExist }
func (m memFS) Lstat(name string) (fs.FileInfo, error) {
	switch {
	case m.deny[name]:
		return nil, &fs.PathError{Op: "lstat", Path: name, Err: fs.ErrPermission}
	case m.dirs[name]:
		return memInfo{name, fs.ModeDir}, nil
	case m.files[name]:
		return memInfo{name, 0}, nil
	}
	if _, ok := m.links[name]; ok {
		return memInfo{name, fs.ModeSymlink}, nil
	}
	return nil, &fs.PathError{Op: "lstat", Path: name, Err: fs.ErrNotExist}
}
func (m memFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if !m.dirs[name] {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrNotExist}
	}
	var out []fs.DirEntry
	for _, set := range []map[string]bool{m.dirs, m.files} {
		for p := range set {
			if filepath.Dir(p) == name && p != name {
				info, _ := m.Lstat(p)
				out = append(out, fs.FileInfoToDirEntry(info))
			}
		}
	}
	for p := range m.links {
		if filepath.Dir(p) == name {
			info, _ := m.Lstat(p)
			out = append(out, fs.FileInfoToDirEntry(info))
		}
	}
	return out, nil
}

func (m memFS) Readlink(name string) (string, error) {
	if t, ok := m.links[name]; ok {
		return t, nil
	}
	return "", &fs.PathError{Op: "readlink", Path: name, Err: fs.ErrInvalid}
}

func TestPhysical(t *testing.T) {
	m := memFS{
		dirs:  map[string]bool{"/p": true, "/p/src": true, "/etc": true, "/private": true, "/private/tmp": true, "/secret": true},
		files: map[string]bool{"/p/file": true},
		links: map[string]string{
			"/p/notes": "..", "/p/root": "/", "/p/etc": "/etc", "/p/in": "src", "/p/chain": "in",
			"/p/loop": "loop", "/p/a": "b", "/p/b": "a", "/tmp": "private/tmp", "/p/empty": "",
		},
		deny: map[string]bool{"/secret/x": true},
	}
	cases := []struct {
		name, in, want string
		err            error
	}{
		{name: "plain", in: "/p/src/main.go", want: "/p/src/main.go"},
		{name: "relative link up", in: "/p/notes/x", want: "/x"},
		{name: "absolute link", in: "/p/etc/passwd", want: "/etc/passwd"},
		{name: "chained relative links", in: "/p/chain/main.go", want: "/p/src/main.go"},
		{name: ".. after a link is physical", in: "/p/etc/../x", want: "/x"},
		{name: ".. after a link to the root", in: "/p/root/../x", want: "/x"},
		{name: ".. after notes -> ..", in: "/p/notes/../p/x", want: "/p/x"},
		{name: ".. without links", in: "/p/src/../x", want: "/p/x"},
		{name: "missing components appended", in: "/p/new/dir/f", want: "/p/new/dir/f"},
		{name: ".. after a missing component resumes the lookup", in: "/p/new/../notes/x", want: "/x"},
		{name: "below a file", in: "/p/file/x", want: "/p/file/x"},
		{name: "linked system directory", in: "/tmp/x", want: "/private/tmp/x"},
		{name: "dot and double slashes", in: "/p//./src/", want: "/p/src"},
		{name: "root", in: "/", want: "/"},
		{name: "self loop", in: "/p/loop/x", err: permission.ErrLinkLoop},
		{name: "two-link loop", in: "/p/a", err: permission.ErrLinkLoop},
		{name: "unexaminable component", in: "/secret/x/y", err: fs.ErrPermission},
		{name: "empty link target", in: "/p/empty/x", err: permission.ErrLinkEmpty},
		{name: "relative input", in: "p/x", err: permission.ErrNotAbsolute},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := permission.Physical(m, tc.in)
			if tc.err != nil {
				var re *permission.ResolveError
				if !errors.Is(err, tc.err) || !errors.As(err, &re) {
					t.Fatalf("Physical(%s) = %q, %v; want %v", tc.in, got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("Physical(%s) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
		})
	}
}

// The engine decides over an in-memory file system just as over the disk.
func TestSymlinksInMemoryFS(t *testing.T) {
	m := memFS{
		dirs:  map[string]bool{"/home": true, "/home/dev": true, "/home/dev/.ssh": true, "/home/dev/proj": true},
		files: map[string]bool{"/home/dev/.ssh/id": true},
		links: map[string]string{"/home/dev/proj/notes": ".."},
	}
	e, err := permission.NewEngine(permission.Config{FS: m})
	if err != nil {
		t.Fatal(err)
	}
	tr := permission.Trusted{SessionID: "ses_mem", WorkingDir: "/home/dev/proj", ProjectRoot: "/home/dev/proj", HomeDir: "/home/dev", Interactive: true}
	p := policy(t, "v1", permission.ModeAcceptEdits, "deny: Read(~/.ssh/**)", "allow: Bash(echo *)")
	for _, tc := range []struct {
		call permission.Call
		want lifecycle.Permission
	}{
		{bashCall("echo x > notes/.profile"), ask},
		{bashCall("echo x > out"), allow},
		{bashCall("echo x > n*/.profile"), ask},
		{toolCall("Read", "file_path", "notes/.ssh/id"), deny},
		{toolCall("Write", "file_path", "notes/x", "content", "x"), ask},
		{toolCall("Write", "file_path", "x", "content", "x"), allow},
	} {
		d, err := e.Decide(context.Background(), permission.Request{Trusted: tr, Call: tc.call, Policy: p})
		if err != nil || d.Permission != tc.want {
			t.Errorf("%s %s: %+v %v; want %s", tc.call.Tool, tc.call.Args, d.Reason, err, tc.want)
		}
	}
}

// Without a file system the scope stays lexical (the documented fallback).
func TestScopeLexicalWithoutFS(t *testing.T) {
	w := newLinkWorld(t)
	s := permission.NewScope(w.trusted(w.proj), nil)
	if s.Resolving() {
		t.Fatal("NewScope must not resolve")
	}
	abs, ok := s.Resolve("notes/secret.txt")
	if !ok || abs != filepath.Join(w.proj, "notes", "secret.txt") || !s.Contains(abs) {
		t.Fatalf("lexical resolve: %q %v", abs, ok)
	}
	r := permission.NewScopeFS(w.trusted(w.proj), nil, permission.OSFS{})
	abs, ok = r.Resolve("notes/secret.txt")
	if !ok || abs != filepath.Join(w.home, "secret.txt") || r.Contains(abs) {
		t.Fatalf("resolving scope: %q %v", abs, ok)
	}
	names, ok := r.Names("notes/.ssh/deploy_key")
	if !ok || len(names) < 2 || names[0] != filepath.Join(w.proj, "notes", ".ssh", "deploy_key") {
		t.Fatalf("names: %q %v", names, ok)
	}
	if _, ok := r.Resolve("loop/x"); ok {
		t.Fatal("a loop resolved")
	}
	if names, ok := r.Names("loop/x"); ok || len(names) != 1 {
		t.Fatalf("names of a loop: %q %v", names, ok)
	}
}

// BenchmarkDecideResolving measures decisions whose paths are resolved
// through the real file system (Config.FS), against the same calls judged
// lexically.
//
//	go test -run '^$' -bench DecideResolving -benchmem ./shared/permission/
func BenchmarkDecideResolving(b *testing.B) {
	dir := b.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "src", "sub"), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.Symlink("..", filepath.Join(dir, "notes")); err != nil {
		b.Skip(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "big"), 0o755); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < 4000; i++ {
		if err := os.WriteFile(filepath.Join(dir, "big", fmt.Sprintf("f%04d.go", i)), nil, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	p := policy(b, "v1", permission.ModeAcceptEdits, "deny: Read(~/.ssh/**)", "deny: Read(./secrets/**)", "deny: Edit(~/.bashrc)",
		"ask: Edit(./.github/**)", "allow: Bash(cat *)", "allow: Bash(echo *)", "allow: Bash(cd *)")
	tr := permission.Trusted{SessionID: "ses_bench", WorkingDir: dir, ProjectRoot: dir, HomeDir: "/home/dev"}
	for _, fsys := range []struct {
		name string
		fs   permission.FS
	}{{"lexical", nil}, {"resolving", permission.OSFS{}}} {
		e, err := permission.NewEngine(permission.Config{FS: fsys.fs})
		if err != nil {
			b.Fatal(err)
		}
		for _, tc := range []struct {
			name string
			call permission.Call
		}{
			{"bash paths", bashCall("cat src/main.go notes/x > src/out.txt && cd src/sub && echo x >> log.txt")},
			{"edit", toolCall("Write", "file_path", "src/sub/new.go", "content", "x")},
			{"glob of 4000 files", bashCall("cat big/* > src/all.txt")},
		} {
			b.Run(fsys.name+"/"+tc.name, func(b *testing.B) {
				req := permission.Request{Trusted: tr, Call: tc.call, Policy: p}
				for b.Loop() {
					if _, err := e.Decide(context.Background(), req); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// FuzzPhysical resolves arbitrary paths over a file system with arbitrary
// link targets: it always terminates, and a result is absolute, clean and
// resolves to itself (no link is left in it).
//
//	go test -run '^$' -fuzz '^FuzzPhysical$' -fuzztime 30s ./shared/permission/
func FuzzPhysical(f *testing.F) {
	for _, seed := range [][3]string{
		{"/p/notes/../x", "..", "a"}, {"/p/a/b/../../c", "/p/a", "../b"}, {"/p/l1/x", "l2", "l1"},
		{"/p/l1/l2/../..", "/", "."}, {"/p/new/../l1/y", "./l2/..", "/p/l1"}, {"//p/./l2/", "", "x/../../.."},
	} {
		f.Add(seed[0], seed[1], seed[2])
	}
	f.Fuzz(func(t *testing.T, p, target1, target2 string) {
		if !strings.HasPrefix(p, "/") || len(p) > 512 {
			return
		}
		m := memFS{
			dirs:  map[string]bool{"/p": true, "/p/a": true, "/p/a/b": true},
			files: map[string]bool{"/p/f": true},
			links: map[string]string{"/p/l1": target1, "/p/l2": target2, "/p/a/up": ".."},
		}
		got, err := permission.Physical(m, p)
		if err != nil {
			var re *permission.ResolveError
			if !errors.As(err, &re) {
				t.Fatalf("Physical(%q) error %v is not a *ResolveError", p, err)
			}
			return
		}
		if !strings.HasPrefix(got, "/") || filepath.Clean(got) != got {
			t.Fatalf("Physical(%q) = %q: not absolute and clean", p, got)
		}
		again, err := permission.Physical(m, got)
		if err != nil || again != got {
			t.Fatalf("Physical(%q) = %q, which resolves to %q, %v", p, got, again, err)
		}
	})
}

// A call naming more paths than a decision can bind is denied, with a
// reason that says to split it; a glob's matches are judged but not
// recorded (revalidation expands the glob again).
func TestSymlinksRecordedPathsAreBounded(t *testing.T) {
	ctx := context.Background()
	w := newLinkWorld(t)
	for i := 0; i < 40; i++ {
		if err := os.WriteFile(filepath.Join(w.proj, "src", fmt.Sprintf("f%02d.go", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e := linkEngine(t, false)
	p := policy(t, "v1", permission.ModeDefault, linkRules...)
	var many strings.Builder
	many.WriteString("cat")
	for i := 0; i <= permission.MaxResolutions; i++ {
		fmt.Fprintf(&many, " n%d", i)
	}
	d, err := e.Decide(ctx, permission.Request{Trusted: w.trusted(w.proj), Call: bashCall(many.String()), Policy: p})
	if err != nil || d.Permission != deny || d.Reason.Code != permission.CodeTooManyPaths || len(d.Resolutions) != 0 {
		t.Fatalf("too many paths: %s %+v %v (%d recorded)", d.Permission, d.Reason, err, len(d.Resolutions))
	}

	req := permission.Request{Trusted: w.trusted(w.proj), Call: bashCall("cat src/*"), Policy: p}
	d, err = e.Decide(ctx, req)
	if err != nil || d.Permission != allow {
		t.Fatalf("glob: %+v %v", d, err)
	}
	for _, r := range d.Resolutions {
		if strings.Contains(r.Path, "f0") {
			t.Fatalf("a glob match was recorded: %+v (%d recorded)", r, len(d.Resolutions))
		}
	}
	if len(d.Resolutions) > 10 {
		t.Fatalf("%d resolutions recorded for one glob", len(d.Resolutions))
	}
	// A link added under the glob after the decision is judged at
	// revalidation: it may now read a key.
	if err := os.Symlink(filepath.Join(w.home, ".ssh", "deploy_key"), filepath.Join(w.proj, "src", "zz")); err != nil {
		t.Fatal(err)
	}
	r, err := e.Revalidate(ctx, d, permission.ApprovalEvidence{}, req)
	if err != nil || r.Permission != deny {
		t.Fatalf("glob after a link was added: %+v %v", r, err)
	}
}

// Protected paths (the service's state) are hard constraints on every name
// of a path: a link into them is as protected as the path itself.
func TestSymlinksProtectedPaths(t *testing.T) {
	w := newLinkWorld(t)
	state := filepath.Join(w.home, ".lifecycle")
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(state, filepath.Join(w.proj, "st")); err != nil {
		t.Fatal(err)
	}
	e, err := permission.NewEngine(permission.Config{FS: permission.OSFS{}, ProtectedPaths: []string{state}})
	if err != nil {
		t.Fatal(err)
	}
	runLinkCases(t, e, w.trusted(w.proj), []string{"allow: Bash", "allow: Edit"}, []linkCase{
		{name: "redirection through notes -> ..", cmd: "echo x > notes/.lifecycle/state.db", want: deny, code: permission.CodeProtectedPath},
		{name: "redirection through a link to the state", cmd: "echo x > st/state.db", want: deny, code: permission.CodeProtectedPath},
		{name: "Write through a link to the state", tool: "Write", path: "st/auth.key", want: deny, code: permission.CodeProtectedPath},
		{name: "rm through notes", cmd: "rm -rf notes/.lifecycle", want: deny, code: permission.CodeProtectedPath},
		{name: "unrelated write", cmd: "echo x > out.txt", want: allow},
	})
}
