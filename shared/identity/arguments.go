package identity

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/openprogram/lifecycle/shared/question"
)

// Type is the JSON type of an argument field.
type Type string

const (
	TypeString  Type = "string"
	TypeInteger Type = "integer"
	TypeBoolean Type = "boolean"
)

// Field is one argument field of a tool contract. It has exactly one name:
// another spelling is refused (Contract.Renamed says which name to use).
type Field struct {
	Name     string
	Type     Type
	Required bool
	// NonEmpty: a string that must not be blank.
	NonEmpty bool
	// Path: a path the tool resolves inside its workspace; it may not lead
	// out of it.
	Path bool
	// Min and Max bound an integer (both 0: unbounded).
	Min, Max int64
}

// Problem is one invalid argument field, named.
type Problem struct {
	Field   string `json:"field"`
	Problem string `json:"problem"`
	// OutsideWorkspace: a path field that leads out of the workspace (a
	// hard constraint, not a correctable typo of the tool call's shape).
	OutsideWorkspace bool `json:"-"`
}

// fileTool is the contract of a file tool: file_path is its one path field,
// and "path" (a spelling other tool sets use) is refused with a pointer to it.
func fileTool(name string, fields ...Field) Contract {
	return Contract{Tool: name, Closed: true, Renamed: map[string]string{"path": "file_path"},
		Fields: append([]Field{{Name: "file_path", Type: TypeString, Required: true, NonEmpty: true, Path: true}}, fields...)}
}

var (
	bashFields = []Field{
		{Name: "command", Type: TypeString, Required: true, NonEmpty: true},
		{Name: "description", Type: TypeString},
		{Name: "timeout", Type: TypeInteger, Min: 0, Max: 600000},
		// Escalation: the same command with the sandbox relaxed (Claude
		// Code's spelling for "unconfined"; network: reach the network).
		// Part of the call's identity, so a grant or approval of the
		// sandboxed form never covers the relaxed one; the permission
		// engine asks unless a rule allows the relaxation.
		{Name: "dangerouslyDisableSandbox", Type: TypeBoolean},
		{Name: "network", Type: TypeBoolean},
		// run_in_background starts a managed process instead of waiting
		// for the command; it is part of the identity (digest): the same
		// command in the foreground is another operation.
		{Name: "run_in_background", Type: TypeBoolean},
		// No cwd: a host command runs in the workspace root, where the
		// engine resolves its paths (cd DIR && ... is analysed instead).
	}
	writeFields = []Field{{Name: "content", Type: TypeString, Required: true}}
	editFields  = []Field{
		{Name: "old_string", Type: TypeString, Required: true, NonEmpty: true},
		{Name: "new_string", Type: TypeString, Required: true},
		{Name: "replace_all", Type: TypeBoolean},
	}
)

func init() {
	// The host tools, under both their names, with the argument shape the
	// published schema (hosttools.Specs, GET /v1/tools) gives them: closed
	// objects, one name per field.
	for _, name := range []string{"Bash", "bash"} {
		c := Builtin[name]
		c.Tool, c.Fields, c.Closed = name, bashFields, true
		Builtin[name] = c
	}
	for _, name := range []string{"Read", "read_file"} {
		Builtin[name] = fileTool(name)
	}
	for _, name := range []string{"Write", "write_file"} {
		Builtin[name] = fileTool(name, writeFields...)
	}
	for _, name := range []string{"Edit", "edit_file"} {
		Builtin[name] = fileTool(name, editFields...)
	}
	// AskUserQuestion: a nested schema (package question) checked whole.
	Builtin[QuestionTool] = Contract{Tool: QuestionTool, Check: func(args json.RawMessage) []Problem {
		_, probs := question.Parse(args)
		out := make([]Problem, len(probs))
		for i, p := range probs {
			out[i] = Problem{Field: p.Field, Problem: p.Problem}
		}
		return out
	}}
}

// QuestionTool is the tool an agent asks the human with (routed to the
// question executor).
const QuestionTool = "AskUserQuestion"

// CheckArguments checks args (a JSON object) against the contract: every
// required field present, every field of its type and bounds, no field
// the contract does not name when it is closed, and no relative path
// field that climbs out of the workspace (".." after cleaning). Absolute
// paths and symbolic links need the workspace itself: the caller resolves
// PathArguments against it. A contract without fields checks nothing. The
// problems are sorted by field.
func (c Contract) CheckArguments(args json.RawMessage) []Problem {
	if c.Check != nil {
		out := c.Check(args)
		sort.Slice(out, func(i, j int) bool { return out[i].Field < out[j].Field })
		return out
	}
	if len(c.Fields) == 0 {
		return nil
	}
	fields, err := object(args)
	if err != nil {
		return []Problem{{Field: "arguments", Problem: err.Error()}}
	}
	var out []Problem
	known := map[string]bool{}
	for _, f := range c.Fields {
		known[f.Name] = true
		raw, ok := fields[f.Name]
		if !ok {
			if f.Required {
				out = append(out, Problem{Field: f.Name, Problem: "required"})
			}
			continue
		}
		if p := f.check(raw); p != nil {
			out = append(out, *p)
		}
	}
	if c.Closed {
		for name := range fields {
			if known[name] {
				continue
			}
			msg := fmt.Sprintf("not an argument of %s (it takes %s)", c.Tool, strings.Join(c.fieldNames(), ", "))
			if to, ok := c.Renamed[name]; ok {
				msg = fmt.Sprintf("not an argument of %s: the field is named %q", c.Tool, to)
			}
			out = append(out, Problem{Field: name, Problem: msg})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Field < out[j].Field })
	return out
}

// PathArgument is the value of one path field of a call.
type PathArgument struct {
	Field string
	Path  string
}

// PathArguments lists the call's path fields that are non-empty strings.
func (c Contract) PathArguments(args json.RawMessage) []PathArgument {
	fields, err := object(args)
	if err != nil {
		return nil
	}
	var out []PathArgument
	for _, f := range c.Fields {
		var s string
		if raw, ok := fields[f.Name]; ok && f.Path && json.Unmarshal(raw, &s) == nil && s != "" {
			out = append(out, PathArgument{Field: f.Name, Path: s})
		}
	}
	return out
}

func (c Contract) fieldNames() []string {
	names := make([]string, len(c.Fields))
	for i, f := range c.Fields {
		names[i] = f.Name
	}
	return names
}

func object(args json.RawMessage) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	var fields map[string]json.RawMessage
	if err := dec.Decode(&fields); err != nil || fields == nil {
		return nil, fmt.Errorf("not a JSON object")
	}
	return fields, nil
}

func jsonType(raw json.RawMessage) string {
	switch t := bytes.TrimSpace(raw); {
	case len(t) == 0:
		return "nothing"
	case t[0] == '"':
		return "a string"
	case t[0] == '{':
		return "an object"
	case t[0] == '[':
		return "an array"
	case t[0] == 't' || t[0] == 'f':
		return "a boolean"
	case t[0] == 'n':
		return "null"
	}
	return "a number"
}

func (f Field) check(raw json.RawMessage) *Problem {
	bad := func(format string, a ...any) *Problem {
		return &Problem{Field: f.Name, Problem: fmt.Sprintf(format, a...)}
	}
	switch f.Type {
	case TypeString:
		var s string
		if err := json.Unmarshal(raw, &s); err != nil || jsonType(raw) != "a string" {
			return bad("want a string, got %s", jsonType(raw))
		}
		if f.NonEmpty && strings.TrimSpace(s) == "" {
			return bad("must not be empty")
		}
		if f.Path && s != "" && !filepath.IsAbs(s) {
			if clean := filepath.Clean(s); clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
				return &Problem{Field: f.Name, Problem: fmt.Sprintf("%q is outside the workspace", s), OutsideWorkspace: true}
			}
		}
	case TypeInteger:
		var n json.Number
		if err := json.Unmarshal(raw, &n); err != nil || jsonType(raw) != "a number" {
			return bad("want an integer, got %s", jsonType(raw))
		}
		v, err := n.Int64()
		if err != nil {
			return bad("want an integer, got %s", n)
		}
		if (f.Min != 0 || f.Max != 0) && (v < f.Min || v > f.Max) {
			return bad("must be %d..%d, got %d", f.Min, f.Max, v)
		}
	case TypeBoolean:
		var b bool
		if err := json.Unmarshal(raw, &b); err != nil || jsonType(raw) != "a boolean" {
			return bad("want true or false, got %s", jsonType(raw))
		}
	}
	return nil
}
