package hosttools

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/permission"
	"github.com/openprogram/lifecycle/shared/sandbox"
)

// Confinement is how this host builds the sandbox of a call: where
// bubblewrap is (or why it is not there), what is hidden and the empty
// file hidden files are covered with. The call's sandbox.Profile adds the
// rest (network, extra paths, or off).
type Confinement struct {
	// Bwrap is the absolute path of bubblewrap; empty when Missing says
	// why it is not available.
	Bwrap   string
	Missing error
	// Hidden are the paths no tool sees (absolute; symbolic links already
	// followed to where they lead, both forms listed).
	Hidden []string
	// EmptyFile is covered over hidden files.
	EmptyFile string
}

// NewConfinement finds bubblewrap with look (nil: PATH) and lists the
// hidden paths: the credential stores below home
// (permission.DefaultCredentialStores, the list the permission engine
// protects) and the given state directories. A missing bubblewrap is not
// an error here: the host still runs calls whose profile is off, and
// refuses the others before they start.
func NewConfinement(look func(string) (string, error), home string, stateDirs ...string) (Confinement, error) {
	if look == nil {
		look = exec.LookPath
	}
	var c Confinement
	if p, err := sandbox.FindWith(look); err != nil {
		c.Missing = err
	} else if c.Bwrap, err = filepath.Abs(p); err != nil {
		return Confinement{}, err
	} else if err := probe(c.Bwrap); err != nil {
		// Installed but unusable (no user namespaces, a container without
		// the privilege): the same as missing, with what it said.
		c.Bwrap, c.Missing = "", err
	}
	var hidden []string
	for _, d := range stateDirs {
		if d != "" {
			hidden = append(hidden, d)
		}
	}
	if home != "" {
		for _, s := range permission.DefaultCredentialStores() {
			hidden = append(hidden, filepath.Join(home, strings.TrimPrefix(s, "~/")))
		}
	}
	for _, h := range hidden {
		abs, err := filepath.Abs(h)
		if err != nil {
			return Confinement{}, fmt.Errorf("hidden path %s: %w", h, err)
		}
		c.Hidden = appendNew(c.Hidden, abs)
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			c.Hidden = appendNew(c.Hidden, real)
		}
	}
	empty, err := emptyFile()
	if err != nil {
		return Confinement{}, err
	}
	c.EmptyFile = empty
	return c, nil
}

// emptyFile is the empty read-only file hidden files are covered with, one
// per process.
var emptyFile = sync.OnceValues(func() (string, error) {
	f, err := os.CreateTemp("", "lifecycle-sandbox-empty-")
	if err != nil {
		return "", fmt.Errorf("sandbox: the empty file hidden files are covered with: %w", err)
	}
	f.Close()
	return f.Name(), os.Chmod(f.Name(), 0o444)
})

// probe runs bubblewrap once with the namespaces every call uses.
func probe(bwrap string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bwrap, "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-net",
		"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", sandbox.TempDir, "--", "true").CombinedOutput()
	if err != nil {
		return fmt.Errorf("bubblewrap (%s) is installed but cannot build its sandbox here (%v: %s); host tools run only inside it: %s",
			bwrap, err, strings.TrimSpace(string(out)), sandbox.InstallHint)
	}
	return nil
}

func appendNew(list []string, p string) []string {
	for _, q := range list {
		if q == p {
			return list
		}
	}
	return append(list, p)
}

// defaultConfinement is NewConfinement(PATH, $HOME) resolved once per
// process, for a Runner built without one.
var defaultConfinement = sync.OnceValues(func() (Confinement, error) {
	home, _ := os.UserHomeDir()
	return NewConfinement(nil, home)
})

func (r Runner) confinement() (Confinement, error) {
	if r.Sandbox != nil {
		return *r.Sandbox, nil
	}
	return defaultConfinement()
}

// view is the sandbox view of a call on this runner.
func (r Runner) view(p sandbox.Profile) (sandbox.View, Confinement, error) {
	c, err := r.confinement()
	if err != nil {
		return sandbox.View{}, c, err
	}
	ws, err := filepath.Abs(r.Workspace)
	if err != nil {
		return sandbox.View{}, c, err
	}
	if real, err := filepath.EvalSymlinks(ws); err == nil {
		ws = real
	}
	v := sandbox.View{Profile: p, Workspace: ws, Hidden: c.Hidden, EmptyFile: c.EmptyFile}
	return v, c, v.Validate()
}

// Unavailable says why this host cannot run a call of profile p at all
// (nil: it can): bubblewrap is missing and the profile is not off. Nothing
// has started; the fix is in the message.
func (r Runner) Unavailable(p sandbox.Profile) error {
	if p.Mode == sandbox.ModeOff {
		return nil
	}
	c, err := r.confinement()
	if err != nil {
		return err
	}
	return c.Missing
}

// notStarted is the result of a call refused before anything ran.
func notStarted(code string, err error) actionflow.ToolResult {
	return actionflow.ToolResult{Outcome: lifecycle.OutcomeNotStarted, ErrorCode: code, Error: err.Error()}
}

// fileAccess checks an in-process file tool's resolved path against the
// sandbox view of the call: hidden paths are neither read nor written,
// and writes go only where a sandboxed command could write. The path is
// already inside the workspace (resolve), which is writable; the check
// matters for hidden paths inside it (a workspace that is the home
// directory holds ~/.ssh). Nil: allowed.
func (r Runner) fileAccess(p sandbox.Profile, full string, write bool) *actionflow.ToolResult {
	if p.Mode == sandbox.ModeOff {
		return nil
	}
	v, _, err := r.view(p)
	if err != nil {
		res := actionflow.ToolResult{Outcome: lifecycle.OutcomeFailed, ErrorCode: "sandbox_invalid", Error: err.Error()}
		return &res
	}
	switch got := v.Classify(full); {
	case got == sandbox.AccessHidden:
		res := actionflow.ToolResult{Outcome: lifecycle.OutcomeFailed, ErrorCode: "sandbox_denied",
			Error: fmt.Sprintf("sandbox_denied: %s is hidden from host tools (the service's state or a credential store); nothing was read or written", full)}
		return &res
	case write && got != sandbox.AccessWritable:
		res := actionflow.ToolResult{Outcome: lifecycle.OutcomeFailed, ErrorCode: "sandbox_denied",
			Error: fmt.Sprintf("sandbox_denied: %s is read-only in the sandbox; nothing was written", full)}
		return &res
	}
	return nil
}
