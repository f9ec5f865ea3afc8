package hostworker_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/hosttools"
	"github.com/openprogram/lifecycle/shared/hostworker"
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
