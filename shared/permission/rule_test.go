package permission_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/openprogram/lifecycle/shared/permission"
)

func TestParseRule(t *testing.T) {
	cases := []struct {
		text      string
		tool      string
		whole     bool
		appliesTo []string
		notTo     []string
	}{
		{text: "Bash", tool: "Bash", whole: true, appliesTo: []string{"Bash"}, notTo: []string{"Read"}},
		{text: "Bash(*)", tool: "Bash", whole: true},
		{text: "Bash(npm run test:*)", tool: "Bash"},
		{text: "Bash(git push *)", tool: "Bash"},
		{text: "  Bash(echo (a))  ", tool: "Bash"},
		{text: "Read(./secrets/**)", tool: "Read", appliesTo: []string{"Read", "Grep", "Glob", "LS"}, notTo: []string{"Edit"}},
		{text: "Edit(/etc/**)", tool: "Edit", appliesTo: []string{"Edit", "Write", "MultiEdit", "NotebookEdit"}, notTo: []string{"Read"}},
		{text: "Write(//tmp/x)", tool: "Write", appliesTo: []string{"Write"}, notTo: []string{"Edit"}},
		{text: "Read(~/.ssh/**)", tool: "Read"},
		{text: "WebFetch(domain:example.com)", tool: "WebFetch"},
		{text: "WebFetch(domain:*.example.com)", tool: "WebFetch"},
		{text: "mcp__github__create_issue", tool: "mcp__github__create_issue", whole: true, appliesTo: []string{"mcp__github__create_issue"}, notTo: []string{"mcp__github__delete_repo"}},
		{text: "mcp__github__*", tool: "mcp__github__*", whole: true, appliesTo: []string{"mcp__github__a", "mcp__github__b"}, notTo: []string{"mcp__gitlab__a"}},
		{text: "mcp__github", tool: "mcp__github", whole: true, appliesTo: []string{"mcp__github__a"}, notTo: []string{"mcp__githubx__a"}},
		{text: "WebSearch", tool: "WebSearch", whole: true},
	}
	for _, tc := range cases {
		t.Run(tc.text, func(t *testing.T) {
			r, err := permission.ParseRule(tc.text)
			if err != nil {
				t.Fatalf("ParseRule: %v", err)
			}
			if r.Tool != tc.tool || r.WholeTool() != tc.whole || r.Text != strings.TrimSpace(tc.text) {
				t.Errorf("got tool %q whole %v text %q", r.Tool, r.WholeTool(), r.Text)
			}
			for _, tool := range tc.appliesTo {
				if !r.AppliesTo(tool) {
					t.Errorf("does not apply to %s", tool)
				}
			}
			for _, tool := range tc.notTo {
				if r.AppliesTo(tool) {
					t.Errorf("applies to %s", tool)
				}
			}
		})
	}
}

func TestParseRuleErrors(t *testing.T) {
	cases := []struct{ text, msg string }{
		{"", "empty rule"},
		{"Bash(", "missing closing"},
		{"Bash(echo) && x", "missing closing"},
		{"Bash)", "')' without '('"},
		{"Bash()", "empty specifier"},
		{"Bash(:*)", "needs a prefix"},
		{"Read([)", "invalid path pattern"},
		{"Read(~root/x)", "~user"},
		{"WebFetch(example.com)", "domain:<host>"},
		{"WebFetch(domain:exa mple.com)", "not a host name"},
		{"mcp__srv__tool(x)", "no specifier"},
		{"mcp__srv__to*l", "not valid"},
		{"mcp____x", "server name"},
		{"WebSearch(query)", "takes no specifier"},
		{"Ba sh", "tool name"},
		{"*", "tool name"},
		{"Bash(" + strings.Repeat("a", permission.MaxRuleBytes) + ")", "more than"},
	}
	for _, tc := range cases {
		t.Run(tc.text, func(t *testing.T) {
			_, err := permission.ParseRule(tc.text)
			var re *permission.RuleError
			if !errors.As(err, &re) {
				t.Fatalf("ParseRule(%q) = %v, want a *RuleError", tc.text, err)
			}
			if !strings.Contains(re.Msg, tc.msg) {
				t.Errorf("message %q does not say %q", re.Msg, tc.msg)
			}
		})
	}
}

// FuzzParseRule: the parser never panics, and a rule it accepts can be
// used and parses again to the same rule.
//
//	go test -run '^$' -fuzz FuzzParseRule -fuzztime 30s ./shared/permission/
func FuzzParseRule(f *testing.F) {
	for _, seed := range []string{
		"Bash", "Bash(npm run test:*)", "Bash(git push *)", "Read(./secrets/**)", "Edit(/etc/**)",
		"Read(~/.ssh/**)", "Write(//abs/{a,b}/*.go)", "WebFetch(domain:example.com)", "WebFetch(domain:*.a.b)",
		"mcp__server__tool", "mcp__server__*", "mcp__server", "Bash(echo (a))", "Bash(:*)", "Read([)", "",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		r, err := permission.ParseRule(text)
		if err != nil {
			var re *permission.RuleError
			if !errors.As(err, &re) {
				t.Fatalf("untyped error %T", err)
			}
			return
		}
		again, err := permission.ParseRule(r.Text)
		if err != nil || again.Text != r.Text || again.Tool != r.Tool || again.WholeTool() != r.WholeTool() {
			t.Fatalf("%q parsed to %q, which reparses to %q (%v)", text, r.Text, again.Text, err)
		}
		r.AppliesTo("Bash")
		r.AppliesTo("Edit")
		r.AppliesTo("mcp__server__tool")
		p := &permission.Policy{Version: "v1", Mode: permission.ModeDefault, Deny: []permission.Rule{r}}
		permission.VisibleTools(p, []permission.ToolSpec{{Name: "Bash"}, {Name: "Read"}, {Name: r.Tool}})
		p.Digest()
	})
}
