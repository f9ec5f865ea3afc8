package actionflow_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
)

// A host task published after more open actions than one index page
// (pending approvals, running actions) is still listed: the listing reads
// on past the first page instead of starving every later task.
func TestHostTasksBehindManyOpenActions(t *testing.T) {
	f := newFixture(t, func(c *actionflow.Config) {
		c.Decider = ruleDecider{byTool: map[string]lifecycle.Permission{"Bash": lifecycle.PermissionAllow, "risky": lifecycle.PermissionAsk}}
	})
	ctx := context.Background()
	submit := func(i int, tool, args string) actionflow.Action {
		a, _, err := f.svc.Submit(ctx, actionflow.SubmitRequest{SessionID: "ses_1", ToolCallID: ids.ToolCallID(fmt.Sprintf("call_%d", i)),
			Tool: tool, Arguments: json.RawMessage(args), Interactive: true, Principal: actionflow.Principal{Subject: "agent", Role: "agent"}})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	const ahead = 1001 // one page of the open index is 1000
	for i := range ahead {
		submit(i, "risky", `{}`)
	}
	a := submit(ahead, "Bash", `{"command":"true"}`)
	if d, err := f.svc.Authorize(ctx, in(a)); err != nil || d.Executor != "host" {
		t.Fatalf("authorize: %+v %v", d, err)
	}
	pub := in(a)
	pub.Mode, pub.TaskToken = "publish", "tok-h"
	if _, err := f.svc.Dispatch(ctx, pub); err != nil {
		t.Fatal(err)
	}
	tasks, err := f.svc.HostTasks(ctx, "ses_1", 64)
	if err != nil || len(tasks) != 1 || tasks[0].ActionID != a.ActionID {
		t.Fatalf("host tasks behind %d open actions: %d %v", ahead, len(tasks), err)
	}
}
