package hostworker_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/hosttools"
	"github.com/openprogram/lifecycle/shared/hostworker"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/sandbox"
)

// A worker whose Host cannot refuse a task unclaimed (the API client) does
// not start without bubblewrap: it would otherwise claim tasks it cannot
// run, or run them unconfined.
func TestWorkerWithoutBubblewrapOverTheAPIDoesNotStart(t *testing.T) {
	h := newFakeHost()
	h.publish("act_1", "touch ran")
	r, err := hosttools.NewRunner(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	c, err := hosttools.NewConfinement(func(string) (string, error) { return "", exec.ErrNotFound }, "")
	if err != nil {
		t.Fatal(err)
	}
	r.Sandbox = &c
	w := &hostworker.Worker{Host: h, Runner: r, Log: quiet, Poll: time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = w.Run(ctx)
	if err == nil || !strings.Contains(err.Error(), "apt-get install bubblewrap") {
		t.Fatalf("Run = %v, want a refusal to start naming apt-get install bubblewrap", err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.started) != 0 {
		t.Fatalf("tasks were claimed: %v", h.started)
	}
}

// profileHost hands out one Bash task carrying a sandbox profile and keeps
// the result.
type profileHost struct {
	command string
	profile *sandbox.Profile
	result  actionflow.ToolResult
}

func (h *profileHost) Tasks(context.Context, time.Duration) ([]ids.ActionID, error) { return nil, nil }
func (h *profileHost) Start(context.Context, ids.ActionID, ids.AttemptID) (actionflow.Task, error) {
	args, _ := json.Marshal(map[string]string{"command": h.command})
	return actionflow.Task{ActionID: "act_p", Tool: "Bash", Arguments: args, Fence: 1, Sandbox: h.profile}, nil
}
func (h *profileHost) Result(_ context.Context, _ ids.ActionID, _ ids.AttemptID, _ int64, res actionflow.ToolResult) error {
	h.result = res
	return nil
}
func (h *profileHost) Heartbeat(context.Context, ids.ActionID, ids.AttemptID, int64) error {
	return nil
}

// The worker runs each task in the profile the task carries (nil: the
// default), and the result records it.
func TestWorkerRunsTheTasksProfile(t *testing.T) {
	if _, err := sandbox.Find(); err != nil {
		t.Skip(err)
	}
	outside, err := os.MkdirTemp("/var/tmp", "hostworker-sbx-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(outside) })
	tests := []struct {
		name    string
		profile *sandbox.Profile
		want    sandbox.Profile
		written bool
	}{
		{"no profile: the default", nil, sandbox.Default(), false},
		{"network open", &sandbox.Profile{Mode: sandbox.ModeBwrap, Network: true}, sandbox.Profile{Mode: sandbox.ModeBwrap, Network: true}, false},
		{"off", &sandbox.Profile{Mode: sandbox.ModeOff}, sandbox.Profile{Mode: sandbox.ModeOff}, true},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			marker := filepath.Join(outside, "m"+string(rune('0'+i)))
			h := &profileHost{command: "touch " + marker, profile: tc.profile}
			r, err := hosttools.NewRunner(t.TempDir(), "")
			if err != nil {
				t.Fatal(err)
			}
			w := &hostworker.Worker{Host: h, Runner: r, Log: quiet}
			if err := w.RunOne(context.Background(), "act_p"); err != nil {
				t.Fatal(err)
			}
			if got := h.result.Sandbox; got == nil || got.Mode != tc.want.Mode || got.Network != tc.want.Network {
				t.Fatalf("result sandbox %+v, want %+v (result %+v)", got, tc.want, h.result)
			}
			if _, err := os.Stat(marker); (err == nil) != tc.written {
				t.Fatalf("written outside the workspace: %v, want %v (result %+v)", err == nil, tc.written, h.result)
			}
		})
	}
}
