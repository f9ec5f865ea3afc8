package asl

import (
	"fmt"
	"sort"
	"strings"
)

// Template is a payload template (Parameters, ResultSelector): a JSON value
// in which object fields whose name ends in ".$" take their value from a
// path or an intrinsic function, the ".$" being removed from the name.
type Template struct {
	root tnode
	// usesToken: some field reads $$.Task.Token.
	usesToken bool
}

type tnode interface {
	eval(data any, ctx ContextFunc) (any, error)
}

type tliteral struct{ v any }

type tobject struct {
	keys []string
	vals []tnode
}

type tarray struct{ items []tnode }

type tpath struct {
	field string // the field name as written (with .$), for causes
	p     *Path
}

type tcall struct{ c *Intrinsic }

func (n tliteral) eval(any, ContextFunc) (any, error) { return n.v, nil }

func (n *tobject) eval(data any, ctx ContextFunc) (any, error) {
	out := make(map[string]any, len(n.keys))
	for i, k := range n.keys {
		v, err := n.vals[i].eval(data, ctx)
		if err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, nil
}

func (n *tarray) eval(data any, ctx ContextFunc) (any, error) {
	out := make([]any, len(n.items))
	for i, it := range n.items {
		v, err := it.eval(data, ctx)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

func (n *tpath) eval(data any, ctx ContextFunc) (any, error) {
	return n.p.getFor(n.field, data, ctx)
}

func (n *tcall) eval(data any, ctx ContextFunc) (any, error) { return n.c.Eval(data, ctx) }

// Eval builds the payload from the state's data and context object.
func (t *Template) Eval(data any, ctx ContextFunc) (any, error) {
	return t.root.eval(data, ctx)
}

// UsesTaskToken reports whether the template reads $$.Task.Token.
func (t *Template) UsesTaskToken() bool { return t.usesToken }

// parseTemplate compiles a decoded JSON value into a template, reporting
// problems under jsonPath.
func parseTemplate(v any, jsonPath string, r *reporter) *Template {
	t := &Template{}
	t.root = t.compile(v, jsonPath, r)
	return t
}

func (t *Template) compile(v any, jsonPath string, r *reporter) tnode {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		obj := &tobject{}
		dynamic := false
		seen := map[string]string{}
		for _, k := range keys {
			fieldPath := jsonPath + "." + k
			name := k
			var node tnode
			if strings.HasSuffix(k, ".$") {
				name = strings.TrimSuffix(k, ".$")
				s, ok := x[k].(string)
				if !ok {
					r.add(fieldPath, "the value of a field ending in .$ must be a string holding a path or an intrinsic function, got %s", typeName(x[k]))
					continue
				}
				switch {
				case strings.HasPrefix(s, "$"):
					p, err := ParsePath(s)
					if err != nil {
						r.add(fieldPath, "%v", err)
						continue
					}
					if isTaskTokenPath(p) {
						t.usesToken = true
					}
					node = &tpath{field: k, p: p}
				case IsIntrinsic(s):
					c, err := ParseIntrinsic(s)
					if err != nil {
						r.add(fieldPath, "%v", err)
						continue
					}
					if c.usesTaskToken() {
						t.usesToken = true
					}
					node = &tcall{c: c}
				default:
					r.add(fieldPath, "%q is neither a path (starting with $) nor an intrinsic function (States.*)", s)
					continue
				}
				dynamic = true
			} else {
				node = t.compile(x[k], fieldPath, r)
				if _, lit := node.(tliteral); !lit {
					dynamic = true
				}
			}
			if prev, dup := seen[name]; dup {
				r.add(fieldPath, "field %q is also given as %q; the payload would hold only one of them", name, prev)
				continue
			}
			seen[name] = k
			obj.keys = append(obj.keys, name)
			obj.vals = append(obj.vals, node)
		}
		if !dynamic {
			return tliteral{v: literalObject(obj)}
		}
		return obj
	case []any:
		arr := &tarray{}
		dynamic := false
		for i, it := range x {
			node := t.compile(it, fmt.Sprintf("%s[%d]", jsonPath, i), r)
			if _, lit := node.(tliteral); !lit {
				dynamic = true
			}
			arr.items = append(arr.items, node)
		}
		if !dynamic {
			return tliteral{v: x}
		}
		return arr
	default:
		return tliteral{v: v}
	}
}

func literalObject(o *tobject) map[string]any {
	out := make(map[string]any, len(o.keys))
	for i, k := range o.keys {
		out[k] = o.vals[i].(tliteral).v
	}
	return out
}
