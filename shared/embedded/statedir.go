package embedded

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// StateRootName is the directory under the XDG state home that holds the
// default state directories of every workspace.
const StateRootName = "openprogram-lifecycle"

// StateRoot is $XDG_STATE_HOME/openprogram-lifecycle, or
// ~/.local/state/openprogram-lifecycle when XDG_STATE_HOME is unset or
// not absolute (the XDG Base Directory rule).
func StateRoot() (string, error) {
	if x := os.Getenv("XDG_STATE_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, StateRootName), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("default state directory: no home directory (%w); pass --state-dir", err)
	}
	return filepath.Join(home, ".local", "state", StateRootName), nil
}

// DefaultStateDir is the state directory of a workspace when none is
// given: StateRoot()/<workspace base name>-<12 hex digits of the SHA-256
// of its absolute path>. It lies outside the workspace and its parent, so
// no path the agent's tools are pointed at leads to the keys, and every
// command (serve, token) finds the same one from the same workspace.
func DefaultStateDir(workspace string) (string, error) {
	ws, err := filepath.Abs(workspace)
	if err != nil {
		return "", fmt.Errorf("default state directory: workspace %q: %w", workspace, err)
	}
	root, err := StateRoot()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(ws))
	return filepath.Join(root, filepath.Base(ws)+"-"+hex.EncodeToString(sum[:])[:12]), nil
}

// StateDirError: the state directory and the workspace overlap.
type StateDirError struct {
	StateDir, Workspace string
	Msg                 string
}

func (e *StateDirError) Error() string {
	return fmt.Sprintf("state directory %s and workspace %s: %s", e.StateDir, e.Workspace, e.Msg)
}

// CheckStateDir refuses a state directory that is the workspace, lies in
// it or contains it (the agent's tools run in the workspace: its keys
// would be one relative path away, and every walk of the workspace would
// be a protected-path denial). It returns a warning, not an error, for a
// state directory beside the workspace (the layout before issue 21, where
// "../.lifecycle" named it): it is protected, but one typo from the tools.
func CheckStateDir(stateDir, workspace string) (warning string, err error) {
	st, err := filepath.Abs(stateDir)
	if err != nil {
		return "", err
	}
	ws, err := filepath.Abs(workspace)
	if err != nil {
		return "", err
	}
	st, ws = realDir(st), realDir(ws)
	switch {
	case st == ws:
		return "", &StateDirError{StateDir: st, Workspace: ws, Msg: "are the same directory; the state (and its signing keys) must not be where the agent's tools run"}
	case within(st, ws):
		return "", &StateDirError{StateDir: st, Workspace: ws, Msg: "the state directory is inside the workspace, where the agent's tools run; choose one outside it (the default is under $XDG_STATE_HOME)"}
	case within(ws, st):
		return "", &StateDirError{StateDir: st, Workspace: ws, Msg: "the workspace is inside the state directory; choose a workspace outside it"}
	case filepath.Dir(st) == filepath.Dir(ws):
		// Only a sibling: the default under ~/.local/state lies below the
		// parent of a workspace in the home directory, and that is fine.
		return fmt.Sprintf("the state directory %s is beside the workspace %s: tools are denied any path into it, but it is one directory away; the default (%s) is safer", st, ws, "$XDG_STATE_HOME/"+StateRootName), nil
	}
	return "", nil
}

func within(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+string(filepath.Separator))
}

// realDir resolves symbolic links in the longest existing part of p.
func realDir(p string) string {
	rest := ""
	for dir := p; ; dir = filepath.Dir(dir) {
		if r, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(r, rest)
		}
		if dir == filepath.Dir(dir) {
			return p
		}
		rest = filepath.Join(filepath.Base(dir), rest)
	}
}

// SecureStateDir creates dir with mode 0700, or tightens an existing one
// with a looser mode. tightened reports the old mode when it changed one
// (the caller logs it).
func SecureStateDir(dir string) (tightened fs.FileMode, err error) {
	fi, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return 0, fmt.Errorf("state dir: %w", err)
		}
		// MkdirAll applies the umask; say exactly what we mean.
		return 0, os.Chmod(dir, 0o700)
	}
	if err != nil {
		return 0, fmt.Errorf("state dir: %w", err)
	}
	if !fi.IsDir() {
		return 0, fmt.Errorf("state dir %s is not a directory", dir)
	}
	if mode := fi.Mode().Perm(); mode&0o077 != 0 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return 0, fmt.Errorf("state dir: tighten %s: %w", dir, err)
		}
		return mode, nil
	}
	return 0, nil
}
