package asl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"sort"
	"strings"
)

// reporter collects problems so a refused definition lists all of them.
type reporter struct{ problems []Problem }

func (r *reporter) add(path, format string, args ...any) {
	r.problems = append(r.problems, Problem{Path: path, Message: fmt.Sprintf(format, args...)})
}

// Limits Step Functions applies to definitions.
const (
	maxStateNameLen = 80
	maxSeconds      = 99999999
	maxDelayCap     = 31622400 // MaxDelaySeconds must be less than one year
)

// fieldsOf lists the fields each state type allows (beyond Type, Comment
// and QueryLanguage, which all allow).
var fieldsOf = map[StateType][]string{
	TypePass:    {"Next", "End", "InputPath", "OutputPath", "Parameters", "Result", "ResultPath"},
	TypeTask:    {"Next", "End", "InputPath", "OutputPath", "Parameters", "ResultSelector", "ResultPath", "Resource", "Retry", "Catch", "TimeoutSeconds", "HeartbeatSeconds"},
	TypeChoice:  {"Choices", "Default", "InputPath", "OutputPath"},
	TypeWait:    {"Next", "End", "InputPath", "OutputPath", "Seconds", "SecondsPath", "Timestamp", "TimestampPath"},
	TypeSucceed: {"InputPath", "OutputPath"},
	TypeFail:    {"Error", "Cause", "ErrorPath", "CausePath"},
}

// notImplemented names ASL fields that exist in Step Functions but that the
// embedded engine refuses, so the message says "not implemented" rather
// than "unknown".
var notImplemented = map[string]string{
	"TimeoutSecondsPath":   "use TimeoutSeconds",
	"HeartbeatSecondsPath": "use HeartbeatSeconds",
	"Credentials":          "cross-account task credentials",
	"Assign":               "variables",
	"Arguments":            "JSONata",
	"Output":               "JSONata",
	"Branches":             "Parallel states",
	"Iterator":             "Map states",
	"ItemProcessor":        "Map states",
	"ItemsPath":            "Map states",
	"ItemSelector":         "Map states",
	"ItemReader":           "Map states",
	"MaxConcurrency":       "Map states",
	"ResultWriter":         "Map states",
}

// Parse parses and validates a definition (after placeholder substitution).
// Every problem found is reported in one *ValidationError.
func Parse(definition []byte) (*StateMachine, error) {
	r := &reporter{}
	checkDuplicateKeys(definition, r)
	if len(r.problems) > 0 {
		return nil, &ValidationError{Problems: r.problems}
	}
	raw, err := DecodeJSON(definition)
	if err != nil {
		return nil, &ValidationError{Problems: []Problem{{Message: err.Error()}}}
	}
	top, ok := raw.(map[string]any)
	if !ok {
		return nil, &ValidationError{Problems: []Problem{{Message: "the definition must be a JSON object"}}}
	}
	sm := &StateMachine{States: map[string]*State{}}
	for _, k := range sortedKeys(top) {
		v := top[k]
		switch k {
		case "Comment":
			sm.Comment = str(v, k, r)
		case "StartAt":
			sm.StartAt = str(v, k, r)
		case "Version":
			if s, ok := v.(string); !ok || s != "1.0" {
				r.add(k, "must be \"1.0\"")
			}
		case "QueryLanguage":
			queryLanguage(v, k, r)
		case "TimeoutSeconds":
			sm.TimeoutSeconds = positiveInt(v, k, r)
		case "States":
			states, ok := v.(map[string]any)
			if !ok || len(states) == 0 {
				r.add(k, "must be a non-empty object of states")
				continue
			}
			for _, name := range sortedKeys(states) {
				if st := parseState(name, states[name], "States."+name, r); st != nil {
					sm.States[name] = st
				}
			}
		default:
			if hint, ok := notImplemented[k]; ok {
				r.add(k, "not implemented by the embedded engine (%s)", hint)
			} else {
				r.add(k, "unknown field")
			}
		}
	}
	if _, ok := top["StartAt"]; !ok {
		r.add("StartAt", "required field is missing")
	}
	if _, ok := top["States"]; !ok {
		r.add("States", "required field is missing")
	}
	checkTransitions(sm, r)
	if len(r.problems) > 0 {
		return nil, &ValidationError{Problems: r.problems}
	}
	return sm, nil
}

func parseState(name string, raw any, jp string, r *reporter) *State {
	if name == "" || len(name) > maxStateNameLen {
		r.add(jp, "state names are 1 to %d characters long", maxStateNameLen)
	}
	obj, ok := raw.(map[string]any)
	if !ok {
		r.add(jp, "a state must be an object")
		return nil
	}
	typ, _ := obj["Type"].(string)
	st := &State{Name: name, Type: StateType(typ)}
	allowed, known := fieldsOf[st.Type]
	switch {
	case typ == "":
		r.add(jp+".Type", "required field is missing or not a string")
		return nil
	case typ == "Parallel" || typ == "Map":
		r.add(jp+".Type", "%s states are not implemented by the embedded engine", typ)
		return nil
	case !known:
		r.add(jp+".Type", "unknown state type %q", typ)
		return nil
	}
	allow := map[string]bool{"Type": true, "Comment": true, "QueryLanguage": true}
	for _, f := range allowed {
		allow[f] = true
	}
	for _, k := range sortedKeys(obj) {
		fp := jp + "." + k
		if !allow[k] {
			if hint, ok := notImplemented[k]; ok {
				r.add(fp, "not implemented by the embedded engine (%s)", hint)
			} else if _, elsewhere := fieldOfAnyType(k); elsewhere {
				r.add(fp, "field not allowed in a %s state", typ)
			} else {
				r.add(fp, "unknown field")
			}
			continue
		}
		v := obj[k]
		switch k {
		case "Type":
		case "Comment":
			st.Comment = str(v, fp, r)
		case "QueryLanguage":
			queryLanguage(v, fp, r)
		case "Next":
			st.Next = str(v, fp, r)
		case "End":
			if b, ok := v.(bool); !ok || !b {
				r.add(fp, "must be true when present")
			}
			st.End = true
		case "InputPath":
			st.InputPath, st.NullInput = optionalPath(v, fp, r)
		case "OutputPath":
			st.OutputPath, st.NullOutput = optionalPath(v, fp, r)
		case "ResultPath":
			st.ResultPath, st.NullResult = resultPath(v, fp, r)
		case "Parameters":
			if res, _ := obj["Resource"].(string); res == ResourceARNLambdaInvoke || res == ResourceARNLambdaInvokeWait {
				continue // the Invoke envelope; checkTask reads it
			}
			if _, ok := v.(map[string]any); !ok {
				r.add(fp, "must be an object")
				continue
			}
			st.Parameters = parseTemplate(v, fp, r)
		case "ResultSelector":
			if _, ok := v.(map[string]any); !ok {
				r.add(fp, "must be an object")
				continue
			}
			st.ResultSelector = parseTemplate(v, fp, r)
		case "Result":
			st.Result, st.HasResult = v, true
		case "Resource":
			st.Resource = str(v, fp, r)
		case "TimeoutSeconds":
			st.TimeoutSeconds = positiveInt(v, fp, r)
		case "HeartbeatSeconds":
			st.HeartbeatSeconds = positiveInt(v, fp, r)
		case "Retry":
			st.Retry = parseRetry(v, fp, r)
		case "Catch":
			st.Catch = parseCatch(v, fp, r)
		case "Choices":
			arr, ok := v.([]any)
			if !ok || len(arr) == 0 {
				r.add(fp, "must be a non-empty array of choice rules")
				continue
			}
			for i, it := range arr {
				if rule := parseChoiceRule(it, fmt.Sprintf("%s[%d]", fp, i), true, r); rule != nil {
					st.Choices = append(st.Choices, rule)
				}
			}
		case "Default":
			st.Default = str(v, fp, r)
		case "Seconds":
			n, ok := integer(v)
			if !ok || n < 0 || n > maxSeconds {
				r.add(fp, "must be an integer from 0 to %d", maxSeconds)
			}
			st.Seconds, st.HasSeconds = n, true
		case "SecondsPath":
			st.SecondsPath = requiredPath(v, fp, r)
		case "Timestamp":
			s, _ := v.(string)
			t, ok := parseTimestamp(s)
			if !ok {
				r.add(fp, "must be an ISO-8601 timestamp string such as \"2026-01-02T15:04:05Z\"")
			}
			st.Timestamp, st.HasTimestamp = t, true
		case "TimestampPath":
			st.TimestampPath = requiredPath(v, fp, r)
		case "Error":
			st.Error = str(v, fp, r)
		case "Cause":
			st.Cause = str(v, fp, r)
		case "ErrorPath":
			st.ErrorPath = expr(v, fp, r)
		case "CausePath":
			st.CausePath = expr(v, fp, r)
		}
	}
	checkState(st, obj, jp, r)
	return st
}

// checkState applies the rules that involve several fields of one state.
func checkState(st *State, obj map[string]any, jp string, r *reporter) {
	_, hasNext := obj["Next"]
	_, hasEnd := obj["End"]
	switch st.Type {
	case TypeTask, TypePass, TypeWait:
		if hasNext == hasEnd {
			r.add(jp, "a %s state needs exactly one of Next or \"End\": true", st.Type)
		}
	}
	switch st.Type {
	case TypeTask:
		checkTask(st, obj, jp, r)
	case TypeWait:
		n := 0
		for _, f := range []string{"Seconds", "SecondsPath", "Timestamp", "TimestampPath"} {
			if _, ok := obj[f]; ok {
				n++
			}
		}
		if n != 1 {
			r.add(jp, "a Wait state needs exactly one of Seconds, SecondsPath, Timestamp or TimestampPath")
		}
	case TypeFail:
		if _, ok := obj["Error"]; ok && st.ErrorPath != nil {
			r.add(jp+".ErrorPath", "give Error or ErrorPath, not both")
		}
		if _, ok := obj["Cause"]; ok && st.CausePath != nil {
			r.add(jp+".CausePath", "give Cause or CausePath, not both")
		}
	case TypePass:
		if st.Parameters != nil && st.Parameters.UsesTaskToken() {
			r.add(jp+".Parameters", "$$.Task.Token exists only in .waitForTaskToken Task states")
		}
	}
}

var lambdaARN = regexp.MustCompile(`^arn:aws[a-zA-Z-]*:lambda:[a-z0-9-]+:\d{12}:function:[a-zA-Z0-9-_]+(:(\$LATEST|[a-zA-Z0-9-_]+))?$`)

func checkTask(st *State, obj map[string]any, jp string, r *reporter) {
	if _, ok := obj["Resource"]; !ok {
		r.add(jp+".Resource", "required field is missing")
		return
	}
	rp := jp + ".Resource"
	switch {
	case st.Resource == ResourceARNLambdaInvoke:
		st.ResourceKind = ResourceLambdaInvoke
	case st.Resource == ResourceARNLambdaInvokeWait:
		st.ResourceKind = ResourceLambdaInvokeWait
	case lambdaARN.MatchString(st.Resource):
		st.ResourceKind = ResourceLambdaARN
		st.FunctionARN = st.Resource
	case strings.Contains(st.Resource, "${"):
		r.add(rp, "placeholder %q was not substituted", st.Resource)
		return
	default:
		r.add(rp, "resource %q is not implemented by the embedded engine (only Lambda function ARNs, %s and %s)", st.Resource, ResourceARNLambdaInvoke, ResourceARNLambdaInvokeWait)
		return
	}
	if st.HeartbeatSeconds > 0 && st.ResourceKind != ResourceLambdaInvokeWait {
		r.add(jp+".HeartbeatSeconds", "only a .waitForTaskToken task can heartbeat (SendTaskHeartbeat); a Lambda invocation cannot")
	}
	if st.HeartbeatSeconds > 0 && st.TimeoutSeconds > 0 && st.HeartbeatSeconds >= st.TimeoutSeconds {
		r.add(jp+".HeartbeatSeconds", "must be smaller than TimeoutSeconds (%d)", st.TimeoutSeconds)
	}
	if st.ResourceKind == ResourceLambdaARN {
		if st.Parameters != nil && st.Parameters.UsesTaskToken() {
			r.add(jp+".Parameters", "$$.Task.Token exists only in .waitForTaskToken Task states")
		}
		return
	}
	// The lambda:invoke forms: Parameters is the envelope of the Invoke API.
	pp := jp + ".Parameters"
	params, ok := obj["Parameters"].(map[string]any)
	if !ok {
		r.add(pp, "%s needs Parameters with FunctionName and Payload", st.Resource)
		return
	}
	for _, k := range sortedKeys(params) {
		switch k {
		case "FunctionName":
			s, ok := params[k].(string)
			switch {
			case !ok:
				r.add(pp+"."+k, "must be a string")
			case strings.Contains(s, "${"):
				r.add(pp+"."+k, "placeholder %q was not substituted", s)
			case !lambdaARN.MatchString(s):
				r.add(pp+"."+k, "must be a Lambda function ARN (the embedded engine resolves functions by ARN), got %q", s)
			default:
				st.FunctionARN = s
			}
		case "Payload", "Payload.$":
			st.Payload = parseTemplate(map[string]any{k: params[k]}, pp, r)
		case "FunctionName.$":
			r.add(pp+"."+k, "a computed FunctionName is not implemented by the embedded engine; name the function ARN")
		default:
			r.add(pp+"."+k, "Lambda Invoke parameter not implemented by the embedded engine (only FunctionName and Payload)")
		}
	}
	if _, ok := params["FunctionName"]; !ok {
		r.add(pp+".FunctionName", "required field is missing")
	}
	_, p1 := params["Payload"]
	_, p2 := params["Payload.$"]
	switch {
	case p1 && p2:
		r.add(pp+".Payload", "give Payload or Payload.$, not both")
	case !p1 && !p2:
		r.add(pp+".Payload", "required field is missing (say \"Payload.$\": \"$\" to send the state input)")
	}
	uses := st.Payload != nil && st.Payload.UsesTaskToken()
	if st.ResourceKind == ResourceLambdaInvokeWait && !uses && st.Payload != nil {
		r.add(pp+".Payload", "a .waitForTaskToken task must pass $$.Task.Token to the function, or nobody can ever complete it")
	}
	if st.ResourceKind == ResourceLambdaInvoke && uses {
		r.add(pp+".Payload", "$$.Task.Token exists only in .waitForTaskToken Task states")
	}
}

// Payload templates of lambda:invoke are stored wrapped as {"Payload": ...};
// PayloadValue unwraps the evaluated envelope.
func PayloadValue(envelope any) any {
	if m, ok := envelope.(map[string]any); ok {
		return m["Payload"]
	}
	return nil
}

// eachRule calls fn for every object of a Retry or Catch array (what names
// its elements in errors), reporting what is not an object and each
// required field that is missing; last is true for the final element.
func eachRule(v any, jp, what string, required []string, r *reporter, fn func(ip string, obj map[string]any, last bool)) {
	arr, ok := v.([]any)
	if !ok {
		r.add(jp, "must be an array of %ss", what)
		return
	}
	for i, it := range arr {
		ip := fmt.Sprintf("%s[%d]", jp, i)
		obj, ok := it.(map[string]any)
		if !ok {
			r.add(ip, "a %s must be an object", what)
			continue
		}
		fn(ip, obj, i == len(arr)-1)
		for _, f := range required {
			if _, ok := obj[f]; !ok {
				r.add(ip+"."+f, "required field is missing")
			}
		}
	}
}

func parseRetry(v any, jp string, r *reporter) []*Retrier {
	var out []*Retrier
	eachRule(v, jp, "retrier", []string{"ErrorEquals"}, r, func(ip string, obj map[string]any, last bool) {
		rt := &Retrier{IntervalSeconds: 1, MaxAttempts: 3, BackoffRate: 2.0, JitterStrategy: "NONE"}
		for _, k := range sortedKeys(obj) {
			fp := ip + "." + k
			x := obj[k]
			switch k {
			case "Comment":
				str(x, fp, r)
			case "ErrorEquals":
				rt.ErrorEquals = errorEquals(x, fp, last, r)
			case "IntervalSeconds":
				rt.IntervalSeconds = positiveInt(x, fp, r)
			case "MaxAttempts":
				n, ok := integer(x)
				if !ok || n < 0 || n > maxSeconds {
					r.add(fp, "must be an integer from 0 to %d", maxSeconds)
				}
				rt.MaxAttempts = n
			case "BackoffRate":
				f, ok := number(x)
				if !ok || f < 1.0 || math.IsInf(f, 0) {
					r.add(fp, "must be a number greater than or equal to 1.0")
				}
				rt.BackoffRate = f
			case "MaxDelaySeconds":
				n, ok := integer(x)
				if !ok || n <= 0 || n >= maxDelayCap {
					r.add(fp, "must be a positive integer smaller than %d", maxDelayCap)
				}
				rt.MaxDelaySeconds = n
			case "JitterStrategy":
				s, _ := x.(string)
				if s != "FULL" && s != "NONE" {
					r.add(fp, "must be \"FULL\" or \"NONE\"")
				}
				rt.JitterStrategy = s
			default:
				r.add(fp, "unknown field")
			}
		}
		out = append(out, rt)
	})
	return out
}

func parseCatch(v any, jp string, r *reporter) []*Catcher {
	var out []*Catcher
	eachRule(v, jp, "catcher", []string{"ErrorEquals", "Next"}, r, func(ip string, obj map[string]any, last bool) {
		c := &Catcher{}
		for _, k := range sortedKeys(obj) {
			fp := ip + "." + k
			x := obj[k]
			switch k {
			case "Comment":
				str(x, fp, r)
			case "ErrorEquals":
				c.ErrorEquals = errorEquals(x, fp, last, r)
			case "Next":
				c.Next = str(x, fp, r)
			case "ResultPath":
				c.ResultPath, c.NullResult = resultPath(x, fp, r)
			default:
				if hint, ok := notImplemented[k]; ok {
					r.add(fp, "not implemented by the embedded engine (%s)", hint)
				} else {
					r.add(fp, "unknown field")
				}
			}
		}
		out = append(out, c)
	})
	return out
}

// errorEquals validates an ErrorEquals list: non-empty strings; States.ALL
// alone and only in the last retrier or catcher; no "States." name that does
// not exist; no terminal error that could never match.
func errorEquals(v any, jp string, last bool, r *reporter) []string {
	arr, ok := v.([]any)
	if !ok || len(arr) == 0 {
		r.add(jp, "must be a non-empty array of error names")
		return nil
	}
	var out []string
	for i, it := range arr {
		s, ok := it.(string)
		ip := fmt.Sprintf("%s[%d]", jp, i)
		switch {
		case !ok || s == "":
			r.add(ip, "must be a non-empty string")
			continue
		case s == ErrALL && len(arr) > 1:
			r.add(ip, "States.ALL must appear alone in ErrorEquals")
		case s == ErrALL && !last:
			r.add(ip, "States.ALL must be in the last retrier or catcher")
		case Terminal(s):
			r.add(ip, "%s can never be retried or caught: it always fails the execution", s)
		case strings.HasPrefix(s, "States.") && !knownStatesErrors[s]:
			r.add(ip, "unknown error name %q (names starting with States. are reserved)", s)
		}
		out = append(out, s)
	}
	return out
}

// checkTransitions: StartAt and every Next/Default name an existing state,
// and every state is reachable from StartAt (Step Functions refuses
// unreachable states).
func checkTransitions(sm *StateMachine, r *reporter) {
	exists := func(name, jp string) bool {
		if name == "" {
			return false
		}
		if _, ok := sm.States[name]; !ok {
			r.add(jp, "no state named %q", name)
			return false
		}
		return true
	}
	if sm.StartAt == "" {
		return
	}
	if !exists(sm.StartAt, "StartAt") {
		return
	}
	edges := map[string][]string{}
	for _, name := range sortedKeys(sm.States) {
		st := sm.States[name]
		jp := "States." + name
		add := func(to, field string) {
			if exists(to, jp+"."+field) {
				edges[name] = append(edges[name], to)
			}
		}
		if st.Next != "" {
			add(st.Next, "Next")
		}
		if st.Default != "" {
			add(st.Default, "Default")
		}
		for i, c := range st.Choices {
			if c.Next != "" {
				add(c.Next, fmt.Sprintf("Choices[%d].Next", i))
			}
		}
		for i, c := range st.Catch {
			if c.Next != "" {
				add(c.Next, fmt.Sprintf("Catch[%d].Next", i))
			}
		}
	}
	seen := map[string]bool{sm.StartAt: true}
	queue := []string{sm.StartAt}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		for _, to := range edges[n] {
			if !seen[to] {
				seen[to] = true
				queue = append(queue, to)
			}
		}
	}
	for _, name := range sortedKeys(sm.States) {
		if !seen[name] {
			r.add("States."+name, "state is not reachable from StartAt")
		}
	}
}

func fieldOfAnyType(k string) (StateType, bool) {
	for t, fs := range fieldsOf {
		for _, f := range fs {
			if f == k {
				return t, true
			}
		}
	}
	return "", false
}

func str(v any, jp string, r *reporter) string {
	s, ok := v.(string)
	if !ok {
		r.add(jp, "must be a string")
	}
	return s
}

func queryLanguage(v any, jp string, r *reporter) {
	if s, _ := v.(string); s != "JSONPath" {
		r.add(jp, "only \"JSONPath\" is implemented by the embedded engine (JSONata is not)")
	}
}

func positiveInt(v any, jp string, r *reporter) int64 {
	n, ok := integer(v)
	if !ok || n <= 0 || n > maxSeconds {
		r.add(jp, "must be a positive integer of at most %d", maxSeconds)
		return 0
	}
	return n
}

func optionalPath(v any, jp string, r *reporter) (*Path, bool) {
	if v == nil {
		return nil, true
	}
	return requiredPath(v, jp, r), false
}

func requiredPath(v any, jp string, r *reporter) *Path {
	s, ok := v.(string)
	if !ok {
		r.add(jp, "must be a string holding a path")
		return nil
	}
	p, err := ParsePath(s)
	if err != nil {
		r.add(jp, "%v", err)
		return nil
	}
	return p
}

func resultPath(v any, jp string, r *reporter) (*Path, bool) {
	p, null := optionalPath(v, jp, r)
	if p != nil {
		if err := validateResultPath(p); err != nil {
			r.add(jp, "%v", err)
			return nil, false
		}
	}
	return p, null
}

func expr(v any, jp string, r *reporter) *Expr {
	s, ok := v.(string)
	switch {
	case !ok:
		r.add(jp, "must be a string holding a path or an intrinsic function")
	case strings.HasPrefix(s, "$"):
		if p := requiredPath(s, jp, r); p != nil {
			return &Expr{path: p}
		}
	case IsIntrinsic(s):
		c, err := ParseIntrinsic(s)
		if err != nil {
			r.add(jp, "%v", err)
			return nil
		}
		return &Expr{call: c}
	default:
		r.add(jp, "%q is neither a path nor an intrinsic function", s)
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// checkDuplicateKeys refuses a JSON object that names the same key twice:
// encoding/json would silently keep the last one, so the file would mean
// something else to a reader who sees the first.
func checkDuplicateKeys(b []byte, r *reporter) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	type frame struct {
		object bool
		keys   map[string]bool
		path   string
		index  int
		// expectKey: in an object, the next string token is a key.
		expectKey bool
		lastKey   string
	}
	var stack []*frame
	childPath := func() string {
		if len(stack) == 0 {
			return ""
		}
		f := stack[len(stack)-1]
		if f.object {
			if f.path == "" {
				return f.lastKey
			}
			return f.path + "." + f.lastKey
		}
		return fmt.Sprintf("%s[%d]", f.path, f.index)
	}
	afterValue := func() {
		if len(stack) == 0 {
			return
		}
		f := stack[len(stack)-1]
		if f.object {
			f.expectKey = true
		} else {
			f.index++
		}
	}
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			return // reported by the real decode
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				p := childPath()
				stack = append(stack, &frame{object: t == '{', keys: map[string]bool{}, path: p, expectKey: true})
			case '}', ']':
				stack = stack[:len(stack)-1]
				afterValue()
			}
		default:
			if len(stack) > 0 {
				f := stack[len(stack)-1]
				if f.object && f.expectKey {
					k := tok.(string)
					if f.keys[k] {
						p := k
						if f.path != "" {
							p = f.path + "." + k
						}
						r.add(p, "duplicate key")
					}
					f.keys[k] = true
					f.lastKey = k
					f.expectKey = false
					continue
				}
			}
			afterValue()
		}
	}
}
