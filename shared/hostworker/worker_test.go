package hostworker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/hosttools"
	"github.com/openprogram/lifecycle/shared/hostworker"
	"github.com/openprogram/lifecycle/shared/ids"
)

// fakeHost publishes Bash tasks and records claims and results, like the
// lifecycle: a claimed task is no longer listed, a second claim conflicts.
type fakeHost struct {
	mu       sync.Mutex
	order    []ids.ActionID
	commands map[ids.ActionID]string
	started  map[ids.ActionID]int
	results  map[ids.ActionID]int
	changed  chan struct{}
}

func newFakeHost() *fakeHost {
	return &fakeHost{commands: map[ids.ActionID]string{}, started: map[ids.ActionID]int{}, results: map[ids.ActionID]int{},
		changed: make(chan struct{}, 1)}
}

func (h *fakeHost) publish(id ids.ActionID, command string) {
	h.mu.Lock()
	h.order = append(h.order, id)
	h.commands[id] = command
	h.mu.Unlock()
}

func (h *fakeHost) Tasks(ctx context.Context, wait time.Duration) ([]ids.ActionID, error) {
	deadline := time.Now().Add(wait)
	for {
		h.mu.Lock()
		var out []ids.ActionID
		for _, id := range h.order {
			if h.started[id] == 0 && len(out) < 64 {
				out = append(out, id)
			}
		}
		h.mu.Unlock()
		if len(out) > 0 || time.Now().After(deadline) {
			return out, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (h *fakeHost) Start(ctx context.Context, id ids.ActionID, attempt ids.AttemptID) (actionflow.Task, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.started[id] > 0 {
		return actionflow.Task{}, &actionflow.ConflictError{Code: "already_started"}
	}
	h.started[id]++
	args, _ := json.Marshal(map[string]string{"command": h.commands[id]})
	return actionflow.Task{ActionID: id, Tool: "Bash", Arguments: args, Fence: 1}, nil
}

func (h *fakeHost) Result(ctx context.Context, id ids.ActionID, attempt ids.AttemptID, fence int64, res actionflow.ToolResult) error {
	h.mu.Lock()
	h.results[id]++
	h.mu.Unlock()
	select {
	case h.changed <- struct{}{}:
	default:
	}
	return nil
}

// waitResults waits until every id has a result (generous bound: the
// machine is loaded) and returns the missing ones on timeout.
// Heartbeat: the fake's waits never lapse.
func (h *fakeHost) Heartbeat(ctx context.Context, id ids.ActionID, attempt ids.AttemptID, fence int64) error {
	return nil
}

func (h *fakeHost) waitResults(t *testing.T, want []ids.ActionID, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		h.mu.Lock()
		var missing []ids.ActionID
		for _, id := range want {
			if h.results[id] == 0 {
				missing = append(missing, id)
			}
		}
		h.mu.Unlock()
		if len(missing) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d tasks never finished after %s: %v", len(missing), len(want), within, missing)
		}
		select {
		case <-h.changed:
		case <-time.After(100 * time.Millisecond):
		}
	}
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func runWorker(t *testing.T, h hostworker.Host, parallel int) (stop func()) {
	t.Helper()
	r, err := hosttools.NewRunner(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	w := &hostworker.Worker{Host: h, Runner: r, Log: quiet, Poll: time.Second, Parallel: parallel}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	return func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("worker: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("the worker did not stop")
		}
	}
}

// Every published task runs, exactly once, however many are listed at once
// compared with the worker's parallelism (the stall of issue 21: with more
// tasks listed than slots, the loop blocked on a slot only it could free).
func TestEveryTaskRunsOnceUnderLoad(t *testing.T) {
	cases := []struct {
		name     string
		parallel int
		tasks    int
	}{
		{name: "fewer tasks than slots", parallel: 8, tasks: 4},
		{name: "twice as many tasks as slots", parallel: 4, tasks: 8},
		{name: "many more tasks than slots", parallel: 2, tasks: 24},
		{name: "one slot", parallel: 1, tasks: 6},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newFakeHost()
			var all []ids.ActionID
			for i := range c.tasks {
				id := ids.ActionID(fmt.Sprintf("act_%03d", i))
				h.publish(id, "true")
				all = append(all, id)
			}
			stop := runWorker(t, h, c.parallel)
			h.waitResults(t, all, 60*time.Second)
			stop()
			for _, id := range all {
				if h.started[id] != 1 || h.results[id] != 1 {
					t.Fatalf("%s started %d times, %d results", id, h.started[id], h.results[id])
				}
			}
		})
	}
}

// Long commands hold their slots, not the worker: tasks published while
// they run still start, and tasks published later too.
func TestLongTasksDoNotBlockOthers(t *testing.T) {
	h := newFakeHost()
	for i := range 3 {
		h.publish(ids.ActionID(fmt.Sprintf("act_long%d", i)), "sleep 60")
	}
	var quick []ids.ActionID
	for i := range 10 {
		id := ids.ActionID(fmt.Sprintf("act_quick%02d", i))
		h.publish(id, "true")
		quick = append(quick, id)
	}
	stop := runWorker(t, h, 4)
	defer stop()
	h.waitResults(t, quick, 60*time.Second)
	late := ids.ActionID("act_late")
	h.publish(late, "true")
	h.waitResults(t, []ids.ActionID{late}, 60*time.Second)
}

func TestParallelBound(t *testing.T) {
	w := &hostworker.Worker{Host: newFakeHost(), Log: quiet, Parallel: hostworker.MaxParallel + 1}
	if err := w.Run(context.Background()); err == nil {
		t.Fatal("a parallelism above MaxParallel was accepted")
	}
}
