package asl

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func mustDecode(t *testing.T, s string) any {
	t.Helper()
	v, err := DecodeJSON([]byte(s))
	if err != nil {
		t.Fatalf("decode %s: %v", s, err)
	}
	return v
}

func mustEncodeT(t *testing.T, v any) string {
	t.Helper()
	b, err := EncodeJSON(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// oneState parses a definition with one state A and returns it.
func oneState(t *testing.T, state string) *State {
	t.Helper()
	sm, err := Parse([]byte(`{"StartAt": "A", "States": {"A": ` + state + `, "Z": {"Type": "Succeed"}}}`))
	if err != nil {
		// Z is unreachable for states ending the machine; allow that case.
		sm, err = Parse([]byte(`{"StartAt": "A", "States": {"A": ` + state + `}}`))
		if err != nil {
			t.Fatalf("parse: %v", err)
		}
	}
	return sm.States["A"]
}

var testContext = func() any {
	return map[string]any{
		"Execution": map[string]any{"Id": "arn:exec", "Name": "exec-1", "Input": map[string]any{"k": "v"}},
		"State":     map[string]any{"Name": "A", "RetryCount": jsonInt(2)},
		"Task":      map[string]any{"Token": "tok"},
	}
}

// Input/output processing in the order of the Amazon States Language
// specification: InputPath, Parameters, result, ResultSelector, ResultPath
// (into the raw input), OutputPath.
func TestDataFlow(t *testing.T) {
	tests := []struct {
		name   string
		state  string // a Pass state (its Result stands in for a task result) or a Task
		input  string
		result string // task result, for Task states
		want   string
		err    string
	}{
		{"pass passes input", `{"Type": "Pass", "End": true}`, `{"a": 1}`, "", `{"a":1}`, ""},
		{"result replaces by default", `{"Type": "Pass", "Result": {"r": true}, "End": true}`, `{"a": 1}`, "", `{"r":true}`, ""},
		{"result path merges into input", `{"Type": "Pass", "Result": "x", "ResultPath": "$.b.c", "End": true}`, `{"a": 1, "b": {"d": 2}}`, "", `{"a":1,"b":{"c":"x","d":2}}`, ""},
		{"result path creates objects", `{"Type": "Pass", "Result": 5, "ResultPath": "$.new.deep", "End": true}`, `{"a": 1}`, "", `{"a":1,"new":{"deep":5}}`, ""},
		{"result path overwrites field", `{"Type": "Pass", "Result": 5, "ResultPath": "$.a", "End": true}`, `{"a": {"old": 1}}`, "", `{"a":5}`, ""},
		{"null result path discards", `{"Type": "Pass", "Result": 5, "ResultPath": null, "End": true}`, `{"a": 1}`, "", `{"a":1}`, ""},
		{"result path dollar replaces", `{"Type": "Pass", "Result": [1], "ResultPath": "$", "End": true}`, `{"a": 1}`, "", `[1]`, ""},
		{"result path into scalar input", `{"Type": "Pass", "Result": 5, "ResultPath": "$.a", "End": true}`, `"text"`, "", "", "Unable to apply ResultPath '$.a'"},
		{"result path through scalar", `{"Type": "Pass", "Result": 5, "ResultPath": "$.a.b", "End": true}`, `{"a": 3}`, "", "", "the field 'a' is a number, not an object"},
		{"input path selects", `{"Type": "Pass", "InputPath": "$.a", "End": true}`, `{"a": {"b": 1}, "c": 2}`, "", `{"b":1}`, ""},
		{"input path then result path keeps raw input", `{"Type": "Pass", "InputPath": "$.a", "ResultPath": "$.copy", "End": true}`, `{"a": {"b": 1}}`, "", `{"a":{"b":1},"copy":{"b":1}}`, ""},
		{"null input path gives empty object", `{"Type": "Pass", "InputPath": null, "End": true}`, `{"a": 1}`, "", `{}`, ""},
		{"output path", `{"Type": "Pass", "OutputPath": "$.a[1]", "End": true}`, `{"a": [10, 20]}`, "", `20`, ""},
		{"null output path", `{"Type": "Pass", "OutputPath": null, "End": true}`, `{"a": 1}`, "", `{}`, ""},
		{"missing input path", `{"Type": "Pass", "InputPath": "$.nope", "End": true}`, `{"a": 1}`, "", "", "The JSONPath '$.nope' specified for the field 'InputPath' could not be found in the input"},
		{"missing output path", `{"Type": "Pass", "OutputPath": "$.nope", "End": true}`, `{"a": 1}`, "", "", "specified for the field 'OutputPath'"},
		{"parameters with paths and context", `{"Type": "Pass", "Parameters": {"x.$": "$.a", "lit": "$.a", "nested": {"n.$": "$$.Execution.Name"}, "arr": [{"i.$": "$.a"}]}, "End": true}`,
			`{"a": 7}`, "", `{"arr":[{"i":7}],"lit":"$.a","nested":{"n":"exec-1"},"x":7}`, ""},
		{"parameters after input path", `{"Type": "Pass", "InputPath": "$.in", "Parameters": {"x.$": "$.v"}, "End": true}`, `{"in": {"v": 1}}`, "", `{"x":1}`, ""},
		{"parameters missing path", `{"Type": "Pass", "Parameters": {"x.$": "$.nope"}, "End": true}`, `{}`, "", "", "The JSONPath '$.nope' specified for the field 'x.$' could not be found"},
		{"numbers keep their text", `{"Type": "Pass", "Parameters": {"x.$": "$.n"}, "End": true}`, `{"n": 1.50}`, "", `{"x":1.50}`, ""},
		{"no html escaping", `{"Type": "Pass", "End": true}`, `{"s": "<a&b>"}`, "", `{"s":"<a&b>"}`, ""},
		{"task full chain", `{"Type": "Task", "Resource": "` + fnARN + `", "ResultSelector": {"v.$": "$.value", "k": "const"}, "ResultPath": "$.res", "OutputPath": "$.res", "End": true}`,
			`{"orig": 1}`, `{"value": 42, "noise": true}`, `{"k":"const","v":42}`, ""},
		{"task result selector missing", `{"Type": "Task", "Resource": "` + fnARN + `", "ResultSelector": {"v.$": "$.missing"}, "End": true}`,
			`{}`, `{"value": 1}`, "", "specified for the field 'v.$'"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := oneState(t, tc.state)
			in := mustDecode(t, tc.input)
			var out any
			var err error
			if st.Type == TypeTask {
				out, err = st.ApplyResult(in, mustDecode(t, tc.result), testContext)
			} else {
				out, err = st.PassResult(in, testContext)
			}
			if tc.err != "" {
				var re *RuntimeError
				if !errors.As(err, &re) || re.Name != ErrRuntime || !strings.Contains(re.Cause, tc.err) {
					t.Fatalf("want States.Runtime with %q, got %v", tc.err, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := mustEncodeT(t, out); got != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
			if got := mustEncodeT(t, in); got != mustEncodeT(t, mustDecode(t, tc.input)) {
				t.Fatalf("the input was modified: %s", got)
			}
		})
	}
}

func TestCatcherOutput(t *testing.T) {
	st := oneState(t, `{"Type": "Task", "Resource": "`+fnARN+`", "OutputPath": "$.never", "End": true,
		"Catch": [{"ErrorEquals": ["X"], "Next": "Z", "ResultPath": "$.error"}, {"ErrorEquals": ["States.ALL"], "Next": "Z"}]}`)
	in := mustDecode(t, `{"a": 1}`)
	errOut := ErrorOutput("X", "boom")
	out, err := st.Catch[0].Output(in, errOut)
	if err != nil {
		t.Fatal(err)
	}
	if got := mustEncodeT(t, out); got != `{"a":1,"error":{"Cause":"boom","Error":"X"}}` {
		t.Fatalf("catch ResultPath output %s", got)
	}
	out, err = st.Catch[1].Output(in, errOut)
	if err != nil {
		t.Fatal(err)
	}
	if got := mustEncodeT(t, out); got != `{"Cause":"boom","Error":"X"}` {
		t.Fatalf("default catch output %s (OutputPath must not apply)", got)
	}
}

func TestIntrinsics(t *testing.T) {
	input := `{"name": "Ada", "n": 3, "list": [1, 2, 2, "x"], "json": "{\"k\":[1,true]}", "obj": {"a": 1}, "obj2": {"b": 2, "a": 9}, "csv": "a,b;;c", "b64": "aGVsbG8="}`
	tests := []struct {
		expr string
		want string
		err  string
	}{
		{`States.Format('Hello, {}! You are {} ({}, {})', $.name, $.n, true, null)`, `"Hello, Ada! You are 3 (true, null)"`, ""},
		{`States.Format('esc \{} \' \\ {}', $.name)`, `"esc {} ' \\ Ada"`, ""},
		{`States.Format($.name)`, `"Ada"`, ""},
		{`States.Format('{}', $.obj)`, "", "must be a string, number, boolean or null"},
		{`States.StringToJson($.json)`, `{"k":[1,true]}`, ""},
		{`States.StringToJson($.name)`, "", "The function 'States.StringToJson($.name)' had the following error"},
		{`States.JsonToString($.obj)`, `"{\"a\":1}"`, ""},
		{`States.Array($.n, 'two', States.MathAdd($.n, 1))`, `[3,"two",4]`, ""},
		{`States.Array()`, `[]`, ""},
		{`States.ArrayPartition($.list, 3)`, `[[1,2,2],["x"]]`, ""},
		{`States.ArrayContains($.list, 2)`, `true`, ""},
		{`States.ArrayContains($.list, 'y')`, `false`, ""},
		{`States.ArrayRange(1, 9, 3)`, `[1,4,7]`, ""},
		{`States.ArrayRange(5, 1, -2)`, `[5,3,1]`, ""},
		{`States.ArrayGetItem($.list, 3)`, `"x"`, ""},
		{`States.ArrayGetItem($.list, 4)`, "", "out of bounds"},
		{`States.ArrayLength($.list)`, `4`, ""},
		{`States.ArrayLength($.name)`, "", "must be an array"},
		{`States.ArrayUnique($.list)`, `[1,2,"x"]`, ""},
		{`States.Base64Encode('hello')`, `"aGVsbG8="`, ""},
		{`States.Base64Decode($.b64)`, `"hello"`, ""},
		{`States.Hash('abc', 'SHA-256')`, `"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"`, ""},
		{`States.Hash('abc', 'MD5')`, `"900150983cd24fb0d6963f7d28e17f72"`, ""},
		{`States.JsonMerge($.obj, $.obj2, false)`, `{"a":9,"b":2}`, ""},
		{`States.MathAdd($.n, -5)`, `-2`, ""},
		{`States.MathAdd($.name, 1)`, "", "must be an integer"},
		{`States.StringSplit($.csv, ',;')`, `["a","b","c"]`, ""},
		{`States.MathRandom(1, 2)`, `1`, ""},
		{`States.ArrayGetItem($.missing, 0)`, "", "The JSONPath '$.missing' could not be found"},
		{`States.Format('{}', $$.Task.Token)`, `"tok"`, ""},
	}
	data := mustDecode(t, input)
	for _, tc := range tests {
		t.Run(tc.expr, func(t *testing.T) {
			c, err := ParseIntrinsic(tc.expr)
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			v, err := c.Eval(data, testContext)
			if tc.err != "" {
				var re *RuntimeError
				if !errors.As(err, &re) || re.Name != ErrRuntime || !strings.Contains(re.Cause, tc.err) {
					t.Fatalf("want States.Runtime with %q, got %v", tc.err, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := mustEncodeT(t, v); got != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
	t.Run("States.UUID", func(t *testing.T) {
		c, _ := ParseIntrinsic("States.UUID()")
		v, _ := c.Eval(nil, nil)
		s, _ := v.(string)
		if len(s) != 36 || s[14] != '4' {
			t.Fatalf("not a v4 UUID: %q", s)
		}
	})
}

func TestParseIntrinsicRefuses(t *testing.T) {
	tests := []struct{ expr, want string }{
		{`States.Nope()`, "not supported"},
		{`States.Format('x', $.a`, "expected , or )"},
		{`States.Format('unterminated)`, "unterminated string literal"},
		{`States.Format('bad \n escape')`, "invalid escape"},
		{`States.MathAdd('a', 1)`, "argument 1 must be an integer"},
		{`States.Hash($.x, 'SHA-3')`, "hash algorithm"},
		{`States.JsonMerge($.a, $.b, true)`, "must be false"},
		{`States.Array(foo)`, "is not a string, number"},
		{`States.UUID() extra`, "unexpected"},
	}
	for _, tc := range tests {
		t.Run(tc.expr, func(t *testing.T) {
			_, err := ParseIntrinsic(tc.expr)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want error with %q, got %v", tc.want, err)
			}
		})
	}
}

func TestChoiceRules(t *testing.T) {
	input := `{"s": "hello", "n": 10, "f": 2.5, "b": true, "z": null, "t": "2026-05-01T12:00:00Z", "m": 10, "str": "*star"}`
	tests := []struct {
		rule string
		want bool
		err  string
	}{
		{`{"Variable": "$.s", "StringEquals": "hello"}`, true, ""},
		{`{"Variable": "$.s", "StringEquals": "Hello"}`, false, ""},
		{`{"Variable": "$.n", "StringEquals": "10"}`, false, ""},
		{`{"Variable": "$.s", "StringLessThan": "hellp"}`, true, ""},
		{`{"Variable": "$.s", "StringGreaterThanEquals": "hello"}`, true, ""},
		{`{"Variable": "$.s", "StringEqualsPath": "$.s"}`, true, ""},
		{`{"Variable": "$.s", "StringMatches": "h*o"}`, true, ""},
		{`{"Variable": "$.s", "StringMatches": "h*x"}`, false, ""},
		{`{"Variable": "$.str", "StringMatches": "\\**"}`, true, ""},
		{`{"Variable": "$.s", "StringMatches": "\\*hello"}`, false, ""},
		{`{"Variable": "$.n", "NumericEquals": 10.0}`, true, ""},
		{`{"Variable": "$.n", "NumericLessThan": 10}`, false, ""},
		{`{"Variable": "$.n", "NumericLessThanEquals": 10}`, true, ""},
		{`{"Variable": "$.f", "NumericGreaterThan": 2}`, true, ""},
		{`{"Variable": "$.n", "NumericGreaterThanEqualsPath": "$.m"}`, true, ""},
		{`{"Variable": "$.s", "NumericEquals": 1}`, false, ""},
		{`{"Variable": "$.b", "BooleanEquals": true}`, true, ""},
		{`{"Variable": "$.b", "BooleanEqualsPath": "$.b"}`, true, ""},
		{`{"Variable": "$.t", "TimestampGreaterThan": "2026-01-01T00:00:00Z"}`, true, ""},
		{`{"Variable": "$.t", "TimestampEquals": "2026-05-01T14:00:00+02:00"}`, true, ""},
		{`{"Variable": "$.nope", "IsPresent": false}`, true, ""},
		{`{"Variable": "$.z", "IsPresent": true}`, true, ""},
		{`{"Variable": "$.z", "IsNull": true}`, true, ""},
		{`{"Variable": "$.s", "IsString": true}`, true, ""},
		{`{"Variable": "$.f", "IsNumeric": true}`, true, ""},
		{`{"Variable": "$.b", "IsBoolean": false}`, false, ""},
		{`{"Variable": "$.t", "IsTimestamp": true}`, true, ""},
		{`{"And": [{"Variable": "$.b", "BooleanEquals": true}, {"Variable": "$.n", "NumericEquals": 10}]}`, true, ""},
		{`{"And": [{"Variable": "$.b", "BooleanEquals": true}, {"Variable": "$.n", "NumericEquals": 11}]}`, false, ""},
		{`{"Or": [{"Variable": "$.b", "BooleanEquals": false}, {"Variable": "$.n", "NumericEquals": 10}]}`, true, ""},
		{`{"Not": {"Variable": "$.s", "StringEquals": "hello"}}`, false, ""},
		{`{"Variable": "$.nope", "StringEquals": "x"}`, false, "Invalid path '$.nope'"},
		{`{"Variable": "$.nope", "IsNull": true}`, false, "Invalid path '$.nope'"},
		{`{"Variable": "$.s", "StringEqualsPath": "$.nope"}`, false, "Invalid path '$.nope'"},
	}
	data := mustDecode(t, input)
	for _, tc := range tests {
		t.Run(tc.rule, func(t *testing.T) {
			st := oneState(t, `{"Type": "Choice", "Choices": [`+strings.TrimSuffix(tc.rule, "}")+`, "Next": "Z"}]}`)
			got, err := st.Choices[0].Matches(data, testContext)
			if tc.err != "" {
				var re *RuntimeError
				if !errors.As(err, &re) || re.Name != ErrRuntime || !strings.Contains(re.Cause, tc.err) {
					t.Fatalf("want States.Runtime with %q, got %v", tc.err, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func TestChooseDefaultAndNoMatch(t *testing.T) {
	withDefault := `{"StartAt": "C", "States": {"C": {"Type": "Choice", "Choices": [{"Variable": "$.a", "NumericEquals": 1, "Next": "One"}], "Default": "Other"},
		"One": {"Type": "Succeed"}, "Other": {"Type": "Succeed"}}}`
	sm, err := Parse([]byte(withDefault))
	if err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{`{"a": 1}`: "One", `{"a": 2}`: "Other"} {
		next, _, err := sm.States["C"].Choose(mustDecode(t, in), nil)
		if err != nil || next != want {
			t.Fatalf("input %s: got %q, %v; want %q", in, next, err, want)
		}
	}
	noDefault := `{"StartAt": "C", "States": {"C": {"Type": "Choice", "Choices": [{"Variable": "$.a", "NumericEquals": 1, "Next": "One"}]}, "One": {"Type": "Succeed"}}}`
	sm, err = Parse([]byte(noDefault))
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = sm.States["C"].Choose(mustDecode(t, `{"a": 2}`), nil)
	var re *RuntimeError
	if !errors.As(err, &re) || re.Name != ErrNoChoiceMatched {
		t.Fatalf("want States.NoChoiceMatched, got %v", err)
	}
}

func TestMatchesError(t *testing.T) {
	tests := []struct {
		name   string
		equals []string
		err    string
		want   bool
	}{
		{"exact", []string{"TransientError"}, "TransientError", true},
		{"case sensitive", []string{"transientError"}, "TransientError", false},
		{"all matches custom", []string{ErrALL}, "wrapError", true},
		{"all matches timeout", []string{ErrALL}, ErrTimeout, true},
		{"all never matches runtime", []string{ErrALL}, ErrRuntime, false},
		{"all never matches data limit", []string{ErrALL}, ErrDataLimitExceeded, false},
		{"task failed matches custom", []string{ErrTaskFailed}, "TransientError", true},
		{"task failed matches lambda service", []string{ErrTaskFailed}, "Lambda.ServiceException", true},
		{"task failed does not match timeout", []string{ErrTaskFailed}, ErrTimeout, false},
		{"task failed does not match heartbeat", []string{ErrTaskFailed}, ErrHeartbeatTimeout, false},
		{"timeout matches heartbeat timeout", []string{ErrTimeout}, ErrHeartbeatTimeout, true},
		{"heartbeat does not match plain timeout", []string{ErrHeartbeatTimeout}, ErrTimeout, false},
		{"any of several", []string{"A", "B"}, "B", true},
		{"none", []string{"A", "B"}, "C", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := MatchesError(tc.equals, tc.err); got != tc.want {
				t.Fatalf("MatchesError(%v, %q) = %v, want %v", tc.equals, tc.err, got, tc.want)
			}
		})
	}
}

func TestRetryDelay(t *testing.T) {
	r := &Retrier{IntervalSeconds: 1, BackoffRate: 2, MaxDelaySeconds: 5, JitterStrategy: "NONE"}
	var got []time.Duration
	for i := int64(0); i < 5; i++ {
		got = append(got, r.Delay(i, nil))
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("delays %v, want %v", got, want)
		}
	}
	r = &Retrier{IntervalSeconds: 3, BackoffRate: 1.5, JitterStrategy: "FULL"}
	if d := r.Delay(2, func() float64 { return 0.5 }); d != 3375*time.Millisecond {
		t.Fatalf("FULL jitter: got %v, want 3.375s (3*1.5^2*0.5)", d)
	}
}
