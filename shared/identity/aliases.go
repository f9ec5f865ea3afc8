package identity

import "sort"

// toolAliases maps each other spelling of a built-in tool to its canonical
// name. The host tools run bash, read_file, write_file and edit_file exactly
// as Bash, Read, Write and Edit (the same code, the same arguments), so
// every component that judges, routes or runs a tool by name asks
// CanonicalTool instead of keeping its own list: the permission engine
// (families, argument fields, rules, visibility), the built-in reviewer and
// the host tool runner. A name that is not here is its own tool.
var toolAliases = map[string]string{
	"bash":       "Bash",
	"read_file":  "Read",
	"write_file": "Write",
	"edit_file":  "Edit",
}

// CanonicalTool returns the canonical name of tool: the tool it is another
// spelling of, or tool itself. It is exact (case matters): "BASH" is not
// Bash, and no component runs it as Bash.
func CanonicalTool(tool string) string {
	if c, ok := toolAliases[tool]; ok {
		return c
	}
	return tool
}

// ToolNames returns every name of the tool canonical: canonical itself,
// then its other spellings, sorted.
func ToolNames(canonical string) []string {
	out := []string{canonical}
	var more []string
	for alias, c := range toolAliases {
		if c == canonical {
			more = append(more, alias)
		}
	}
	sort.Strings(more)
	return append(out, more...)
}

// ToolAliases returns the other spellings of the built-in tools and the
// canonical name of each.
func ToolAliases() map[string]string {
	out := make(map[string]string, len(toolAliases))
	for a, c := range toolAliases {
		out[a] = c
	}
	return out
}
