package identity

import (
	"strings"
	"testing"
)

func TestCanonicalTool(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"bash is Bash", "bash", "Bash"},
		{"read_file is Read", "read_file", "Read"},
		{"write_file is Write", "write_file", "Write"},
		{"edit_file is Edit", "edit_file", "Edit"},
		{"a canonical name is itself", "Bash", "Bash"},
		{"case matters", "BASH", "BASH"},
		{"unknown tool is itself", "mcp__x__bash", "mcp__x__bash"},
		{"empty", "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := CanonicalTool(tc.in); got != tc.want {
				t.Errorf("CanonicalTool(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
	if got := strings.Join(ToolNames("Edit"), ","); got != "Edit,edit_file" {
		t.Errorf("ToolNames(Edit) = %s", got)
	}
	if got := strings.Join(ToolNames("WebFetch"), ","); got != "WebFetch" {
		t.Errorf("ToolNames(WebFetch) = %s", got)
	}
	// The returned map is a copy: changing it changes nothing here.
	ToolAliases()["bash"] = "WebFetch"
	if CanonicalTool("bash") != "Bash" {
		t.Error("ToolAliases exposed the table")
	}
}
