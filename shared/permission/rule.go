package permission

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/openprogram/lifecycle/shared/permission/bashscan"
)

// Tool families: a rule named after the family name applies to every tool
// of the family ("Edit(/etc/**)" also covers Write, MultiEdit and
// NotebookEdit), a rule named after a member applies to that member only.
var (
	readFamily = map[string]bool{"Read": true, "Glob": true, "Grep": true, "LS": true, "NotebookRead": true}
	editFamily = map[string]bool{"Edit": true, "MultiEdit": true, "Write": true, "NotebookEdit": true}
)

// ruleKind is how a rule's specifier is interpreted.
type ruleKind int

const (
	kindWhole  ruleKind = iota // Tool: every call of the tool
	kindBash                   // Bash(pattern)
	kindPath                   // Read(path), Edit(path), ...
	kindDomain                 // WebFetch(domain:host)
	kindMCP                    // mcp__server, mcp__server__*, mcp__server__tool
)

// Rule is one parsed permission rule. Build it with ParseRule.
type Rule struct {
	// Text is the rule as written (surrounding space removed).
	Text string
	// Tool is the tool (or family, or MCP server) the rule names, by its
	// canonical name: "bash(git *)" has Tool "Bash" (identity.CanonicalTool).
	Tool string
	// Specifier is the text inside the parentheses ("" for a whole tool).
	Specifier string

	kind ruleKind
	// bash alternatives: "git push *" is {"git push", "git push *"}.
	bash []bashscan.Pattern
	// path is the raw path pattern (resolved against the trusted context
	// when matched).
	path string
	// domain: the host; subdomains when wildcard ("*.example.com").
	domain         string
	domainWildcard bool
	// mcp: server, and tool ("" = every tool of the server).
	mcpServer, mcpTool string
}

// RuleError is a rule that does not parse.
type RuleError struct {
	Rule string
	Msg  string
}

func (e *RuleError) Error() string { return fmt.Sprintf("rule %q: %s", e.Rule, e.Msg) }

var toolName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.-]*$`)

// MaxRuleBytes bounds one rule's text.
const MaxRuleBytes = 4096

// ParseRule parses one rule:
//
//	Bash                       every Bash call
//	Bash(npm run test:*)       legacy prefix form: "npm run test" alone or followed by a space and anything
//	Bash(git push *)           glob: * is any text; a trailing " *" also matches the bare prefix
//	Read(./secrets/**)         path relative to the project root (doublestar syntax)
//	Edit(/etc/**)              absolute path; "//etc/**" is the same absolute path
//	Read(~/.ssh/**)            path under the home directory of the trusted context
//	WebFetch(domain:example.com)  one host; domain:*.example.com for its subdomains
//	mcp__server__tool          one MCP tool; mcp__server or mcp__server__* for all tools of a server
//	Tool                       any other tool, whole-tool only
//
// Bash patterns are matched against each simple command of the program
// (quotes removed, words joined by single spaces), never against the raw
// text. Unlike Claude Code, where "/path" is relative to the settings file,
// a single leading slash here is an absolute path: "Edit(/etc/**)" means
// /etc. "Bash(*)" is the whole tool.
func ParseRule(text string) (Rule, error) {
	t := strings.TrimSpace(text)
	fail := func(format string, a ...any) (Rule, error) {
		return Rule{}, &RuleError{Rule: t, Msg: fmt.Sprintf(format, a...)}
	}
	if t == "" {
		return fail("empty rule")
	}
	if len(t) > MaxRuleBytes {
		return fail("rule is %d bytes, more than %d", len(t), MaxRuleBytes)
	}
	name, spec, hasSpec := t, "", false
	if i := strings.IndexByte(t, '('); i >= 0 {
		if !strings.HasSuffix(t, ")") {
			return fail("missing closing ')' at the end")
		}
		name, spec, hasSpec = t[:i], t[i+1:len(t)-1], true
	} else if strings.ContainsRune(t, ')') {
		return fail("')' without '('")
	}
	if strings.HasPrefix(name, "mcp__") {
		return parseMCP(t, name, hasSpec)
	}
	if !toolName.MatchString(name) {
		return fail("tool name %q: want letters, digits, '_', '-' or '.', starting with a letter", name)
	}
	// A rule names the tool, whatever the spelling: bash(git *) is
	// Bash(git *), read_file(./x) is Read(./x).
	r := Rule{Text: t, Tool: canonicalTool(name), Specifier: spec}
	if !hasSpec {
		return r, nil
	}
	if strings.TrimSpace(spec) == "" {
		return fail("empty specifier: write %q for the whole tool", name)
	}
	switch {
	case r.Tool == "Bash":
		return parseBashRule(r)
	case readFamily[r.Tool] || editFamily[r.Tool]:
		return parsePathRule(r)
	case r.Tool == "WebFetch":
		return parseDomainRule(r)
	}
	return fail("tool %s takes no specifier; only Bash, file tools (Read, Edit, ...) and WebFetch do", name)
}

// MustParseRule is ParseRule for rules known to be valid (tests, constants).
func MustParseRule(text string) Rule {
	r, err := ParseRule(text)
	if err != nil {
		panic(err)
	}
	return r
}

var spaces = regexp.MustCompile(`\s+`)

func parseBashRule(r Rule) (Rule, error) {
	spec := strings.TrimSpace(spaces.ReplaceAllString(r.Specifier, " "))
	if spec == "*" {
		r.Specifier = ""
		r.kind = kindWhole
		return r, nil
	}
	if strings.HasSuffix(spec, ":*") {
		prefix := strings.TrimSpace(strings.TrimSuffix(spec, ":*"))
		if prefix == "" {
			return Rule{}, &RuleError{Rule: r.Text, Msg: "the legacy prefix form needs a prefix before \":*\""}
		}
		spec = prefix + " *"
	}
	r.kind = kindBash
	toPattern := func(s string) bashscan.Pattern {
		var p bashscan.Pattern
		for _, c := range s {
			if c == '*' {
				if len(p) == 0 || p[len(p)-1] != bashscan.Wild {
					p = append(p, bashscan.Wild)
				}
				continue
			}
			p = append(p, c)
		}
		return p
	}
	r.bash = []bashscan.Pattern{toPattern(spec)}
	if prefix, ok := strings.CutSuffix(spec, " *"); ok {
		// "git push *" also matches the bare "git push".
		r.bash = append(r.bash, toPattern(prefix))
	}
	return r, nil
}

func parsePathRule(r Rule) (Rule, error) {
	p := strings.TrimSpace(r.Specifier)
	fail := func(msg string) (Rule, error) { return Rule{}, &RuleError{Rule: r.Text, Msg: msg} }
	if strings.HasPrefix(p, "~") && p != "~" && !strings.HasPrefix(p, "~/") {
		return fail("~user paths are not supported; use ~/ for the home directory or an absolute path")
	}
	if !doublestar.ValidatePattern(p) {
		return fail("invalid path pattern " + p)
	}
	r.kind = kindPath
	r.path = p
	return r, nil
}

var hostname = regexp.MustCompile(`^(\*\.)?([a-z0-9]([a-z0-9-]*[a-z0-9])?\.)*[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)

func parseDomainRule(r Rule) (Rule, error) {
	host, ok := strings.CutPrefix(strings.TrimSpace(r.Specifier), "domain:")
	if !ok {
		return Rule{}, &RuleError{Rule: r.Text, Msg: "WebFetch rules take domain:<host>"}
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if !hostname.MatchString(host) {
		return Rule{}, &RuleError{Rule: r.Text, Msg: fmt.Sprintf("%q is not a host name (optionally starting with *.)", host)}
	}
	r.kind = kindDomain
	r.domain, r.domainWildcard = strings.TrimPrefix(host, "*."), strings.HasPrefix(host, "*.")
	return r, nil
}

var mcpPart = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*$`)

func parseMCP(text, name string, hasSpec bool) (Rule, error) {
	fail := func(msg string) (Rule, error) { return Rule{}, &RuleError{Rule: text, Msg: msg} }
	if hasSpec {
		return fail("MCP rules take no specifier: use mcp__server, mcp__server__* or mcp__server__tool")
	}
	rest := strings.TrimPrefix(name, "mcp__")
	server, tool, hasTool := strings.Cut(rest, "__")
	if !mcpPart.MatchString(server) || strings.Contains(server, "__") {
		return fail(fmt.Sprintf("MCP server name %q is not valid", server))
	}
	if hasTool && tool != "*" && (!mcpPart.MatchString(tool) || strings.Contains(tool, "*")) {
		return fail(fmt.Sprintf("MCP tool name %q is not valid (use * alone for every tool)", tool))
	}
	r := Rule{Text: text, Tool: name, kind: kindMCP, mcpServer: server}
	if hasTool && tool != "*" {
		r.mcpTool = tool
	}
	return r, nil
}

// String returns the rule's text.
func (r Rule) String() string { return r.Text }

// WholeTool reports whether the rule names a whole tool (or every tool of
// an MCP server, or a tool family) rather than some of its operations.
func (r Rule) WholeTool() bool { return r.kind == kindWhole || r.kind == kindMCP }

// AppliesTo reports whether the rule concerns calls of tool (by name,
// family or MCP server), whatever its specifier. Names are compared by
// their canonical spelling: a rule for Bash applies to bash, a Read or
// Edit family rule to read_file, write_file and edit_file, and a rule
// naming bash to Bash.
func (r Rule) AppliesTo(tool string) bool {
	if r.kind == kindMCP {
		if r.mcpTool == "" {
			return strings.HasPrefix(tool, "mcp__"+r.mcpServer+"__")
		}
		return tool == "mcp__"+r.mcpServer+"__"+r.mcpTool
	}
	tool = canonicalTool(tool)
	if canonicalTool(r.Tool) == tool {
		return true
	}
	switch r.Tool {
	case "Read":
		return readFamily[tool]
	case "Edit":
		return editFamily[tool]
	}
	return false
}

// appliesToBashPath reports whether a path rule also judges the files a
// Bash program reads (Read rules) or writes (Edit rules). Rules naming a
// single member (Write, Grep) judge that tool only.
func (r Rule) appliesToBashPath(access bashscan.Access) bool {
	if r.kind != kindPath {
		return false
	}
	return (r.Tool == "Read" && access.Reads()) || (r.Tool == "Edit" && access.Writes())
}
