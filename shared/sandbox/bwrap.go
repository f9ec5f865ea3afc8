package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Program is the bubblewrap binary looked up in PATH.
const Program = "bwrap"

// InstallHint is the fix a refusal names when bubblewrap is missing.
const InstallHint = "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap), or let the policy run host tools unconfined with sandbox: off"

// ErrNoBubblewrap is returned by Find when bubblewrap is not installed.
var ErrNoBubblewrap = errors.New("bubblewrap (bwrap) is not installed; host tools run only inside its sandbox: " + InstallHint)

// Find returns the absolute path of bwrap in PATH, or ErrNoBubblewrap.
func Find() (string, error) { return FindWith(exec.LookPath) }

// FindWith is Find with an injected lookup (tests).
func FindWith(look func(string) (string, error)) (string, error) {
	p, err := look(Program)
	if err != nil {
		return "", fmt.Errorf("%w (%v)", ErrNoBubblewrap, err)
	}
	return p, nil
}

// View is the filesystem a sandboxed tool sees, fixed by the host (the
// workspace, what is hidden) and by the call's Profile (network, extra
// paths). Paths are absolute and cleaned; Hidden paths that do not exist
// are skipped (there is nothing to hide).
type View struct {
	Profile Profile
	// Workspace is writable and the command's working directory.
	Workspace string
	// Hidden are not visible at all: a directory shows empty (a read-only
	// tmpfs over it), a file shows empty (an empty read-only file bound
	// over it). The state directory and the credential stores.
	Hidden []string
	// EmptyFile is an existing empty regular file bound over hidden files
	// (/dev/null cannot be: bubblewrap binds it nodev, so reading it fails
	// with EACCES, which is a signal rather than an absence).
	EmptyFile string
}

// Access is what a view allows on a path.
type Access int

// Accesses, from none to all.
const (
	AccessHidden   Access = iota // not visible at all
	AccessReadOnly               // visible, not writable
	AccessWritable               // the workspace, a private temp dir, a writable extra
)

func (a Access) String() string {
	return [...]string{"hidden", "read-only", "writable"}[a]
}

// TempDir is the private temporary directory inside the sandbox (a tmpfs
// of its own; nothing in it outlives the call).
const TempDir = "/tmp"

// Validate checks the view: absolute paths, extra paths that exist, and
// no writable extra that is or contains a hidden path (it would expose
// it) or is inside one.
func (v View) Validate() error {
	switch v.Profile.Mode {
	case ModeBwrap, ModeOff:
	default:
		return fmt.Errorf("sandbox: mode %q is neither %q nor %q", v.Profile.Mode, ModeBwrap, ModeOff)
	}
	if err := absolute("workspace", v.Workspace); err != nil {
		return err
	}
	for _, h := range v.Hidden {
		if err := absolute("hidden path", h); err != nil {
			return err
		}
	}
	for _, list := range []struct {
		what  string
		paths []string
	}{{"read_only", v.Profile.ReadOnly}, {"writable", v.Profile.Writable}} {
		for _, p := range list.paths {
			if err := absolute("sandbox "+list.what+" path", p); err != nil {
				return err
			}
			if _, err := os.Stat(p); err != nil {
				return fmt.Errorf("sandbox %s path %s: %w", list.what, p, err)
			}
			if list.what != "writable" {
				continue
			}
			if p == "/" {
				return errors.New("sandbox writable path \"/\" would make everything writable; use sandbox: off instead")
			}
			for _, h := range v.Hidden {
				if within(h, p) || within(p, h) {
					return fmt.Errorf("sandbox writable path %s overlaps the hidden path %s (the state directory or a credential store)", p, h)
				}
			}
		}
	}
	if v.EmptyFile != "" {
		if err := absolute("empty file", v.EmptyFile); err != nil {
			return err
		}
	}
	return nil
}

func absolute(what, p string) error {
	if p == "" || !filepath.IsAbs(p) || filepath.Clean(p) != p {
		return fmt.Errorf("sandbox: %s %q is not an absolute clean path", what, p)
	}
	return nil
}

// within reports whether p is dir or below it.
func within(p, dir string) bool {
	if dir == "/" {
		return true
	}
	return p == dir || strings.HasPrefix(p, dir+string(filepath.Separator))
}

// Classify says what the view allows on an absolute path, exactly as a
// sandboxed command would find it (the path as given; callers resolve
// symbolic links first). The most specific rule wins: hidden over
// everything, then a writable place (workspace, temp dir, writable
// extra), else read-only (the rest of the filesystem).
func (v View) Classify(p string) Access {
	p = filepath.Clean(p)
	for _, h := range v.Hidden {
		if within(p, h) {
			return AccessHidden
		}
	}
	if within(p, v.Workspace) || within(p, TempDir) {
		return AccessWritable
	}
	for _, w := range v.Profile.Writable {
		if within(p, w) {
			return AccessWritable
		}
	}
	return AccessReadOnly
}

// Args are bubblewrap's arguments for the view, up to and including the
// "--" before the command: / read-only, /dev and /proc of the sandbox, a
// private /tmp, the workspace and writable extras bound writable,
// read-only extras bound read-only, hidden paths masked last (so that a
// hidden path inside the workspace stays hidden), its own PID namespace
// and session, its own network namespace unless the profile opens the
// network, killed with its parent. The working directory is the workspace.
func (v View) Args() ([]string, error) {
	if err := v.Validate(); err != nil {
		return nil, err
	}
	if v.Profile.Mode != ModeBwrap {
		return nil, fmt.Errorf("sandbox: mode %q has no bubblewrap command line", v.Profile.Mode)
	}
	args := []string{"--die-with-parent", "--new-session", "--unshare-pid"}
	if !v.Profile.Network {
		args = append(args, "--unshare-net")
	}
	args = append(args, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", TempDir)
	for _, p := range v.Profile.ReadOnly {
		args = append(args, "--ro-bind", p, p)
	}
	args = append(args, "--bind", v.Workspace, v.Workspace)
	for _, p := range v.Profile.Writable {
		args = append(args, "--bind", p, p)
	}
	for _, h := range v.Hidden {
		fi, err := os.Stat(h)
		switch {
		case err != nil:
			continue // nothing there to hide (a writable place may not contain it: Validate)
		case fi.IsDir():
			args = append(args, "--tmpfs", h, "--remount-ro", h)
		default:
			if v.EmptyFile == "" {
				return nil, fmt.Errorf("sandbox: hiding the file %s needs an empty file to bind over it", h)
			}
			args = append(args, "--ro-bind", v.EmptyFile, h)
		}
	}
	return append(args, "--chdir", v.Workspace, "--"), nil
}
