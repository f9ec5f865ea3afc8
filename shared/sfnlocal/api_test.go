package sfnlocal

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/openprogram/lifecycle/shared/store"
)

// nopStore satisfies store.Store for tests that never reach the store.
type nopStore struct{ store.Store }

// tokenBox captures the task tokens a .waitForTaskToken function receives.
type tokenBox struct {
	mu     sync.Mutex
	tokens []string
}

func (b *tokenBox) fn() LambdaFunc {
	return func(_ context.Context, p []byte) ([]byte, error) {
		var in struct {
			Token string `json:"token"`
		}
		if err := json.Unmarshal(p, &in); err != nil {
			return nil, err
		}
		b.mu.Lock()
		b.tokens = append(b.tokens, in.Token)
		b.mu.Unlock()
		return []byte(`{"accepted": true}`), nil
	}
}

func (b *tokenBox) get(i int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if i < len(b.tokens) {
		return b.tokens[i]
	}
	return ""
}

func (b *tokenBox) n() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.tokens)
}

const approvalDef = `{"StartAt": "Await", "States": {
	"Await": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke.waitForTaskToken",
		"Parameters": {"FunctionName": "arn:aws:lambda:us-east-1:123456789012:function:approval",
			"Payload": {"id.$": "$.id", "token.$": "$$.Task.Token"}},
		"TimeoutSeconds": 3600, "HeartbeatSeconds": 60, "ResultPath": "$.approval",
		"Catch": [{"ErrorEquals": ["States.Timeout"], "ResultPath": "$.error", "Next": "Expired"},
		          {"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "Declined"}],
		"Next": "Approved"},
	"Approved": {"Type": "Succeed"},
	"Expired": {"Type": "Pass", "Result": "expired", "ResultPath": "$.outcome", "End": true},
	"Declined": {"Type": "Pass", "Result": "declined", "ResultPath": "$.outcome", "End": true}}}`

func (h *harness) sendSuccess(token, output string) error {
	_, err := h.client.SendTaskSuccess(context.Background(), &sfn.SendTaskSuccessInput{TaskToken: aws.String(token), Output: aws.String(output)})
	return err
}

func (h *harness) sendFailure(token, errName, cause string) error {
	_, err := h.client.SendTaskFailure(context.Background(), &sfn.SendTaskFailureInput{TaskToken: aws.String(token), Error: aws.String(errName), Cause: aws.String(cause)})
	return err
}

func (h *harness) heartbeat(token string) error {
	_, err := h.client.SendTaskHeartbeat(context.Background(), &sfn.SendTaskHeartbeatInput{TaskToken: aws.String(token)})
	return err
}

func TestTaskTokenSuccess(t *testing.T) {
	box := &tokenBox{}
	h := newHarness(t, approvalDef, map[string]LambdaFunc{"approval": box.fn()})
	h.start("a", `{"id": 1}`)
	h.waitEvent("a", types.HistoryEventTypeTaskSubmitted, 1)
	tok := box.get(0)
	if err := h.sendSuccess(tok, `{"by": "alice"}`); err != nil {
		t.Fatal(err)
	}
	// The call returns once the outcome is durable and applied.
	if d := h.describe("a"); d.Status != types.ExecutionStatusSucceeded || aws.ToString(d.Output) != `{"approval":{"by":"alice"},"id":1}` {
		t.Fatalf("after SendTaskSuccess: %s %s", d.Status, aws.ToString(d.Output))
	}
	want := "ExecutionStarted TaskStateEntered TaskScheduled TaskStarted TaskSubmitted TaskSucceeded TaskStateExited SucceedStateEntered SucceedStateExited ExecutionSucceeded"
	evs := h.history("a")
	if got := types_(evs); got != want {
		t.Fatalf("history:\n got %s\nwant %s", got, want)
	}
	sched := evs[2].TaskScheduledEventDetails
	if aws.ToString(sched.Resource) != "invoke.waitForTaskToken" || aws.ToString(sched.ResourceType) != "lambda" ||
		!strings.Contains(aws.ToString(sched.Parameters), `"token":"`+tok+`"`) || aws.ToInt64(sched.HeartbeatInSeconds) != 60 {
		t.Fatalf("TaskScheduled details %+v", sched)
	}
	// A used token is no longer valid.
	var tde *types.TaskDoesNotExist
	if err := h.sendSuccess(tok, `{}`); !errors.As(err, &tde) {
		t.Fatalf("reusing a token: want TaskDoesNotExist, got %v", err)
	}
}

func TestTaskTokenFailureIsCaught(t *testing.T) {
	box := &tokenBox{}
	h := newHarness(t, approvalDef, map[string]LambdaFunc{"approval": box.fn()})
	h.start("a", `{"id": 1}`)
	h.waitEvent("a", types.HistoryEventTypeTaskSubmitted, 1)
	if err := h.sendFailure(box.get(0), "Declined", "no"); err != nil {
		t.Fatal(err)
	}
	d := h.waitStatus("a", types.ExecutionStatusSucceeded)
	if got := aws.ToString(d.Output); got != `{"error":{"Cause":"no","Error":"Declined"},"id":1,"outcome":"declined"}` {
		t.Fatalf("output %s", got)
	}
}

// A heartbeat extends HeartbeatSeconds; without one the task fails with
// States.HeartbeatTimeout, which a States.Timeout catcher catches.
func TestHeartbeat(t *testing.T) {
	box := &tokenBox{}
	h := newHarness(t, approvalDef, map[string]LambdaFunc{"approval": box.fn()})
	h.start("a", `{"id": 1}`)
	h.waitEvent("a", types.HistoryEventTypeTaskSubmitted, 1)
	tok := box.get(0)
	h.clock.Advance(50 * time.Second)
	if err := h.heartbeat(tok); err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(50 * time.Second) // 100s since start, 50s since the heartbeat
	if h.describe("a").Status != types.ExecutionStatusRunning {
		t.Fatal("the heartbeat did not extend the deadline")
	}
	h.clock.Advance(10 * time.Second)
	d := h.waitStatus("a", types.ExecutionStatusSucceeded)
	if !strings.Contains(aws.ToString(d.Output), `"Error":"States.HeartbeatTimeout"`) || !strings.Contains(aws.ToString(d.Output), `"outcome":"expired"`) {
		t.Fatalf("output %s", aws.ToString(d.Output))
	}
	evs := h.history("a")
	if count(evs, types.HistoryEventTypeTaskTimedOut) != 1 {
		t.Fatalf("history %s", types_(evs))
	}
	var tto *types.TaskTimedOut
	if err := h.sendSuccess(tok, `{}`); !errors.As(err, &tto) {
		t.Fatalf("completing a timed-out task: want TaskTimedOut, got %v", err)
	}
	if err := h.heartbeat(tok); !errors.As(err, &tto) {
		t.Fatalf("heartbeat of a timed-out task: want TaskTimedOut, got %v", err)
	}
}

func TestTaskTokenTimeout(t *testing.T) {
	def := strings.Replace(approvalDef, `"HeartbeatSeconds": 60, `, "", 1)
	box := &tokenBox{}
	h := newHarness(t, def, map[string]LambdaFunc{"approval": box.fn()})
	h.start("a", `{"id": 1}`)
	h.waitEvent("a", types.HistoryEventTypeTaskSubmitted, 1)
	h.clock.Advance(time.Hour)
	d := h.waitStatus("a", types.ExecutionStatusSucceeded)
	if !strings.Contains(aws.ToString(d.Output), `"Error":"States.Timeout"`) {
		t.Fatalf("output %s", aws.ToString(d.Output))
	}
}

// The token is used by the function itself before it returns (a host
// worker that finishes at once): the outcome is kept and applied when the
// function returns.
func TestTokenCompletedDuringInvocation(t *testing.T) {
	var h *harness
	h = newHarness(t, approvalDef, map[string]LambdaFunc{"approval": func(_ context.Context, p []byte) ([]byte, error) {
		var in struct {
			Token string `json:"token"`
		}
		_ = json.Unmarshal(p, &in)
		if err := h.sendSuccess(in.Token, `"early"`); err != nil {
			return nil, err
		}
		return []byte(`{}`), nil
	}})
	h.start("early", `{"id": 1}`)
	d := h.waitStatus("early", types.ExecutionStatusSucceeded)
	if got := aws.ToString(d.Output); got != `{"approval":"early","id":1}` {
		t.Fatalf("output %s", got)
	}
}

// A pending task-token wait survives a restart: the new engine, over the
// same SQLite file, accepts the original token.
func TestTokenWaitSurvivesRestart(t *testing.T) {
	box := &tokenBox{}
	h := newHarness(t, approvalDef, map[string]LambdaFunc{"approval": box.fn()})
	h.start("persist", `{"id": 9}`)
	h.waitEvent("persist", types.HistoryEventTypeTaskSubmitted, 1)
	tok := box.get(0)
	h.restart()
	if d := h.describe("persist"); d.Status != types.ExecutionStatusRunning {
		t.Fatalf("status after restart %s", d.Status)
	}
	if err := h.sendSuccess(tok, `{"ok": true}`); err != nil {
		t.Fatalf("SendTaskSuccess with the original token after restart: %v", err)
	}
	d := h.waitStatus("persist", types.ExecutionStatusSucceeded)
	if got := aws.ToString(d.Output); got != `{"approval":{"ok":true},"id":9}` {
		t.Fatalf("output %s", got)
	}
	if box.n() != 1 {
		t.Fatalf("the approval function ran %d times; a submitted wait must not be invoked again", box.n())
	}
	// The history spans both processes, each event once.
	evs := h.history("persist")
	for i, e := range evs {
		if e.Id != int64(i+1) {
			t.Fatalf("history ids %s", types_(evs))
		}
	}
}

// The wait keeps its original deadline across a restart.
func TestTokenDeadlineSurvivesRestart(t *testing.T) {
	box := &tokenBox{}
	h := newHarness(t, approvalDef, map[string]LambdaFunc{"approval": box.fn()})
	h.start("d", `{"id": 1}`)
	h.waitEvent("d", types.HistoryEventTypeTaskSubmitted, 1)
	h.clock.Advance(40 * time.Second)
	h.restart()
	h.waitTimer()
	h.clock.Advance(20 * time.Second) // 60s after the start: the heartbeat deadline
	d := h.waitStatus("d", types.ExecutionStatusSucceeded)
	if !strings.Contains(aws.ToString(d.Output), "States.HeartbeatTimeout") {
		t.Fatalf("output %s", aws.ToString(d.Output))
	}
}

func TestStartExecutionIdempotency(t *testing.T) {
	h := newHarness(t, `{"StartAt": "W", "States": {"W": {"Type": "Wait", "Seconds": 10, "End": true}}}`, nil)
	first := h.start("same", `{"a": 1}`)
	h.clock.Advance(time.Second)
	again := h.start("same", `{"a": 1}`)
	if aws.ToString(again.ExecutionArn) != aws.ToString(first.ExecutionArn) || !again.StartDate.Equal(*first.StartDate) {
		t.Fatalf("repeat returned %v %v, first %v %v", aws.ToString(again.ExecutionArn), again.StartDate, aws.ToString(first.ExecutionArn), first.StartDate)
	}
	var exists *types.ExecutionAlreadyExists
	_, err := h.client.StartExecution(context.Background(), &sfn.StartExecutionInput{
		StateMachineArn: aws.String(h.eng.StateMachineArn()), Name: aws.String("same"), Input: aws.String(`{"a": 2}`)})
	if !errors.As(err, &exists) {
		t.Fatalf("same name, other input: want ExecutionAlreadyExists, got %v", err)
	}
	h.clock.Advance(10 * time.Second)
	h.waitStatus("same", types.ExecutionStatusSucceeded)
	_, err = h.client.StartExecution(context.Background(), &sfn.StartExecutionInput{
		StateMachineArn: aws.String(h.eng.StateMachineArn()), Name: aws.String("same"), Input: aws.String(`{"a": 1}`)})
	if !errors.As(err, &exists) {
		t.Fatalf("name of a closed execution: want ExecutionAlreadyExists, got %v", err)
	}
	// A running execution is still the same request after a restart: the
	// input is compared exactly as it was given (spaces included).
	h.start("keep", `{"b":  [1, 2]}`)
	h.restart()
	if again := h.start("keep", `{"b":  [1, 2]}`); aws.ToString(again.ExecutionArn) != h.eng.ExecutionArn("keep") {
		t.Fatalf("repeat after restart: %v", aws.ToString(again.ExecutionArn))
	}
	if got := aws.ToString(h.describe("keep").Input); got != `{"b":  [1, 2]}` {
		t.Fatalf("input came back as %q", got)
	}
	// After a restart the store, not memory, answers.
	_, err = h.client.StartExecution(context.Background(), &sfn.StartExecutionInput{
		StateMachineArn: aws.String(h.eng.StateMachineArn()), Name: aws.String("same"), Input: aws.String(`{"a": 1}`)})
	if !errors.As(err, &exists) {
		t.Fatalf("after restart: want ExecutionAlreadyExists, got %v", err)
	}
}

func TestConcurrentStartsOfOneName(t *testing.T) {
	h := newHarness(t, `{"StartAt": "W", "States": {"W": {"Type": "Wait", "Seconds": 10, "End": true}}}`, nil)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	arns := make([]string, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := h.client.StartExecution(context.Background(), &sfn.StartExecutionInput{
				StateMachineArn: aws.String(h.eng.StateMachineArn()), Name: aws.String("race"), Input: aws.String(`{}`)})
			errs[i] = err
			if err == nil {
				arns[i] = aws.ToString(out.ExecutionArn)
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil || arns[i] != h.eng.ExecutionArn("race") {
			t.Fatalf("start %d: %v %s", i, err, arns[i])
		}
	}
	if n := len(h.statusEvents()); n != 1 {
		t.Fatalf("%d RUNNING events for one execution", n)
	}
}

func TestStopExecution(t *testing.T) {
	box := &tokenBox{}
	h := newHarness(t, approvalDef, map[string]LambdaFunc{"approval": box.fn()})
	h.start("s", `{"id": 1}`)
	h.waitEvent("s", types.HistoryEventTypeTaskSubmitted, 1)
	h.clock.Advance(time.Second)
	out, err := h.client.StopExecution(context.Background(), &sfn.StopExecutionInput{
		ExecutionArn: aws.String(h.eng.ExecutionArn("s")), Error: aws.String("Cancelled"), Cause: aws.String("user")})
	if err != nil {
		t.Fatal(err)
	}
	if !out.StopDate.Equal(t0.Add(time.Second)) {
		t.Fatalf("stop date %v", out.StopDate)
	}
	d := h.describe("s")
	if d.Status != types.ExecutionStatusAborted || aws.ToString(d.Error) != "Cancelled" || aws.ToString(d.Cause) != "user" {
		t.Fatalf("after stop: %s %q %q", d.Status, aws.ToString(d.Error), aws.ToString(d.Cause))
	}
	var tde *types.TaskDoesNotExist
	if err := h.sendSuccess(box.get(0), `{}`); !errors.As(err, &tde) {
		t.Fatalf("token of an aborted execution: want TaskDoesNotExist, got %v", err)
	}
	// Stopping again is harmless.
	if _, err := h.client.StopExecution(context.Background(), &sfn.StopExecutionInput{ExecutionArn: aws.String(h.eng.ExecutionArn("s"))}); err != nil {
		t.Fatal(err)
	}
	st := h.statusEvents()
	if len(st) != 2 || st[1].Detail.Status != "ABORTED" {
		t.Fatalf("status events %+v", st)
	}
	if h.clock.Pending() != 0 {
		t.Fatalf("%d timers still armed for a stopped execution", h.clock.Pending())
	}
}

func TestAPIErrors(t *testing.T) {
	box := &tokenBox{}
	h := newHarness(t, approvalDef, map[string]LambdaFunc{"approval": box.fn()})
	ctx := context.Background()
	tests := []struct {
		name   string
		call   func() error
		target any
	}{
		{"malformed token", func() error { return h.sendSuccess("not-a-token", `{}`) }, new(*types.InvalidToken)},
		{"token of an unknown execution", func() error { return h.sendSuccess(newToken("ghost"), `{}`) }, new(*types.TaskDoesNotExist)},
		{"describe unknown", func() error {
			_, err := h.client.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(h.eng.ExecutionArn("ghost"))})
			return err
		}, new(*types.ExecutionDoesNotExist)},
		{"describe bad arn", func() error {
			_, err := h.client.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String("nope")})
			return err
		}, new(*types.InvalidArn)},
		{"stop unknown", func() error {
			_, err := h.client.StopExecution(ctx, &sfn.StopExecutionInput{ExecutionArn: aws.String(h.eng.ExecutionArn("ghost"))})
			return err
		}, new(*types.ExecutionDoesNotExist)},
		{"history unknown", func() error {
			_, err := h.client.GetExecutionHistory(ctx, &sfn.GetExecutionHistoryInput{ExecutionArn: aws.String(h.eng.ExecutionArn("ghost"))})
			return err
		}, new(*types.ExecutionDoesNotExist)},
		{"other state machine", func() error {
			_, err := h.client.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String("arn:aws:states:us-east-1:123456789012:stateMachine:other")})
			return err
		}, new(*types.StateMachineDoesNotExist)},
		{"invalid name", func() error {
			_, err := h.client.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String(h.eng.StateMachineArn()), Name: aws.String("a/b")})
			return err
		}, new(*types.InvalidName)},
		{"invalid input", func() error {
			_, err := h.client.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String(h.eng.StateMachineArn()), Name: aws.String("x"), Input: aws.String("{")})
			return err
		}, new(*types.InvalidExecutionInput)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.call(); err == nil || !errors.As(err, tc.target) {
				t.Fatalf("want %T, got %v", tc.target, err)
			}
		})
	}
	t.Run("invalid output", func(t *testing.T) {
		h.start("out", `{"id": 1}`)
		h.waitEvent("out", types.HistoryEventTypeTaskSubmitted, 1)
		var io *types.InvalidOutput
		if err := h.sendSuccess(box.get(0), `{not json`); !errors.As(err, &io) {
			t.Fatalf("want InvalidOutput, got %v", err)
		}
	})
}

func TestHistoryPaging(t *testing.T) {
	h := newHarness(t, `{"StartAt": "A", "States": {"A": {"Type": "Pass", "Next": "B"}, "B": {"Type": "Pass", "End": true}}}`, nil)
	h.start("p", `{}`)
	h.waitStatus("p", types.ExecutionStatusSucceeded)
	all := h.history("p") // pages of 7
	if len(all) != 6 {
		t.Fatalf("history %s", types_(all))
	}
	out, err := h.client.GetExecutionHistory(context.Background(), &sfn.GetExecutionHistoryInput{
		ExecutionArn: aws.String(h.eng.ExecutionArn("p")), ReverseOrder: true, MaxResults: 4})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Events) != 4 || out.Events[0].Type != types.HistoryEventTypeExecutionSucceeded || out.NextToken == nil {
		t.Fatalf("reverse page %s next %v", types_(out.Events), out.NextToken)
	}
	var it *types.InvalidToken
	_, err = h.client.GetExecutionHistory(context.Background(), &sfn.GetExecutionHistoryInput{
		ExecutionArn: aws.String(h.eng.ExecutionArn("p")), NextToken: aws.String("garbage")})
	if !errors.As(err, &it) {
		t.Fatalf("want InvalidToken, got %v", err)
	}
}

// Long histories move from the execution item to the history log in
// batches; reading them back gives every event once, in order, before and
// after a restart.
func TestLongHistory(t *testing.T) {
	def := `{"StartAt": "L", "States": {
		"L": {"Type": "Task", "Resource": "` + arn("f") + `", "Next": "C"},
		"C": {"Type": "Choice", "Choices": [{"Variable": "$.n", "NumericLessThan": 60, "Next": "L"}], "Default": "W"},
		"W": {"Type": "Wait", "Seconds": 5, "End": true}}}`
	h := newHarness(t, def, map[string]LambdaFunc{"f": fn(func(_ context.Context, in struct {
		N   int    `json:"n"`
		Pad string `json:"pad"`
	}) (any, error) {
		return map[string]any{"n": in.N + 1, "pad": strings.Repeat("p", 200)}, nil
	})})
	h.start("long", `{"n": 0}`)
	h.waitTimer() // the Wait after the loop
	check := func() {
		evs := h.history("long")
		if n := count(evs, types.HistoryEventTypeLambdaFunctionSucceeded); n != 60 {
			t.Fatalf("%d LambdaFunctionSucceeded events, want 60", n)
		}
		for i, e := range evs {
			if e.Id != int64(i+1) {
				t.Fatalf("event %d has id %d", i, e.Id)
			}
		}
	}
	check()
	h.restart()
	check()
	h.waitTimer()
	h.clock.Advance(5 * time.Second)
	h.waitStatus("long", types.ExecutionStatusSucceeded)
	check()
}
