package sfnlocal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sfn/types"
)

func TestTaskChainSucceeds(t *testing.T) {
	def := `{"StartAt": "Prepare", "States": {
		"Prepare": {"Type": "Pass", "Parameters": {"id.$": "$.id", "exec.$": "$$.Execution.Name"}, "Next": "Add"},
		"Add": {"Type": "Task", "Resource": "` + arn("add") + `", "ResultPath": "$.sum", "Next": "Check"},
		"Check": {"Type": "Choice", "Choices": [{"Variable": "$.sum.total", "NumericGreaterThan": 10, "Next": "Big"}], "Default": "Small"},
		"Big": {"Type": "Pass", "Result": "big", "ResultPath": "$.size", "Next": "Done"},
		"Small": {"Type": "Pass", "Result": "small", "ResultPath": "$.size", "Next": "Done"},
		"Done": {"Type": "Succeed", "OutputPath": "$"}}}`
	type in struct {
		ID   int    `json:"id"`
		Exec string `json:"exec"`
	}
	type out struct {
		Total int    `json:"total"`
		Exec  string `json:"exec"`
	}
	h := newHarness(t, def, map[string]LambdaFunc{
		"add": fn(func(_ context.Context, i in) (out, error) { return out{Total: i.ID * 2, Exec: i.Exec}, nil }),
	})
	h.start("run-1", `{"id": 7}`)
	d := h.waitStatus("run-1", types.ExecutionStatusSucceeded)
	if got, want := aws.ToString(d.Output), `{"exec":"run-1","id":7,"size":"big","sum":{"exec":"run-1","total":14}}`; got != want {
		t.Fatalf("output %s, want %s", got, want)
	}
	evs := h.history("run-1")
	want := "ExecutionStarted PassStateEntered PassStateExited TaskStateEntered LambdaFunctionScheduled LambdaFunctionStarted " +
		"LambdaFunctionSucceeded TaskStateExited ChoiceStateEntered ChoiceStateExited PassStateEntered PassStateExited " +
		"SucceedStateEntered SucceedStateExited ExecutionSucceeded"
	if got := types_(evs); got != want {
		t.Fatalf("history:\n got %s\nwant %s", got, want)
	}
	for i, e := range evs {
		if e.Id != int64(i+1) || e.PreviousEventId != int64(i) {
			t.Fatalf("event %d has id %d previous %d", i, e.Id, e.PreviousEventId)
		}
	}
	if e := evs[4]; e.LambdaFunctionScheduledEventDetails == nil || aws.ToString(e.LambdaFunctionScheduledEventDetails.Resource) != arn("add") ||
		aws.ToString(e.LambdaFunctionScheduledEventDetails.Input) != `{"exec":"run-1","id":7}` {
		t.Fatalf("LambdaFunctionScheduled details %+v", e.LambdaFunctionScheduledEventDetails)
	}
	if e := evs[7]; e.StateExitedEventDetails == nil || aws.ToString(e.StateExitedEventDetails.Name) != "Add" {
		t.Fatalf("TaskStateExited details %+v", e.StateExitedEventDetails)
	}
	if !evs[0].Timestamp.Equal(t0) {
		t.Fatalf("event time %v, want the fake clock's %v", evs[0].Timestamp, t0)
	}
}

// The error name of a function error is exactly what aws-lambda-go reports
// in AWS: the Go type name without the pointer. Functions here are built
// with lambda.NewHandler(h).Invoke, as the coordinator wires them.
func TestFunctionErrorNames(t *testing.T) {
	def := `{"StartAt": "T", "States": {"T": {"Type": "Task", "Resource": "` + arn("f") + `", "End": true}}}`
	tests := []struct {
		name      string
		handler   func(context.Context, json.RawMessage) (string, error)
		wantError string
		wantCause string
	}{
		{"pointer type", func(context.Context, json.RawMessage) (string, error) { return "", &TransientError{msg: "store busy"} },
			"TransientError", `{"errorMessage":"store busy","errorType":"TransientError"}`},
		{"wrapped with fmt.Errorf", func(context.Context, json.RawMessage) (string, error) {
			return "", fmt.Errorf("record: %w", &TransientError{msg: "x"})
		}, "wrapError", `{"errorMessage":"record: x","errorType":"wrapError"}`},
		{"errors.New", func(context.Context, json.RawMessage) (string, error) { return "", errors.New("plain <b>") },
			"errorString", `{"errorMessage":"plain <b>","errorType":"errorString"}`},
		{"panic with string", func(context.Context, json.RawMessage) (string, error) { panic("boom") },
			"string", `{"errorMessage":"boom","errorType":"string"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, def, map[string]LambdaFunc{"f": lambda.NewHandler(tc.handler).Invoke})
			h.start("e", `{}`)
			d := h.waitStatus("e", types.ExecutionStatusFailed)
			if aws.ToString(d.Error) != tc.wantError || aws.ToString(d.Cause) != tc.wantCause {
				t.Fatalf("error %q cause %q; want %q %q", aws.ToString(d.Error), aws.ToString(d.Cause), tc.wantError, tc.wantCause)
			}
			evs := h.history("e")
			failed := evs[len(evs)-2]
			if failed.Type != types.HistoryEventTypeLambdaFunctionFailed || aws.ToString(failed.LambdaFunctionFailedEventDetails.Error) != tc.wantError {
				t.Fatalf("want LambdaFunctionFailed %s, got %s", tc.wantError, types_(evs))
			}
		})
	}
}

// Retry: retriers are scanned in order, the first whose ErrorEquals matches
// decides, each keeps its own attempt count, the delays grow by
// BackoffRate and are capped by MaxDelaySeconds; after retries run out the
// catchers are scanned in order and the error output lands at the catcher's
// ResultPath.
func TestRetryThenCatch(t *testing.T) {
	def := `{"StartAt": "T", "States": {
		"T": {"Type": "Task", "Resource": "` + arn("f") + `", "Parameters": {"retry.$": "$$.State.RetryCount"},
			"Retry": [
				{"ErrorEquals": ["TransientError"], "IntervalSeconds": 1, "MaxAttempts": 3, "BackoffRate": 2, "MaxDelaySeconds": 3},
				{"ErrorEquals": ["States.ALL"], "IntervalSeconds": 10, "MaxAttempts": 1}],
			"Catch": [
				{"ErrorEquals": ["Nope"], "Next": "Wrong"},
				{"ErrorEquals": ["States.TaskFailed"], "ResultPath": "$.error", "Next": "Caught"},
				{"ErrorEquals": ["States.ALL"], "Next": "Wrong"}],
			"End": true},
		"Caught": {"Type": "Pass", "End": true},
		"Wrong": {"Type": "Fail", "Error": "Wrong"}}}`
	calls := &counter{}
	var seen []string
	h := newHarness(t, def, map[string]LambdaFunc{"f": func(_ context.Context, p []byte) ([]byte, error) {
		n := calls.inc()
		seen = append(seen, string(p))
		if n <= 4 {
			return nil, &TransientError{msg: fmt.Sprintf("attempt %d", n)}
		}
		return nil, &PermanentError{msg: "gave up"}
	}})
	h.start("r", `{"a": 1}`)
	// Attempts 1..4 fail with TransientError: 1 try + 3 retries, then the
	// retrier is exhausted and retrying stops (the States.ALL retrier is
	// not consulted for TransientError). So 4 calls in all.
	for i := 1; i <= 3; i++ {
		h.waitEvent("r", types.HistoryEventTypeLambdaFunctionFailed, i)
		h.waitTimer()
		h.clock.AdvanceToNext()
	}
	d := h.waitStatus("r", types.ExecutionStatusSucceeded)
	if calls.get() != 4 {
		t.Fatalf("%d calls, want 4", calls.get())
	}
	if got := strings.Join(seen, " "); got != `{"retry":0} {"retry":1} {"retry":2} {"retry":3}` {
		t.Fatalf("$$.State.RetryCount seen by the attempts: %s", got)
	}
	if got, want := aws.ToString(d.Output), `{"a":1,"error":{"Cause":"{\"errorMessage\":\"attempt 4\",\"errorType\":\"TransientError\"}","Error":"TransientError"}}`; got != want {
		t.Fatalf("output %s\nwant %s", got, want)
	}
	evs := h.history("r")
	var starts []time.Duration
	for _, e := range evs {
		if e.Type == types.HistoryEventTypeLambdaFunctionScheduled {
			starts = append(starts, e.Timestamp.Sub(t0))
		}
	}
	// Delays 1s, 2s, then 4s capped at 3s: attempts at 0, 1, 3, 6 seconds.
	want := []time.Duration{0, time.Second, 3 * time.Second, 6 * time.Second}
	if fmt.Sprint(starts) != fmt.Sprint(want) {
		t.Fatalf("attempts at %v, want %v", starts, want)
	}
}

func TestRetrierCountsAndMaxAttemptsZero(t *testing.T) {
	def := `{"StartAt": "T", "States": {
		"T": {"Type": "Task", "Resource": "` + arn("f") + `",
			"Retry": [
				{"ErrorEquals": ["PermanentError"], "MaxAttempts": 0},
				{"ErrorEquals": ["TransientError"], "IntervalSeconds": 1, "MaxAttempts": 1},
				{"ErrorEquals": ["States.ALL"], "IntervalSeconds": 5, "MaxAttempts": 2, "BackoffRate": 1}],
			"End": true}}}`
	// TransientError, then a third error type twice, then PermanentError.
	script := []error{&TransientError{"t"}, errors.New("other"), errors.New("other"), &PermanentError{"p"}}
	calls := &counter{}
	h := newHarness(t, def, map[string]LambdaFunc{"f": func(context.Context, []byte) ([]byte, error) {
		n := calls.inc()
		return nil, script[n-1]
	}})
	h.start("c", `{}`)
	for i := 1; i <= 3; i++ {
		h.waitEvent("c", types.HistoryEventTypeLambdaFunctionFailed, i)
		h.waitTimer()
		h.clock.AdvanceToNext()
	}
	d := h.waitStatus("c", types.ExecutionStatusFailed)
	if aws.ToString(d.Error) != "PermanentError" || calls.get() != 4 {
		t.Fatalf("error %q after %d calls; want PermanentError after 4 (MaxAttempts 0 never retries)", aws.ToString(d.Error), calls.get())
	}
	var starts []time.Duration
	for _, e := range h.history("c") {
		if e.Type == types.HistoryEventTypeLambdaFunctionScheduled {
			starts = append(starts, e.Timestamp.Sub(t0))
		}
	}
	// 0; TransientError retrier (1s) -> 1; States.ALL retrier (5s) -> 6; again (5s) -> 11.
	want := []time.Duration{0, time.Second, 6 * time.Second, 11 * time.Second}
	if fmt.Sprint(starts) != fmt.Sprint(want) {
		t.Fatalf("attempts at %v, want %v", starts, want)
	}
}

// A path that selects nothing is States.Runtime: the execution fails even
// though a States.ALL retrier and catcher are there.
func TestRuntimeErrorIsNotCaught(t *testing.T) {
	def := `{"StartAt": "T", "States": {
		"T": {"Type": "Task", "Resource": "` + arn("f") + `", "Parameters": {"x.$": "$.missing"},
			"Retry": [{"ErrorEquals": ["States.ALL"]}], "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "C"}], "End": true},
		"C": {"Type": "Succeed"}}}`
	calls := &counter{}
	h := newHarness(t, def, map[string]LambdaFunc{"f": func(context.Context, []byte) ([]byte, error) { calls.inc(); return []byte(`{}`), nil }})
	h.start("x", `{"a": 1}`)
	d := h.waitStatus("x", types.ExecutionStatusFailed)
	if aws.ToString(d.Error) != "States.Runtime" || !strings.Contains(aws.ToString(d.Cause), "An error occurred while executing the state 'T' (entered at the event id #2). The JSONPath '$.missing' specified for the field 'x.$' could not be found") {
		t.Fatalf("error %q cause %q", aws.ToString(d.Error), aws.ToString(d.Cause))
	}
	if calls.get() != 0 {
		t.Fatal("the function ran although its parameters could not be built")
	}
}

func TestNoChoiceMatched(t *testing.T) {
	def := `{"StartAt": "C", "States": {
		"C": {"Type": "Choice", "Choices": [{"Variable": "$.v", "StringEquals": "a", "Next": "A"}]},
		"A": {"Type": "Succeed"}}}`
	h := newHarness(t, def, nil)
	h.start("n", `{"v": "b"}`)
	d := h.waitStatus("n", types.ExecutionStatusFailed)
	if aws.ToString(d.Error) != "States.NoChoiceMatched" {
		t.Fatalf("error %q, want States.NoChoiceMatched", aws.ToString(d.Error))
	}
}

func TestFailState(t *testing.T) {
	def := `{"StartAt": "F", "States": {"F": {"Type": "Fail", "ErrorPath": "$.code", "CausePath": "States.Format('because {}', $.why)"}}}`
	h := newHarness(t, def, nil)
	h.start("f", `{"code": "Denied", "why": "policy"}`)
	d := h.waitStatus("f", types.ExecutionStatusFailed)
	if aws.ToString(d.Error) != "Denied" || aws.ToString(d.Cause) != "because policy" {
		t.Fatalf("error %q cause %q", aws.ToString(d.Error), aws.ToString(d.Cause))
	}
	if got := types_(h.history("f")); got != "ExecutionStarted FailStateEntered ExecutionFailed" {
		t.Fatalf("history %s", got)
	}
}

// TimeoutSeconds bounds a Lambda invocation: the task fails with
// States.Timeout (which States.TaskFailed does not match).
func TestTaskTimeout(t *testing.T) {
	def := `{"StartAt": "T", "States": {
		"T": {"Type": "Task", "Resource": "` + arn("slow") + `", "TimeoutSeconds": 30,
			"Catch": [{"ErrorEquals": ["States.TaskFailed"], "Next": "Wrong"}, {"ErrorEquals": ["States.Timeout"], "ResultPath": "$.err", "Next": "TimedOut"}],
			"End": true},
		"Wrong": {"Type": "Fail", "Error": "Wrong"},
		"TimedOut": {"Type": "Succeed"}}}`
	cancelled := make(chan struct{})
	h := newHarness(t, def, map[string]LambdaFunc{"slow": func(ctx context.Context, _ []byte) ([]byte, error) {
		<-ctx.Done()
		close(cancelled)
		return nil, ctx.Err()
	}})
	h.start("s", `{}`)
	h.waitEvent("s", types.HistoryEventTypeLambdaFunctionStarted, 1)
	h.waitTimer()
	h.clock.Advance(29 * time.Second)
	if d := h.describe("s"); d.Status != types.ExecutionStatusRunning {
		t.Fatalf("status %s before the timeout", d.Status)
	}
	h.clock.Advance(time.Second)
	d := h.waitStatus("s", types.ExecutionStatusSucceeded)
	if !strings.Contains(aws.ToString(d.Output), `"Error":"States.Timeout"`) {
		t.Fatalf("output %s", aws.ToString(d.Output))
	}
	<-cancelled // the function's context was cancelled
	evs := h.history("s")
	if count(evs, types.HistoryEventTypeLambdaFunctionTimedOut) != 1 {
		t.Fatalf("history %s", types_(evs))
	}
}

// Wait states run on the engine's clock.
func TestWaitState(t *testing.T) {
	def := `{"StartAt": "W", "States": {
		"W": {"Type": "Wait", "SecondsPath": "$.s", "Next": "W2"},
		"W2": {"Type": "Wait", "Timestamp": "2026-03-01T12:01:00Z", "Next": "Z"},
		"Z": {"Type": "Wait", "Seconds": 0, "End": true}}}`
	h := newHarness(t, def, nil)
	h.start("w", `{"s": 10}`)
	h.waitTimer()
	h.clock.Advance(9 * time.Second)
	if h.describe("w").Status != types.ExecutionStatusRunning {
		t.Fatal("Wait ended early")
	}
	h.clock.Advance(time.Second)
	h.waitEvent("w", types.HistoryEventTypeWaitStateEntered, 2)
	h.waitTimer()
	h.clock.Set(time.Date(2026, 3, 1, 12, 1, 0, 0, time.UTC))
	d := h.waitStatus("w", types.ExecutionStatusSucceeded)
	if !d.StopDate.Equal(t0.Add(time.Minute)) {
		t.Fatalf("stopped at %v", d.StopDate)
	}
}

// An execution-level TimeoutSeconds ends the execution TIMED_OUT.
func TestExecutionTimeout(t *testing.T) {
	def := `{"TimeoutSeconds": 5, "StartAt": "W", "States": {"W": {"Type": "Wait", "Seconds": 100, "End": true}}}`
	h := newHarness(t, def, nil)
	h.start("t", `{}`)
	h.waitTimer()
	h.clock.Advance(5 * time.Second)
	d := h.waitStatus("t", types.ExecutionStatusTimedOut)
	if aws.ToString(d.Error) != "States.Timeout" {
		t.Fatalf("error %q", aws.ToString(d.Error))
	}
	st := h.statusEvents()
	if len(st) != 2 || st[1].Detail.Status != "TIMED_OUT" {
		t.Fatalf("status events %+v", st)
	}
}

func TestLambdaInvokeResource(t *testing.T) {
	def := `{"StartAt": "T", "States": {"T": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke",
		"Parameters": {"FunctionName": "` + arn("f") + `", "Payload": {"x.$": "$.x"}}, "ResultSelector": {"p.$": "$.Payload", "code.$": "$.StatusCode"}, "End": true}}}`
	h := newHarness(t, def, map[string]LambdaFunc{"f": echo()})
	h.start("i", `{"x": [1]}`)
	d := h.waitStatus("i", types.ExecutionStatusSucceeded)
	if got := aws.ToString(d.Output); got != `{"code":200,"p":{"x":[1]}}` {
		t.Fatalf("output %s", got)
	}
	if got := types_(h.history("i")); !strings.Contains(got, "TaskScheduled TaskStarted TaskSucceeded TaskStateExited") {
		t.Fatalf("history %s", got)
	}
}

func TestDataLimit(t *testing.T) {
	def := `{"StartAt": "T", "States": {"T": {"Type": "Task", "Resource": "` + arn("big") + `",
		"Catch": [{"ErrorEquals": ["States.ALL"], "Next": "C"}], "End": true}, "C": {"Type": "Succeed"}}}`
	h := newHarness(t, def, map[string]LambdaFunc{"big": func(context.Context, []byte) ([]byte, error) {
		return json.Marshal(strings.Repeat("x", maxPayload))
	}})
	h.start("d", `{}`)
	d := h.waitStatus("d", types.ExecutionStatusFailed)
	if aws.ToString(d.Error) != "States.DataLimitExceeded" {
		t.Fatalf("error %q", aws.ToString(d.Error))
	}
}

func TestNewRefuses(t *testing.T) {
	good := `{"StartAt": "T", "States": {"T": {"Type": "Task", "Resource": "${F}", "End": true}}}`
	tests := []struct {
		name string
		cfg  func(*Config)
		want string
	}{
		{"missing substitution", func(c *Config) { c.Substitutions = nil }, "${F}"},
		{"function not registered", func(c *Config) { c.Functions = nil }, "States.T: no function registered for " + arn("f")},
		{"invalid definition", func(c *Config) {
			c.Definition = []byte(`{"StartAt": "T", "States": {"T": {"Type": "Pass", "End": true, "X": 1}}}`)
		}, "States.T.X: unknown field"},
		{"bad name", func(c *Config) { c.StateMachineName = "a b" }, "not a valid state machine name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{
				Store:            &nopStore{},
				Definition:       []byte(good),
				Substitutions:    map[string]string{"F": arn("f")},
				StateMachineName: "m",
				Functions:        map[string]LambdaFunc{arn("f"): echo()},
			}
			tc.cfg(&cfg)
			_, err := New(cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want error with %q, got %v", tc.want, err)
			}
		})
	}
}

func TestStatusChangeEvents(t *testing.T) {
	def := `{"StartAt": "T", "States": {"T": {"Type": "Task", "Resource": "` + arn("f") + `", "End": true}}}`
	h := newHarness(t, def, map[string]LambdaFunc{"f": echo()})
	h.start("s", `{"k": "v"}`)
	h.waitStatus("s", types.ExecutionStatusSucceeded)
	var st []StatusChangeEvent
	h.waitFor("two status events", func() bool { st = h.statusEvents(); return len(st) == 2 })
	b, _ := json.Marshal(st[1])
	var generic map[string]any
	_ = json.Unmarshal(b, &generic)
	detail := generic["detail"].(map[string]any)
	if generic["source"] != "aws.states" || generic["detail-type"] != "Step Functions Execution Status Change" ||
		detail["status"] != "SUCCEEDED" || detail["name"] != "s" || detail["input"] != `{"k": "v"}` || detail["output"] != `{"k":"v"}` ||
		detail["executionArn"] != h.eng.ExecutionArn("s") || detail["stateMachineArn"] != h.eng.StateMachineArn() {
		t.Fatalf("SUCCEEDED event %s", b)
	}
	if _, ok := detail["stopDate"].(float64); !ok {
		t.Fatalf("stopDate missing: %s", b)
	}
	var cw events.CloudWatchEvent
	if err := json.Unmarshal(b, &cw); err != nil || cw.DetailType != StatusChangeDetailType || cw.Source != "aws.states" ||
		len(cw.Resources) != 1 || cw.Resources[0] != h.eng.ExecutionArn("s") || !cw.Time.Equal(t0) {
		t.Fatalf("not an EventBridge event as aws-lambda-go reads it: %+v %v", cw, err)
	}
	b, _ = json.Marshal(st[0])
	_ = json.Unmarshal(b, &generic)
	detail = generic["detail"].(map[string]any)
	if detail["status"] != "RUNNING" || detail["stopDate"] != nil || detail["output"] != nil {
		t.Fatalf("RUNNING event %s", b)
	}
}

// Closing while a function runs: the function's context is cancelled, its
// result is not recorded, and after a restart the task runs again.
func TestInFlightTaskRunsAgainAfterRestart(t *testing.T) {
	def := `{"StartAt": "A", "States": {
		"A": {"Type": "Task", "Resource": "` + arn("a") + `", "ResultPath": "$.a", "Next": "B"},
		"B": {"Type": "Task", "Resource": "` + arn("b") + `", "ResultPath": "$.b", "End": true}}}`
	aCalls, bCalls := &counter{}, &counter{}
	block := make(chan struct{})
	h := newHarness(t, def, map[string]LambdaFunc{
		"a": func(context.Context, []byte) ([]byte, error) { aCalls.inc(); return []byte(`"a-done"`), nil },
		"b": func(ctx context.Context, _ []byte) ([]byte, error) {
			if bCalls.inc() == 1 {
				close(block)
				<-ctx.Done() // in flight when the process stops
				return nil, ctx.Err()
			}
			return []byte(`"b-done"`), nil
		},
	})
	h.start("inflight", `{}`)
	<-block
	h.restart()
	d := h.waitStatus("inflight", types.ExecutionStatusSucceeded)
	if got := aws.ToString(d.Output); got != `{"a":"a-done","b":"b-done"}` {
		t.Fatalf("output %s", got)
	}
	if aCalls.get() != 1 || bCalls.get() != 2 {
		t.Fatalf("a ran %d times (want 1: its result was recorded), b ran %d times (want 2)", aCalls.get(), bCalls.get())
	}
}

// A Task that leads straight to another Task is not written (commitStep).
// A process killed after it resumes from the last boundary written and
// invokes that Task again (at least once); the history then holds each
// event id once, from the second run.
func TestKilledProcessRerunsTasksSinceLastWrite(t *testing.T) {
	def := `{"StartAt": "A", "States": {
		"A": {"Type": "Task", "Resource": "` + arn("a") + `", "ResultPath": "$.a", "Next": "B"},
		"B": {"Type": "Task", "Resource": "` + arn("b") + `", "ResultPath": "$.b", "End": true}}}`
	aCalls, bCalls := &counter{}, &counter{}
	block, release := make(chan struct{}), make(chan struct{})
	fns := map[string]LambdaFunc{
		"a": func(context.Context, []byte) ([]byte, error) { aCalls.inc(); return []byte(`"a-done"`), nil },
		"b": func(ctx context.Context, _ []byte) ([]byte, error) {
			if bCalls.inc() == 1 {
				close(block)
				<-release
				return nil, errors.New("the killed process never returns this")
			}
			return []byte(`"b-done"`), nil
		},
	}
	h := newHarness(t, def, fns)
	defer close(release)
	h.start("killed", `{}`)
	<-block
	// What a SIGKILL leaves: the database file and its WAL as they are now.
	dir := t.TempDir()
	for _, suffix := range []string{"", "-wal"} {
		b, err := os.ReadFile(h.path + suffix)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "state.db"+suffix), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	h2 := &harness{t: t, path: filepath.Join(dir, "state.db"), def: def, fns: fns, clock: NewFakeClock(t0)}
	h2.open()
	t.Cleanup(h2.close)
	d := h2.waitStatus("killed", types.ExecutionStatusSucceeded)
	if got := aws.ToString(d.Output); got != `{"a":"a-done","b":"b-done"}` {
		t.Fatalf("output %s", got)
	}
	if aCalls.get() != 2 || bCalls.get() != 2 {
		t.Fatalf("a ran %d times, b %d times; want 2 and 2 (both since the last write)", aCalls.get(), bCalls.get())
	}
	evs := h2.history("killed")
	for i, ev := range evs {
		if ev.Id != int64(i+1) {
			t.Fatalf("event %d has id %d: %s", i, ev.Id, types_(evs))
		}
	}
	if n := count(evs, types.HistoryEventTypeLambdaFunctionScheduled); n != 2 {
		t.Fatalf("%d LambdaFunctionScheduled events, want 2 (one per Task): %s", n, types_(evs))
	}
}

func TestWaitSurvivesRestart(t *testing.T) {
	def := `{"StartAt": "W", "States": {"W": {"Type": "Wait", "Seconds": 60, "End": true}}}`
	h := newHarness(t, def, nil)
	h.start("w", `{}`)
	h.waitTimer()
	h.restart()
	h.waitTimer()
	h.clock.Advance(59 * time.Second)
	if h.describe("w").Status != types.ExecutionStatusRunning {
		t.Fatal("the restart lost or shortened the wait")
	}
	h.clock.Advance(time.Second)
	d := h.waitStatus("w", types.ExecutionStatusSucceeded)
	if !d.StopDate.Equal(t0.Add(time.Minute)) {
		t.Fatalf("stopped at %v", d.StopDate)
	}
}

func TestListExecutions(t *testing.T) {
	def := `{"StartAt": "W", "States": {"W": {"Type": "Wait", "Seconds": 60, "End": true}}}`
	h := newHarness(t, def, nil)
	for i := range 5 {
		h.start(fmt.Sprintf("e%d", i), `{}`)
		h.clock.Advance(time.Millisecond)
	}
	if _, err := h.client.StopExecution(context.Background(), &sfn.StopExecutionInput{ExecutionArn: aws.String(h.eng.ExecutionArn("e1"))}); err != nil {
		t.Fatal(err)
	}
	var names []string
	p := sfn.NewListExecutionsPaginator(h.client, &sfn.ListExecutionsInput{StateMachineArn: aws.String(h.eng.StateMachineArn()), MaxResults: 2})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range page.Executions {
			names = append(names, aws.ToString(e.Name)+":"+string(e.Status))
		}
	}
	if got := strings.Join(names, " "); got != "e4:RUNNING e3:RUNNING e2:RUNNING e1:ABORTED e0:RUNNING" {
		t.Fatalf("listed %s", got)
	}
	out, err := h.client.ListExecutions(context.Background(), &sfn.ListExecutionsInput{StateMachineArn: aws.String(h.eng.StateMachineArn()), StatusFilter: types.ExecutionStatusAborted})
	if err != nil || len(out.Executions) != 1 || aws.ToString(out.Executions[0].Name) != "e1" {
		t.Fatalf("filtered list %+v %v", out, err)
	}
}

// Data near Step Functions' 256 KiB limit: the execution item and log
// entries are split so each fits the store's item size, history events too
// large to keep carry "truncated", and the execution still completes and
// survives a restart.
func TestLargeData(t *testing.T) {
	def := `{"StartAt": "A", "States": {
		"A": {"Type": "Task", "Resource": "` + arn("f") + `", "ResultPath": null, "Next": "W"},
		"W": {"Type": "Wait", "Seconds": 1, "Next": "B"},
		"B": {"Type": "Task", "Resource": "` + arn("f") + `", "ResultSelector": {"n.$": "States.ArrayLength($.q)"}, "End": true}}}`
	h := newHarness(t, def, map[string]LambdaFunc{"f": echo()})
	// Quotes double in size when the data is embedded in a history event.
	quotes := make([]string, 20000)
	for i := range quotes {
		quotes[i] = `"q"`
	}
	input := `{"q": [` + strings.Join(quotes, ",") + `]}`
	if len(input) > maxPayload || len(input) < maxPayload/4 {
		t.Fatalf("input of %d bytes", len(input))
	}
	h.start("big", input)
	h.waitTimer()
	h.restart()
	h.waitTimer()
	h.clock.Advance(time.Second)
	d := h.waitStatus("big", types.ExecutionStatusSucceeded)
	if got := aws.ToString(d.Output); got != `{"n":20000}` {
		t.Fatalf("output %s", got)
	}
	evs := h.history("big")
	for i, e := range evs {
		if e.Id != int64(i+1) {
			t.Fatalf("history ids broken at %d: %s", i, types_(evs))
		}
	}
	if d := evs[0].ExecutionStartedEventDetails; d == nil || d.InputDetails == nil {
		t.Fatalf("ExecutionStarted details %+v", d)
	}
	if aws.ToString(h.describe("big").Input) != input {
		got := aws.ToString(h.describe("big").Input)
		t.Fatalf("DescribeExecution lost the input: %d bytes %.80q", len(got), got)
	}
}

// Close stops everything the engine started: no goroutine outlives it.
func TestCloseLeavesNoGoroutines(t *testing.T) {
	settle := func() int {
		n := runtime.NumGoroutine()
		for range 200 {
			time.Sleep(5 * time.Millisecond)
			if m := runtime.NumGoroutine(); m <= n {
				n = m
			}
		}
		return n
	}
	before := settle()
	box := &tokenBox{}
	def := `{"StartAt": "C", "States": {
		"C": {"Type": "Choice", "Choices": [{"Variable": "$.kind", "StringEquals": "wait", "Next": "W"},
			{"Variable": "$.kind", "StringEquals": "slow", "Next": "S"}], "Default": "Await"},
		"W": {"Type": "Wait", "Seconds": 100, "End": true},
		"S": {"Type": "Task", "Resource": "` + arn("slow") + `", "TimeoutSeconds": 100, "End": true},
		"Await": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke.waitForTaskToken",
			"Parameters": {"FunctionName": "` + arn("approval") + `", "Payload": {"token.$": "$$.Task.Token"}}, "HeartbeatSeconds": 50, "End": true}}}`
	started := make(chan struct{}, 1)
	h := newHarness(t, def, map[string]LambdaFunc{
		"approval": box.fn(),
		"slow": func(ctx context.Context, _ []byte) ([]byte, error) {
			started <- struct{}{}
			<-ctx.Done()
			return nil, ctx.Err()
		},
	})
	h.start("w", `{"kind": "wait"}`)
	h.start("s", `{"kind": "slow"}`)
	h.start("a", `{"kind": "await"}`)
	<-started
	h.waitEvent("a", types.HistoryEventTypeTaskSubmitted, 1)
	h.close()
	http.DefaultClient.CloseIdleConnections()
	if after := settle(); after > before {
		buf := make([]byte, 1<<16)
		n := runtime.Stack(buf, true)
		t.Fatalf("%d goroutines before, %d after Close:\n%s", before, after, buf[:n])
	}
}
