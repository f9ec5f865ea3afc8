package asl

import (
	"fmt"
	"strconv"
	"strings"
)

// Path is a JSONPath of the subset this package implements: "$" (the state's
// data) or "$$" (the context object), followed by field steps (.name or
// ['name']) and array index steps ([0]). Wildcards, recursive descent,
// filters, slices and negative indexes are refused when the definition is
// parsed, because the engine could not give them the meaning AWS gives them.
type Path struct {
	text    string
	context bool
	steps   []pathStep
}

type pathStep struct {
	field   string
	index   int
	isIndex bool
}

// String returns the path as written in the definition.
func (p *Path) String() string { return p.text }

// IsRoot reports whether the path is "$".
func (p *Path) IsRoot() bool { return !p.context && len(p.steps) == 0 }

// Context reports whether the path reads the context object ("$$...").
func (p *Path) Context() bool { return p.context }

// ParsePath parses a path.
func ParsePath(s string) (*Path, error) {
	p, rest, err := scanPath(s, false)
	if err != nil {
		return nil, err
	}
	if rest != "" {
		return nil, fmt.Errorf("path %q: unexpected %q", s, rest)
	}
	return p, nil
}

// scanPath reads a path at the start of s. With stopAtDelim it stops before
// ',' ')' or whitespace (paths inside intrinsic function arguments) and
// returns the rest.
func scanPath(s string, stopAtDelim bool) (*Path, string, error) {
	orig := s
	if !strings.HasPrefix(s, "$") {
		return nil, s, fmt.Errorf("path %q must start with $", orig)
	}
	p := &Path{}
	s = s[1:]
	if strings.HasPrefix(s, "$") {
		p.context = true
		s = s[1:]
	}
	for s != "" {
		c := s[0]
		switch {
		case stopAtDelim && (c == ',' || c == ')' || c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			p.text = orig[:len(orig)-len(s)]
			return p, s, nil
		case c == '.':
			if strings.HasPrefix(s, "..") {
				return nil, s, fmt.Errorf("path %q: recursive descent (..) is not supported", orig)
			}
			s = s[1:]
			n := 0
			for n < len(s) && isNameChar(s[n]) {
				n++
			}
			if n == 0 {
				if s != "" && s[0] == '*' {
					return nil, s, fmt.Errorf("path %q: wildcards are not supported", orig)
				}
				return nil, s, fmt.Errorf("path %q: empty field name", orig)
			}
			name := s[:n]
			s = s[n:]
			if s != "" && s[0] == '(' {
				return nil, s, fmt.Errorf("path %q: JSONPath functions are not supported", orig)
			}
			p.steps = append(p.steps, pathStep{field: name})
		case c == '[':
			end := strings.IndexByte(s, ']')
			if end < 0 {
				return nil, s, fmt.Errorf("path %q: missing ]", orig)
			}
			inner := s[1:end]
			s = s[end+1:]
			switch {
			case len(inner) >= 2 && (inner[0] == '\'' || inner[0] == '"') && inner[len(inner)-1] == inner[0]:
				name := inner[1 : len(inner)-1]
				if name == "" || strings.ContainsAny(name, "'\"\\") {
					return nil, s, fmt.Errorf("path %q: unsupported bracket field [%s]", orig, inner)
				}
				p.steps = append(p.steps, pathStep{field: name})
			default:
				i, err := strconv.Atoi(inner)
				if err != nil || i < 0 || strings.HasPrefix(inner, "+") {
					return nil, s, fmt.Errorf("path %q: only non-negative array indexes and quoted field names are supported in brackets, not [%s]", orig, inner)
				}
				p.steps = append(p.steps, pathStep{index: i, isIndex: true})
			}
		default:
			return nil, s, fmt.Errorf("path %q: unexpected character %q", orig, c)
		}
	}
	p.text = orig
	return p, "", nil
}

// isNameChar: characters of a dot-notation field name. Everything that has
// a meaning in JSONPath or in intrinsic function syntax is excluded.
func isNameChar(c byte) bool {
	switch c {
	case '.', '[', ']', '\'', '"', ' ', '\t', '\n', '\r', '*', '(', ')', ',', '?', '$', '@', '\\':
		return false
	}
	return c >= 0x20
}

// ContextFunc returns the context object ($$). It is called only when a
// path needs it, so states that never read $$ never build it.
type ContextFunc func() any

// Get selects the value a path names in data (or in the context object).
// A path that selects nothing is a *RuntimeError (States.Runtime).
func (p *Path) Get(data any, ctx ContextFunc) (any, error) {
	return p.getFor("", data, ctx)
}

// getFor is Get with the name of the field the path came from, for the
// cause Step Functions reports ("The JSONPath '$.a' specified for the field
// 'InputPath' could not be found in the input '{...}'").
func (p *Path) getFor(field string, data any, ctx ContextFunc) (any, error) {
	v, ok := p.lookup(data, ctx)
	if !ok {
		if field == "" {
			return nil, runtimeErrorf("The JSONPath '%s' could not be found in the input %s", p.text, clip(data, p.context, ctx))
		}
		return nil, runtimeErrorf("The JSONPath '%s' specified for the field '%s' could not be found in the input %s", p.text, field, clip(data, p.context, ctx))
	}
	return v, nil
}

// Exists reports whether the path selects a value (IsPresent).
func (p *Path) Exists(data any, ctx ContextFunc) bool {
	_, ok := p.lookup(data, ctx)
	return ok
}

func (p *Path) lookup(data any, ctx ContextFunc) (any, bool) {
	cur := data
	if p.context {
		if ctx == nil {
			return nil, false
		}
		cur = ctx()
	}
	for _, st := range p.steps {
		if st.isIndex {
			arr, ok := cur.([]any)
			if !ok || st.index >= len(arr) {
				return nil, false
			}
			cur = arr[st.index]
			continue
		}
		obj, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		cur, ok = obj[st.field]
		if !ok {
			return nil, false
		}
	}
	return cur, true
}

// clip renders the data a failed path was applied to, shortened for causes.
func clip(data any, context bool, ctx ContextFunc) string {
	if context {
		if ctx == nil {
			return "the context object"
		}
		data = ctx()
	}
	s := mustEncode(data)
	if len(s) > 256 {
		s = s[:256] + "..."
	}
	return "'" + s + "'"
}

// validateResultPath checks the extra rules of ResultPath: it names a place
// in the state's input, so it cannot read the context object and, in this
// implementation, only walks object fields.
func validateResultPath(p *Path) error {
	if p.context {
		return fmt.Errorf("ResultPath %q cannot refer to the context object", p.text)
	}
	for _, st := range p.steps {
		if st.isIndex {
			return fmt.Errorf("ResultPath %q: array indexes are not supported, only object fields", p.text)
		}
	}
	return nil
}

// setResult places result at the ResultPath p inside input and returns the
// new document. Objects along the path are copied, never modified; missing
// objects are created. An input (or intermediate value) that is not an
// object cannot hold the result: States.Runtime.
func setResult(p *Path, input, result any) (any, error) {
	if len(p.steps) == 0 {
		return result, nil
	}
	root, ok := input.(map[string]any)
	if !ok {
		return nil, runtimeErrorf("Unable to apply ResultPath '%s' to input %s: the input is a %s, not an object", p.text, clip(input, false, nil), typeName(input))
	}
	out := copyObject(root)
	cur := out
	for i, st := range p.steps {
		if i == len(p.steps)-1 {
			cur[st.field] = result
			break
		}
		next, exists := cur[st.field]
		var child map[string]any
		switch n := next.(type) {
		case map[string]any:
			child = copyObject(n)
		default:
			if exists {
				return nil, runtimeErrorf("Unable to apply ResultPath '%s' to input %s: the field '%s' is a %s, not an object", p.text, clip(input, false, nil), st.field, typeName(next))
			}
			child = map[string]any{}
		}
		cur[st.field] = child
		cur = child
	}
	return out, nil
}

func copyObject(m map[string]any) map[string]any {
	out := make(map[string]any, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	return out
}
