//go:build faultinject

package actionflow_test

import (
	"context"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/faults"
	"github.com/openprogram/lifecycle/shared/lifecycle"
)

// A worker that died between taking a host task's lease and writing start
// evidence ran nothing: its lease holds the task up for HostLeaseTTL (the
// dispatch wait's heartbeat timeout), not for Config.LeaseTTL, and then a
// new claim takes it over with a higher fence. (The chaos run found tasks
// stuck behind such leases for 15 minutes.)
func TestDeadClaimWithoutStartEvidenceIsTakenOver(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	f := newFixture(t, func(c *actionflow.Config) {
		c.Clock = func() time.Time { return now }
		c.Decider = ruleDecider{byTool: map[string]lifecycle.Permission{"Bash": lifecycle.PermissionAllow}}
	})
	ctx := context.Background()
	a := f.submit(t, "Bash", `{"command":"echo hi"}`)
	if d, err := f.svc.Authorize(ctx, in(a)); err != nil || d.Executor != "host" {
		t.Fatalf("authorize: %+v %v", d, err)
	}
	pub := in(a)
	pub.Mode, pub.TaskToken = "publish", "tok-h"
	if _, err := f.svc.Dispatch(ctx, pub); err != nil {
		t.Fatal(err)
	}
	// The dead worker's claim: the lease, and nothing after it.
	disarm := faults.Arm(faults.AfterLease, nil)
	if _, err := f.svc.HostStart(ctx, a.ActionID, "att_dead"); err == nil {
		t.Fatal("the armed claim did not stop after its lease")
	}
	disarm()
	dead, err := f.st.GetLease(ctx, "ACTION#"+string(a.ActionID))
	if err != nil || dead.AttemptID != "att_dead" {
		t.Fatalf("the dead claim's lease: %+v %v", dead, err)
	}
	now = now.Add(actionflow.HostLeaseTTL / 2)
	if _, err := f.svc.HostStart(ctx, a.ActionID, "att_early"); err == nil {
		t.Fatal("a claim took a live lease over")
	}
	now = now.Add(actionflow.HostLeaseTTL/2 + time.Second)
	task, err := f.svc.HostStart(ctx, a.ActionID, "att_new")
	if err != nil {
		t.Fatalf("a claim after the dead claim's lease lapsed: %v", err)
	}
	if task.Fence <= dead.Fence {
		t.Fatalf("fence %d, want above the dead claim's %d", task.Fence, dead.Fence)
	}
	if err := f.svc.HostResult(ctx, a.ActionID, "att_dead", dead.Fence, actionflow.ToolResult{Outcome: lifecycle.OutcomeSucceeded}); err == nil {
		t.Fatal("the dead attempt posted a result")
	}
}
