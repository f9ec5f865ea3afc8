package actionflow_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/ids"
)

func TestExecutionTitleIsValidatedAndFixedAtStart(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	submit := func(exec ids.ExecutionID, call, title string) (actionflow.Action, error) {
		a, _, err := f.svc.Submit(ctx, actionflow.SubmitRequest{SessionID: "ses_1", ExecutionID: exec, ToolCallID: ids.ToolCallID(call),
			Tool: "noop", Arguments: json.RawMessage(`{}`), Interactive: true, Title: title,
			Principal: actionflow.Principal{Subject: "agent", Role: "agent"}})
		return a, err
	}
	first, err := submit("", "c1", "Fix the login test")
	if err != nil {
		t.Fatal(err)
	}
	if e, _ := f.svc.GetExecution(ctx, first.ExecutionID); e.Title != "Fix the login test" {
		t.Fatalf("stored title %q", e.Title)
	}
	untitled, err := submit("", "c0", "")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		exec  ids.ExecutionID
		title string
		// want is "" for success, else the problem's words
		want string
	}{
		{"the same title again", first.ExecutionID, "Fix the login test", ""},
		{"no title on a later call", first.ExecutionID, "", ""},
		{"another title later", first.ExecutionID, "Something else", `has "Fix the login test"`},
		{"a title for an execution started without one", untitled.ExecutionID, "Late", "has none"},
		{"too long", "", strings.Repeat("x", actionflow.MaxTitleRunes+1), "more than 120"},
		{"120 runes of two bytes each is fine", "", strings.Repeat("é", actionflow.MaxTitleRunes), ""},
		{"a newline", "", "line one\nline two", "control"},
		{"a bidi override", "", "abc\u202edcb", "bidirectional"},
		{"blank", "", "   ", "blank"},
		{"invalid UTF-8", "", "a\xffb", "UTF-8"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := submit(c.exec, "c"+string(rune('a'+i)), c.title)
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var ve *actionflow.ValidationError
			if !errors.As(err, &ve) || ve.Field != "title" || !strings.Contains(ve.Msg, c.want) {
				t.Fatalf("err %v, want a title validation error saying %q", err, c.want)
			}
		})
	}
	if e, _ := f.svc.GetExecution(ctx, first.ExecutionID); e.Title != "Fix the login test" {
		t.Fatalf("title changed to %q", e.Title)
	}
}
