package embedded_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/activity"
	"github.com/openprogram/lifecycle/shared/apiclient"
	"github.com/openprogram/lifecycle/shared/httpapi"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/sandbox"
)

// Issue 20, escalation, through the HTTP API on the embedded stack: the
// policy chooses the sandbox profile and the decision (GET action) carries
// it; a Bash call that relaxes its sandbox (network: true) is asked even
// under an allow rule for the command, and once approved its decision
// carries the relaxed profile; the same call without the relaxation is
// allowed with the default profile; a policy whose sandbox settings are
// invalid is refused with the field named.
func TestSandboxProfileThroughTheAPI(t *testing.T) {
	ws := t.TempDir()
	agent, human, _ := serveAPI(t, ws)
	ctx := context.Background()
	const session = "ses_args"

	ev := int64(0)
	_, err := human.PutPolicy(ctx, session, httpapi.PolicyBody{ExpectedVersion: &ev,
		Policy: json.RawMessage(`{"version":"s1","allow":["Bash(echo *)"],"sandbox":{"writable":["cache"]}}`)})
	var ve *actionflow.ValidationError
	if !errors.As(err, &ve) || ve.Field != "policy.sandbox.writable[0]" || !strings.Contains(ve.Msg, "not an absolute path") {
		t.Fatalf("an invalid sandbox path: %v, want a validation error naming policy.sandbox.writable[0]", err)
	}
	if _, err := human.PutPolicy(ctx, session, httpapi.PolicyBody{ExpectedVersion: &ev,
		Policy: json.RawMessage(`{"version":"s1","allow":["Bash(echo *)"]}`)}); err != nil {
		t.Fatalf("policy: %v", err)
	}

	interactive := true
	seq := 0
	call := func(args string) httpapi.ActionView {
		t.Helper()
		seq++
		v, _, err := agent.Submit(ctx, apiclient.SubmitRequest{SessionID: session, IdempotencyKey: "sbx-" + string(rune('a'+seq)), Body: httpapi.SubmitBody{
			ToolCallID: ids.ToolCallID("call_sbx" + string(rune('a'+seq))), Tool: "Bash", Arguments: json.RawMessage(args), Interactive: &interactive}})
		if err != nil {
			t.Fatalf("submit %s: %v", args, err)
		}
		return v
	}
	until := func(id ids.ActionID, cond func(httpapi.ActionView) bool) httpapi.ActionView {
		t.Helper()
		var got httpapi.ActionView
		for deadline := time.Now().Add(30 * time.Second); ; {
			var err error
			if got, err = agent.Action(ctx, id, 2*time.Second); err != nil {
				t.Fatal(err)
			}
			if cond(got) {
				return got
			}
			if time.Now().After(deadline) {
				t.Fatalf("action %s never reached the condition: %+v decision %+v", id, got.States, got.Decision)
			}
		}
	}
	decided := func(v httpapi.ActionView) bool { return v.Decision != nil && v.States.Permission != "" }

	// The sandboxed form: allowed by the rule, with the default profile.
	plain := until(call(`{"command":"echo sandboxed"}`).ActionID, decided)
	if d := plain.Decision; d.Permission != lifecycle.PermissionAllow || d.Reason.Source != "allow_rule" || !reflect.DeepEqual(d.Sandbox, &sandbox.Profile{Mode: sandbox.ModeBwrap}) {
		t.Fatalf("sandboxed call: %+v", d)
	}

	// The relaxed form asks, and the ask already names the profile that
	// runs once approved.
	relaxed := call(`{"command":"echo sandboxed","network":true}`)
	asked := until(relaxed.ActionID, func(v httpapi.ActionView) bool { return v.Approval != nil && v.Decision != nil })
	want := &sandbox.Profile{Mode: sandbox.ModeBwrap, Network: true}
	if d := asked.Decision; d.Permission != lifecycle.PermissionAsk || d.Reason.Source != "sandbox" || d.Reason.Code != "sandbox_relaxation" || !reflect.DeepEqual(d.Sandbox, want) {
		t.Fatalf("relaxed call: %+v", d)
	}
	if _, err := human.Decide(ctx, asked.Approval.ApprovalID, actionflow.DecisionApprove, asked.Approval.ArgsDigest); err != nil {
		t.Fatalf("approve: %v", err)
	}
	approved := until(relaxed.ActionID, func(v httpapi.ActionView) bool {
		return v.Decision != nil && v.Decision.Permission == lifecycle.PermissionAllow
	})
	if d := approved.Decision; d.Reason.Source != "approval" || !reflect.DeepEqual(d.Sandbox, want) {
		t.Fatalf("approved relaxed call: %+v", d)
	}

	// Activity shows each action's profile in brief.
	act, err := human.Activity(ctx, session)
	if err != nil {
		t.Fatal(err)
	}
	brief := map[ids.ActionID]string{}
	for _, rows := range [][]activity.Row{act.NeedsAttention, act.InProgress, act.History} {
		for _, r := range rows {
			for _, e := range r.Executions {
				for _, a := range e.Actions {
					brief[a.ActionID] = a.Sandbox
				}
			}
		}
	}
	if brief[plain.ActionID] != "bwrap" || brief[relaxed.ActionID] != "bwrap+network" {
		t.Fatalf("activity sandbox: %v, want bwrap for %s and bwrap+network for %s", brief, plain.ActionID, relaxed.ActionID)
	}
}
