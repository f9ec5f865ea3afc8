package mcpdownstream

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openprogram/lifecycle/shared/identity"
)

// Contracts returns base (nil: identity.Builtin) with the contract of
// every listed downstream tool added: its arguments are checked against
// the tool's inputSchema (JSON Schema, github.com/google/jsonschema-go)
// when the call is prepared, like a built-in tool's, so a call the
// schema refuses ends not_started with invalid_arguments and the fields
// named, before any permission decision and without reaching the server.
// A downstream contract has no presentation-only field, so a call's
// identity (digest) is what it was without it. A tool whose schema
// cannot be resolved (a remote $ref, an unsupported draft) gets no
// contract (its server still checks it; logged once here). Tools of a
// server that did not start are not listed, so they have none either.
func (p *Pool) Contracts(base identity.Contracts) identity.Contracts {
	if base == nil {
		base = identity.Builtin
	}
	out := make(identity.Contracts, len(base))
	for k, v := range base {
		out[k] = v
	}
	for _, name := range p.names {
		s := p.servers[name]
		s.mu.Lock()
		tools := append([]*mcp.Tool(nil), s.tools...)
		s.mu.Unlock()
		for _, t := range tools {
			full := ToolName(name, t.Name)
			ct, err := schemaContract(full, t.InputSchema)
			if err != nil {
				p.log.Warn("an MCP tool's input schema cannot be used; its arguments are checked by its server only",
					"mcp_server", name, "tool", t.Name, "error", err)
				continue
			}
			out[full] = ct
		}
	}
	return out
}

// schemaContract is the contract of one tool: Check validates a call's
// arguments against schema (any JSON value the server listed; nil or
// absent: an object with any fields).
func schemaContract(tool string, schema any) (identity.Contract, error) {
	raw, err := json.Marshal(schema)
	if err != nil {
		return identity.Contract{}, fmt.Errorf("input schema: %w", err)
	}
	if schema == nil {
		raw = []byte(`{"type":"object"}`)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return identity.Contract{}, fmt.Errorf("input schema: %w", err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		return identity.Contract{}, fmt.Errorf("input schema: %w", err)
	}
	// A schema the validator cannot run (an unsupported draft) is found
	// now, not at the first call.
	if err := rs.Validate(map[string]any{}); err != nil && strings.HasPrefix(err.Error(), "cannot validate version") {
		return identity.Contract{}, fmt.Errorf("input schema: %w", err)
	}
	return identity.Contract{Tool: tool, Check: func(args json.RawMessage) []identity.Problem {
		return checkSchema(&s, rs, args)
	}}, nil
}

// checkSchema lists what is wrong with args: every missing required
// top-level field, then the first other problem the validator finds
// (jsonschema-go stops at one), named by its field ("a.b" when nested).
func checkSchema(s *jsonschema.Schema, rs *jsonschema.Resolved, args json.RawMessage) []identity.Problem {
	var instance any
	if err := json.Unmarshal(args, &instance); err != nil {
		return []identity.Problem{{Field: "arguments", Problem: "not JSON: " + err.Error()}}
	}
	obj, ok := instance.(map[string]any)
	if !ok {
		return []identity.Problem{{Field: "arguments", Problem: "not a JSON object"}}
	}
	var out []identity.Problem
	seen := map[string]bool{}
	for _, f := range s.Required {
		if _, ok := obj[f]; !ok && !seen[f] {
			out = append(out, identity.Problem{Field: f, Problem: "required"})
			seen[f] = true
		}
	}
	err := rs.Validate(obj)
	if err == nil {
		return out
	}
	for _, p := range problemsOf(err.Error()) {
		if !seen[p.Field] {
			out = append(out, p)
			seen[p.Field] = true
		}
	}
	if len(out) == 0 { // never a refusal without a named problem
		out = append(out, identity.Problem{Field: "arguments", Problem: err.Error()})
	}
	return out
}

// propertyName finds the property names in a schema location
// ("/properties/a/items/properties/b" -> a, b).
var propertyName = regexp.MustCompile(`/properties/([^/]+)`)

// problemsOf names the field of a jsonschema-go error ("validating root:
// validating /properties/a: type: ..."): the deepest schema location's
// property names, plus the property a required or additionalProperties
// problem names. Its text is the message after the locations.
func problemsOf(msg string) []identity.Problem {
	var path []string
	for strings.HasPrefix(msg, "validating ") {
		i := strings.Index(msg, ": ")
		if i < 0 {
			break
		}
		loc := msg[len("validating "):i]
		msg = msg[i+2:]
		var names []string
		for _, m := range propertyName.FindAllStringSubmatch(loc, -1) {
			names = append(names, strings.ReplaceAll(strings.ReplaceAll(m[1], "~1", "/"), "~0", "~"))
		}
		if len(names) > 0 {
			path = names
		}
	}
	field := func(extra string) string {
		f := strings.Join(append(append([]string(nil), path...), extra), ".")
		return strings.Trim(f, ".")
	}
	for _, kind := range []struct{ prefix, problem string }{
		{"required: missing properties: ", "required"},
		{"unexpected additional properties ", "not an argument of the tool (the schema allows no other fields)"},
	} {
		if rest, ok := strings.CutPrefix(msg, kind.prefix); ok {
			if names := quotedList(rest); len(names) > 0 {
				out := make([]identity.Problem, len(names))
				for i, n := range names {
					out[i] = identity.Problem{Field: field(n), Problem: kind.problem}
				}
				return out
			}
		}
	}
	f := field("")
	if f == "" {
		f = "arguments"
	}
	return []identity.Problem{{Field: f, Problem: msg}}
}

// quotedList reads a Go %q of a []string (`["a" "b"]`), sorted.
func quotedList(s string) []string {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "[") || !strings.HasSuffix(s, "]") {
		return nil
	}
	s = s[1 : len(s)-1]
	var out []string
	for s != "" {
		q, err := strconv.QuotedPrefix(s)
		if err != nil {
			return nil
		}
		v, err := strconv.Unquote(q)
		if err != nil {
			return nil
		}
		out = append(out, v)
		s = strings.TrimLeft(s[len(q):], " ")
	}
	sort.Strings(out)
	return out
}
