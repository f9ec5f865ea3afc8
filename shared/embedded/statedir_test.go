package embedded_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openprogram/lifecycle/shared/embedded"
)

func TestDefaultStateDir(t *testing.T) {
	xdg := t.TempDir()
	t.Setenv("XDG_STATE_HOME", xdg)
	a, err := embedded.DefaultStateDir("/srv/proj/workspace")
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(a) != filepath.Join(xdg, embedded.StateRootName) || !strings.HasPrefix(filepath.Base(a), "workspace-") || len(filepath.Base(a)) != len("workspace-")+12 {
		t.Fatalf("default state dir %s", a)
	}
	again, _ := embedded.DefaultStateDir("/srv/proj/workspace/")
	other, _ := embedded.DefaultStateDir("/srv/other/workspace")
	if again != a || other == a {
		t.Fatalf("same workspace %s vs %s; another workspace %s", a, again, other)
	}
	t.Setenv("XDG_STATE_HOME", "relative/dir") // not absolute: ignored, as the XDG rule says
	home, _ := os.UserHomeDir()
	if d, err := embedded.DefaultStateDir("/srv/proj/workspace"); err != nil || !strings.HasPrefix(d, filepath.Join(home, ".local", "state", embedded.StateRootName)+"/") {
		t.Fatalf("fallback %s %v", d, err)
	}
}

func TestCheckStateDir(t *testing.T) {
	base := t.TempDir()
	ws := filepath.Join(base, "workspace")
	cases := []struct {
		name, state string
		refused     bool
		warned      bool
	}{
		{"outside", filepath.Join(t.TempDir(), "state"), false, false},
		{"beside the workspace (the old layout)", filepath.Join(base, ".lifecycle"), false, true},
		// A workspace in the home directory and the default state under
		// ~/.local/state: below the workspace's parent, not beside it.
		{"deeper below the workspace's parent (the XDG default)", filepath.Join(base, ".local", "state", "openprogram-lifecycle", "workspace-0123"), false, false},
		{"inside the workspace", filepath.Join(ws, ".lifecycle"), true, false},
		{"the workspace itself", ws, true, false},
		{"containing the workspace", base, true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			warning, err := embedded.CheckStateDir(tc.state, ws)
			var se *embedded.StateDirError
			if tc.refused != errors.As(err, &se) || tc.warned != (warning != "") {
				t.Fatalf("warning %q, err %v", warning, err)
			}
		})
	}
	// Start refuses it too, before creating anything.
	_, err := embedded.Start(context.Background(), embedded.Config{StateDir: filepath.Join(ws, ".lifecycle"), Workspace: ws, Decider: &lazyDecider{}})
	var se *embedded.StateDirError
	if !errors.As(err, &se) {
		t.Fatalf("Start with the state in the workspace: %v", err)
	}
	if _, err := os.Stat(filepath.Join(ws, ".lifecycle")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the refused state dir was created: %v", err)
	}
}

func TestSecureStateDir(t *testing.T) {
	fresh := filepath.Join(t.TempDir(), "a", "state")
	if was, err := embedded.SecureStateDir(fresh); err != nil || was != 0 {
		t.Fatal(was, err)
	}
	if fi, _ := os.Stat(fresh); fi.Mode().Perm() != 0o700 {
		t.Fatalf("created %v", fi.Mode().Perm())
	}
	loose := t.TempDir()
	if err := os.Chmod(loose, 0o755); err != nil {
		t.Fatal(err)
	}
	if was, err := embedded.SecureStateDir(loose); err != nil || was != 0o755 {
		t.Fatalf("tightened %v %v", was, err)
	}
	if fi, _ := os.Stat(loose); fi.Mode().Perm() != 0o700 {
		t.Fatalf("after tightening %v", fi.Mode().Perm())
	}
	if was, _ := embedded.SecureStateDir(loose); was != 0 {
		t.Fatalf("tightened twice: %v", was)
	}
}
