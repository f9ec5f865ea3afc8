package asl

import (
	"errors"
	"strings"
	"testing"
)

// minimal wraps states into a definition starting at the first one named.
func def(startAt, states string) string {
	return `{"StartAt": "` + startAt + `", "States": {` + states + `}}`
}

const fnARN = "arn:aws:lambda:us-east-1:123456789012:function:f"

func TestParseAccepts(t *testing.T) {
	tests := []struct {
		name string
		def  string
	}{
		{"pass end", def("A", `"A": {"Type": "Pass", "End": true}`)},
		{"task with everything implemented", def("A", `
			"A": {"Type": "Task", "Resource": "`+fnARN+`", "Comment": "c",
				"InputPath": "$.in", "Parameters": {"a.$": "$.x", "b": 1, "c.$": "States.Format('{}', $.y)", "d": {"e.$": "$$.Execution.Id"}},
				"ResultSelector": {"r.$": "$.Payload"}, "ResultPath": "$.out", "OutputPath": "$",
				"TimeoutSeconds": 10,
				"Retry": [{"ErrorEquals": ["TransientError", "States.Timeout"], "IntervalSeconds": 2, "MaxAttempts": 0, "BackoffRate": 1.5, "MaxDelaySeconds": 5, "JitterStrategy": "FULL", "Comment": "x"},
				          {"ErrorEquals": ["States.ALL"]}],
				"Catch": [{"ErrorEquals": ["States.TaskFailed"], "Next": "B", "ResultPath": "$.error"}, {"ErrorEquals": ["States.ALL"], "Next": "B", "ResultPath": null}],
				"Next": "B"},
			"B": {"Type": "Succeed"}`)},
		{"wait for task token", def("A", `"A": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke.waitForTaskToken",
			"Parameters": {"FunctionName": "`+fnARN+`", "Payload": {"token.$": "$$.Task.Token"}}, "TimeoutSeconds": 60, "HeartbeatSeconds": 10, "End": true}`)},
		{"wait token inside intrinsic", def("A", `"A": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke.waitForTaskToken",
			"Parameters": {"FunctionName": "`+fnARN+`", "Payload": {"t.$": "States.Format('x{}', $$.Task.Token)"}}, "End": true}`)},
		{"lambda invoke", def("A", `"A": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke",
			"Parameters": {"FunctionName": "`+fnARN+`", "Payload.$": "$"}, "OutputPath": "$.Payload", "End": true}`)},
		{"choice with nested rules", def("C", `"C": {"Type": "Choice", "Choices": [
			{"And": [{"Variable": "$.a", "IsPresent": true}, {"Not": {"Variable": "$.a", "StringMatches": "x*"}}], "Next": "D"},
			{"Variable": "$.n", "NumericGreaterThanEqualsPath": "$.m", "Next": "D"},
			{"Variable": "$.t", "TimestampLessThan": "2026-01-01T00:00:00Z", "Next": "D"}], "Default": "D"},
			"D": {"Type": "Succeed"}`)},
		{"waits", def("W1", `"W1": {"Type": "Wait", "Seconds": 0, "Next": "W2"}, "W2": {"Type": "Wait", "SecondsPath": "$.s", "Next": "W3"},
			"W3": {"Type": "Wait", "Timestamp": "2026-01-01T00:00:00Z", "Next": "W4"}, "W4": {"Type": "Wait", "TimestampPath": "$.t", "End": true}`)},
		{"fail with paths", def("F", `"F": {"Type": "Fail", "ErrorPath": "$.e", "CausePath": "States.Format('c {}', $.c)"}`)},
		{"top-level extras", `{"Comment": "x", "Version": "1.0", "TimeoutSeconds": 5, "QueryLanguage": "JSONPath", "StartAt": "A", "States": {"A": {"Type": "Pass", "End": true}}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Parse([]byte(tc.def)); err != nil {
				t.Fatalf("Parse refused a valid definition: %v", err)
			}
		})
	}
}

func TestParseRefusesWithPath(t *testing.T) {
	task := func(extra string) string {
		return def("A", `"A": {"Type": "Task", "Resource": "`+fnARN+`", "End": true`+extra+`}`)
	}
	tests := []struct {
		name string
		def  string
		want string // substring of the error: path and reason
	}{
		{"unknown field", task(`, "ResultSelectorX": {}`), "States.A.ResultSelectorX: unknown field"},
		{"field of another type", def("A", `"A": {"Type": "Pass", "End": true, "Retry": []}`), "States.A.Retry: field not allowed in a Pass state"},
		{"parallel", def("A", `"A": {"Type": "Parallel", "Branches": [], "End": true}`), "States.A.Type: Parallel states are not implemented"},
		{"map", def("A", `"A": {"Type": "Map", "End": true}`), "States.A.Type: Map states are not implemented"},
		{"unknown type", def("A", `"A": {"Type": "Sleep", "End": true}`), `States.A.Type: unknown state type "Sleep"`},
		{"jsonata", `{"QueryLanguage": "JSONata", "StartAt": "A", "States": {"A": {"Type": "Pass", "End": true}}}`, "QueryLanguage: only \"JSONPath\""},
		{"assign", def("A", `"A": {"Type": "Pass", "End": true, "Assign": {}}`), "States.A.Assign: not implemented by the embedded engine (variables)"},
		{"timeout path", task(`, "TimeoutSecondsPath": "$.t"`), "States.A.TimeoutSecondsPath: not implemented"},
		{"unknown top-level", `{"StartAt": "A", "Foo": 1, "States": {"A": {"Type": "Pass", "End": true}}}`, "Foo: unknown field"},
		{"other resource", def("A", `"A": {"Type": "Task", "Resource": "arn:aws:states:::sqs:sendMessage", "End": true}`), `States.A.Resource: resource "arn:aws:states:::sqs:sendMessage" is not implemented`},
		{"unsubstituted resource", def("A", `"A": {"Type": "Task", "Resource": "${F}", "End": true}`), `States.A.Resource: placeholder "${F}" was not substituted`},
		{"unknown intrinsic", task(`, "Parameters": {"a.$": "States.Frobnicate($.x)"}`), `States.A.Parameters.a.$: intrinsic function "States.Frobnicate" is not supported`},
		{"intrinsic arity", task(`, "Parameters": {"a.$": "States.MathAdd(1)"}`), "States.A.Parameters.a.$: intrinsic function States.MathAdd takes 2 arguments, got 1"},
		{"format placeholders", task(`, "Parameters": {"a.$": "States.Format('{} {}', $.x)"}`), "2 {} placeholders but 1 values"},
		{"dot-dollar not a string", task(`, "Parameters": {"a.$": 3}`), "States.A.Parameters.a.$: the value of a field ending in .$ must be a string"},
		{"dot-dollar neither", task(`, "Parameters": {"a.$": "hello"}`), `States.A.Parameters.a.$: "hello" is neither a path`},
		{"duplicate after stripping", task(`, "Parameters": {"a": 1, "a.$": "$.x"}`), `field "a" is also given as`},
		{"wildcard path", task(`, "InputPath": "$.items[*]"`), "States.A.InputPath: path \"$.items[*]\""},
		{"recursive path", task(`, "OutputPath": "$..x"`), "recursive descent"},
		{"filter path", task(`, "InputPath": "$.a[?(@.b)]"`), "States.A.InputPath"},
		{"result path context", task(`, "ResultPath": "$$.Execution"`), "States.A.ResultPath: ResultPath \"$$.Execution\" cannot refer to the context object"},
		{"result path index", task(`, "ResultPath": "$.a[0]"`), "array indexes are not supported"},
		{"states all not alone", task(`, "Retry": [{"ErrorEquals": ["States.ALL", "X"]}]`), "States.A.Retry[0].ErrorEquals[0]: States.ALL must appear alone"},
		{"states all not last", task(`, "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "A"}, {"ErrorEquals": ["X"], "Next": "A"}]`), "States.A.Catch[0].ErrorEquals[0]: States.ALL must be in the last retrier or catcher"},
		{"unknown States error", task(`, "Retry": [{"ErrorEquals": ["States.Timout"]}]`), `States.A.Retry[0].ErrorEquals[0]: unknown error name "States.Timout"`},
		{"runtime can never match", task(`, "Catch": [{"ErrorEquals": ["States.Runtime"], "Next": "A"}]`), "States.Runtime can never be retried or caught"},
		{"retrier field", task(`, "Retry": [{"ErrorEquals": ["X"], "MaxAttemps": 2}]`), "States.A.Retry[0].MaxAttemps: unknown field"},
		{"backoff below one", task(`, "Retry": [{"ErrorEquals": ["X"], "BackoffRate": 0.5}]`), "States.A.Retry[0].BackoffRate: must be a number greater than or equal to 1.0"},
		{"jitter", task(`, "Retry": [{"ErrorEquals": ["X"], "JitterStrategy": "HALF"}]`), "States.A.Retry[0].JitterStrategy"},
		{"negative attempts", task(`, "Retry": [{"ErrorEquals": ["X"], "MaxAttempts": -1}]`), "States.A.Retry[0].MaxAttempts"},
		{"catch without next", task(`, "Catch": [{"ErrorEquals": ["X"]}]`), "States.A.Catch[0].Next: required field is missing"},
		{"heartbeat on lambda", task(`, "HeartbeatSeconds": 5`), "States.A.HeartbeatSeconds: only a .waitForTaskToken task can heartbeat"},
		{"heartbeat not below timeout", def("A", `"A": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke.waitForTaskToken",
			"Parameters": {"FunctionName": "`+fnARN+`", "Payload": {"t.$": "$$.Task.Token"}}, "TimeoutSeconds": 10, "HeartbeatSeconds": 10, "End": true}`), "States.A.HeartbeatSeconds: must be smaller than TimeoutSeconds"},
		{"token never passed", def("A", `"A": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke.waitForTaskToken",
			"Parameters": {"FunctionName": "`+fnARN+`", "Payload": {"a.$": "$.a"}}, "End": true}`), "States.A.Parameters.Payload: a .waitForTaskToken task must pass $$.Task.Token"},
		{"token outside token task", task(`, "Parameters": {"t.$": "$$.Task.Token"}`), "States.A.Parameters: $$.Task.Token exists only in .waitForTaskToken"},
		{"invoke without payload", def("A", `"A": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke", "Parameters": {"FunctionName": "`+fnARN+`"}, "End": true}`), "States.A.Parameters.Payload: required field is missing"},
		{"invoke extra parameter", def("A", `"A": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke", "Parameters": {"FunctionName": "`+fnARN+`", "Payload.$": "$", "Qualifier": "1"}, "End": true}`), "States.A.Parameters.Qualifier: Lambda Invoke parameter not implemented"},
		{"next and end", def("A", `"A": {"Type": "Pass", "Next": "A", "End": true}`), "States.A: a Pass state needs exactly one of Next"},
		{"missing next target", def("A", `"A": {"Type": "Pass", "Next": "B"}`), `States.A.Next: no state named "B"`},
		{"unreachable", def("A", `"A": {"Type": "Pass", "End": true}, "B": {"Type": "Succeed"}`), "States.B: state is not reachable from StartAt"},
		{"missing start", def("Z", `"A": {"Type": "Pass", "End": true}`), `StartAt: no state named "Z"`},
		{"duplicate key", `{"StartAt": "A", "States": {"A": {"Type": "Pass", "End": true, "Type": "Succeed"}}}`, "States.A.Type: duplicate key"},
		{"choice rule without next", def("C", `"C": {"Type": "Choice", "Choices": [{"Variable": "$.a", "IsNull": true}], "Default": "D"}, "D": {"Type": "Succeed"}`), "States.C.Choices[0]: a top-level choice rule needs Next"},
		{"nested rule with next", def("C", `"C": {"Type": "Choice", "Choices": [{"Not": {"Variable": "$.a", "IsNull": true, "Next": "D"}, "Next": "D"}]}, "D": {"Type": "Succeed"}`), "States.C.Choices[0].Not.Next: only top-level choice rules have Next"},
		{"two operators", def("C", `"C": {"Type": "Choice", "Choices": [{"Variable": "$.a", "IsNull": true, "IsString": true, "Next": "D"}]}, "D": {"Type": "Succeed"}`), "exactly one operator"},
		{"operator type", def("C", `"C": {"Type": "Choice", "Choices": [{"Variable": "$.a", "NumericEquals": "1", "Next": "D"}]}, "D": {"Type": "Succeed"}`), "States.C.Choices[0].NumericEquals: NumericEquals needs a number"},
		{"unknown operator", def("C", `"C": {"Type": "Choice", "Choices": [{"Variable": "$.a", "StringContains": "x", "Next": "D"}]}, "D": {"Type": "Succeed"}`), "States.C.Choices[0].StringContains: unknown field"},
		{"wait with two", def("W", `"W": {"Type": "Wait", "Seconds": 1, "SecondsPath": "$.s", "End": true}`), "States.W: a Wait state needs exactly one of"},
		{"parameters not an object", def("A", `"A": {"Type": "Pass", "Parameters": [1], "End": true}`), "States.A.Parameters: must be an object"},
		{"bad timestamp", def("W", `"W": {"Type": "Wait", "Timestamp": "tomorrow", "End": true}`), "States.W.Timestamp: must be an ISO-8601 timestamp"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.def))
			if err == nil {
				t.Fatalf("Parse accepted a definition it must refuse")
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("error is %T, want *ValidationError: %v", err, err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error does not say %q:\n%v", tc.want, err)
			}
		})
	}
}

func TestParseReportsEveryProblem(t *testing.T) {
	_, err := Parse([]byte(def("A", `"A": {"Type": "Pass", "End": true, "Foo": 1, "Bar": 2}`)))
	var ve *ValidationError
	if !errors.As(err, &ve) || len(ve.Problems) != 2 {
		t.Fatalf("want 2 problems, got %v", err)
	}
}

func TestSubstitute(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		values map[string]string
		want   string
		err    string
	}{
		{"all present", `{"a": "${X}", "b": "${Y}${X}"}`, map[string]string{"X": "1", "Y": "2"}, `{"a": "1", "b": "21"}`, ""},
		{"unused value is fine", `{"a": "${X}"}`, map[string]string{"X": "1", "Z": "3"}, `{"a": "1"}`, ""},
		{"missing", `{"a": "${X}", "b": "${Y}", "c": "${Y}"}`, map[string]string{}, "", "${X}, ${Y}"},
		{"dollar paths untouched", `{"a.$": "$.x", "b.$": "$$.Task.Token"}`, nil, `{"a.$": "$.x", "b.$": "$$.Task.Token"}`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Substitute([]byte(tc.in), tc.values)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("want error naming %q, got %v", tc.err, err)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Fatalf("got %s, %v; want %s", got, err, tc.want)
			}
		})
	}
}
