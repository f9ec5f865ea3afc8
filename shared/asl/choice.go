package asl

import (
	"fmt"
	"sort"
	"strings"
)

// ChoiceRule is one rule of a Choice state: a comparison of Variable, or a
// combination (And, Or, Not) of nested rules. Only top-level rules have Next.
type ChoiceRule struct {
	Next string

	And []*ChoiceRule
	Or  []*ChoiceRule
	Not *ChoiceRule

	Variable  *Path
	Operator  string // e.g. "StringEquals", "NumericLessThanPath", "IsPresent"
	Value     any    // literal operand (unused for ...Path operators)
	ValuePath *Path  // operand path of ...Path operators
}

type operandKind int

const (
	opString operandKind = iota
	opNumeric
	opBoolean
	opTimestamp
	opTypeTest
	opMatches
)

// choiceOperators lists the comparison operators, each with its operand type.
// The ...Path variants are derived.
var choiceOperators = map[string]operandKind{
	"StringEquals": opString, "StringLessThan": opString, "StringGreaterThan": opString,
	"StringLessThanEquals": opString, "StringGreaterThanEquals": opString,
	"StringMatches": opMatches,
	"NumericEquals": opNumeric, "NumericLessThan": opNumeric, "NumericGreaterThan": opNumeric,
	"NumericLessThanEquals": opNumeric, "NumericGreaterThanEquals": opNumeric,
	"BooleanEquals":   opBoolean,
	"TimestampEquals": opTimestamp, "TimestampLessThan": opTimestamp, "TimestampGreaterThan": opTimestamp,
	"TimestampLessThanEquals": opTimestamp, "TimestampGreaterThanEquals": opTimestamp,
	"IsNull": opTypeTest, "IsPresent": opTypeTest, "IsNumeric": opTypeTest, "IsString": opTypeTest,
	"IsBoolean": opTypeTest, "IsTimestamp": opTypeTest,
}

// operator resolves a field name to (base operator, isPath).
func operator(field string) (string, operandKind, bool, bool) {
	if k, ok := choiceOperators[field]; ok {
		return field, k, false, true
	}
	if base, found := strings.CutSuffix(field, "Path"); found {
		if k, ok := choiceOperators[base]; ok && k != opTypeTest && k != opMatches {
			return base, k, true, true
		}
	}
	return "", 0, false, false
}

func parseChoiceRule(raw any, jsonPath string, top bool, r *reporter) *ChoiceRule {
	obj, ok := raw.(map[string]any)
	if !ok {
		r.add(jsonPath, "a choice rule must be an object, got %s", typeName(raw))
		return nil
	}
	rule := &ChoiceRule{}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var ops []string
	for _, k := range keys {
		fp := jsonPath + "." + k
		v := obj[k]
		switch k {
		case "Comment":
			if _, ok := v.(string); !ok {
				r.add(fp, "must be a string")
			}
		case "Next":
			if !top {
				r.add(fp, "only top-level choice rules have Next; nested rules inside And/Or/Not must not")
				continue
			}
			s, ok := v.(string)
			if !ok || s == "" {
				r.add(fp, "must be a non-empty string")
				continue
			}
			rule.Next = s
		case "Variable":
			s, ok := v.(string)
			if !ok {
				r.add(fp, "must be a string holding a path")
				continue
			}
			p, err := ParsePath(s)
			if err != nil {
				r.add(fp, "%v", err)
				continue
			}
			rule.Variable = p
		case "And", "Or":
			ops = append(ops, k)
			arr, ok := v.([]any)
			if !ok || len(arr) == 0 {
				r.add(fp, "must be a non-empty array of choice rules")
				continue
			}
			var subs []*ChoiceRule
			for i, it := range arr {
				if sub := parseChoiceRule(it, fmt.Sprintf("%s[%d]", fp, i), false, r); sub != nil {
					subs = append(subs, sub)
				}
			}
			if k == "And" {
				rule.And = subs
			} else {
				rule.Or = subs
			}
		case "Not":
			ops = append(ops, k)
			rule.Not = parseChoiceRule(v, fp, false, r)
		default:
			base, kind, isPath, ok := operator(k)
			if !ok {
				if k == "Condition" || k == "Assign" || k == "Output" {
					r.add(fp, "not implemented by the embedded engine (JSONata and variables are not supported)")
				} else {
					r.add(fp, "unknown field")
				}
				continue
			}
			ops = append(ops, k)
			rule.Operator = k
			if isPath {
				s, ok := v.(string)
				if !ok {
					r.add(fp, "must be a string holding a path")
					continue
				}
				p, err := ParsePath(s)
				if err != nil {
					r.add(fp, "%v", err)
					continue
				}
				rule.ValuePath = p
				continue
			}
			rule.Value = v
			switch kind {
			case opString, opMatches:
				if _, ok := v.(string); !ok {
					r.add(fp, "%s needs a string, got %s", base, typeName(v))
				}
			case opNumeric:
				if !isNumber(v) {
					r.add(fp, "%s needs a number, got %s", base, typeName(v))
				}
			case opBoolean, opTypeTest:
				if _, ok := v.(bool); !ok {
					r.add(fp, "%s needs a boolean, got %s", base, typeName(v))
				}
			case opTimestamp:
				s, ok := v.(string)
				if _, valid := parseTimestamp(s); !ok || !valid {
					r.add(fp, "%s needs an ISO-8601 timestamp string such as \"2026-01-02T15:04:05Z\", got %s", base, mustEncode(v))
				}
			}
		}
	}
	if top && rule.Next == "" {
		r.add(jsonPath, "a top-level choice rule needs Next")
	}
	switch len(ops) {
	case 0:
		r.add(jsonPath, "a choice rule needs one comparison operator or And/Or/Not")
	case 1:
		isCombinator := ops[0] == "And" || ops[0] == "Or" || ops[0] == "Not"
		if isCombinator && rule.Variable != nil {
			r.add(jsonPath+".Variable", "a rule with %s must not have Variable", ops[0])
		}
		if !isCombinator && rule.Variable == nil {
			r.add(jsonPath, "a comparison needs Variable")
		}
	default:
		r.add(jsonPath, "a choice rule has exactly one operator, found %s", strings.Join(ops, ", "))
	}
	return rule
}

// Matches evaluates the rule against the Choice state's effective input.
// A Variable that selects nothing is a States.Runtime error for every
// operator except IsPresent (whose whole point is testing presence).
func (c *ChoiceRule) Matches(data any, ctx ContextFunc) (bool, error) {
	switch {
	case c.And != nil:
		for _, s := range c.And {
			ok, err := s.Matches(data, ctx)
			if err != nil || !ok {
				return false, err
			}
		}
		return true, nil
	case c.Or != nil:
		for _, s := range c.Or {
			ok, err := s.Matches(data, ctx)
			if err != nil || ok {
				return ok, err
			}
		}
		return false, nil
	case c.Not != nil:
		ok, err := c.Not.Matches(data, ctx)
		return !ok && err == nil, err
	}
	if c.Operator == "IsPresent" {
		return c.Variable.Exists(data, ctx) == c.Value.(bool), nil
	}
	v, ok := c.Variable.lookup(data, ctx)
	if !ok {
		return false, runtimeErrorf("Invalid path '%s': The choice state's condition path references an invalid value.", c.Variable.text)
	}
	base, kind, isPath, _ := operator(c.Operator)
	want := c.Value
	if isPath {
		w, ok := c.ValuePath.lookup(data, ctx)
		if !ok {
			return false, runtimeErrorf("Invalid path '%s': The choice state's condition path references an invalid value.", c.ValuePath.text)
		}
		want = w
	}
	switch kind {
	case opTypeTest:
		var is bool
		switch base {
		case "IsNull":
			is = v == nil
		case "IsNumeric":
			is = isNumber(v)
		case "IsString":
			_, is = v.(string)
		case "IsBoolean":
			_, is = v.(bool)
		case "IsTimestamp":
			s, isStr := v.(string)
			_, valid := parseTimestamp(s)
			is = isStr && valid
		}
		return is == want.(bool), nil
	case opMatches:
		s, ok := v.(string)
		return ok && wildcardMatch(want.(string), s), nil
	case opString:
		a, ok1 := v.(string)
		b, ok2 := want.(string)
		if !ok1 || !ok2 {
			return false, nil
		}
		return compare(base, strings.Compare(a, b)), nil
	case opNumeric:
		a, ok1 := number(v)
		b, ok2 := number(want)
		if !ok1 || !ok2 {
			return false, nil
		}
		cmp := 0
		if a < b {
			cmp = -1
		} else if a > b {
			cmp = 1
		}
		return compare(base, cmp), nil
	case opBoolean:
		a, ok1 := v.(bool)
		b, ok2 := want.(bool)
		return ok1 && ok2 && a == b, nil
	case opTimestamp:
		as, _ := v.(string)
		bs, _ := want.(string)
		a, ok1 := parseTimestamp(as)
		b, ok2 := parseTimestamp(bs)
		if !ok1 || !ok2 {
			return false, nil
		}
		return compare(base, a.Compare(b)), nil
	}
	return false, nil
}

func compare(op string, cmp int) bool {
	switch {
	case strings.HasSuffix(op, "GreaterThanEquals"):
		return cmp >= 0
	case strings.HasSuffix(op, "LessThanEquals"):
		return cmp <= 0
	case strings.HasSuffix(op, "GreaterThan"):
		return cmp > 0
	case strings.HasSuffix(op, "LessThan"):
		return cmp < 0
	}
	return cmp == 0 // ...Equals
}

// wildcardMatch implements StringMatches: '*' matches any run of characters,
// "\*" a literal star and "\\" a literal backslash.
func wildcardMatch(pattern, s string) bool {
	// Split the pattern into literal segments separated by unescaped stars.
	var segs []string
	var cur strings.Builder
	for i := 0; i < len(pattern); i++ {
		c := pattern[i]
		if c == '\\' && i+1 < len(pattern) && (pattern[i+1] == '*' || pattern[i+1] == '\\') {
			cur.WriteByte(pattern[i+1])
			i++
			continue
		}
		if c == '*' {
			segs = append(segs, cur.String())
			cur.Reset()
			continue
		}
		cur.WriteByte(c)
	}
	segs = append(segs, cur.String())
	if len(segs) == 1 {
		return s == segs[0]
	}
	if !strings.HasPrefix(s, segs[0]) {
		return false
	}
	s = s[len(segs[0]):]
	last := segs[len(segs)-1]
	for _, seg := range segs[1 : len(segs)-1] {
		i := strings.Index(s, seg)
		if i < 0 {
			return false
		}
		s = s[i+len(seg):]
	}
	return strings.HasSuffix(s, last)
}
