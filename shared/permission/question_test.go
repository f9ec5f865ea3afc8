package permission_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/permission"
)

// AskUserQuestion changes nothing outside the conversation and the
// person's answer is the decision: allowed by default (one prompt, not an
// approval and then a question), denied where nobody can answer, and a
// rule still wins.
func TestQuestionToolDefault(t *testing.T) {
	e := newEngine(t)
	ask := json.RawMessage(`{"questions":[{"question":"Which?","options":[{"label":"A"},{"label":"B"}]}]}`)
	cases := []struct {
		name        string
		mode        permission.Mode
		lines       []string
		interactive bool
		want        lifecycle.Permission
		code        permission.Code
	}{
		{"default interactive", permission.ModeDefault, nil, true, lifecycle.PermissionAllow, permission.CodeQuestion},
		{"plan mode (read-only)", permission.ModePlan, nil, true, lifecycle.PermissionAllow, permission.CodeQuestion},
		{"auto mode needs no review", permission.ModeAuto, nil, true, lifecycle.PermissionAllow, permission.CodeQuestion},
		{"noninteractive: nobody answers", permission.ModeDefault, nil, false, lifecycle.PermissionDeny, permission.CodeQuestion},
		{"dontAsk asks nobody", permission.ModeDontAsk, nil, true, lifecycle.PermissionDeny, permission.CodeQuestion},
		{"a deny rule wins", permission.ModeDefault, []string{"deny: AskUserQuestion"}, true, lifecycle.PermissionDeny, permission.CodeToolHidden},
		{"an ask rule wins", permission.ModeDefault, []string{"ask: AskUserQuestion"}, true, lifecycle.PermissionAsk, permission.CodeAskRule},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := policy(t, "v1", tc.mode, tc.lines...)
			d, err := e.Decide(context.Background(), permission.Request{Trusted: trusted(tc.interactive),
				Call: permission.Call{ActionID: newAction(), Tool: "AskUserQuestion", Args: ask}, Policy: p})
			if err != nil {
				t.Fatal(err)
			}
			if d.Permission != tc.want || d.Reason.Code != tc.code {
				t.Fatalf("got %s %s (%s), want %s %s", d.Permission, d.Reason.Code, d.Reason.Detail, tc.want, tc.code)
			}
		})
	}
}
