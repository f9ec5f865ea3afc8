package sfnlocal

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sfn/types"
	"github.com/aws/smithy-go"
)

// Two definitions of one machine: B renames the state A's executions wait
// to enter, so an execution of A resumed on B would fail.
const (
	defA = `{"StartAt": "W", "States": {"W": {"Type": "Wait", "Seconds": 60, "Next": "A"}, "A": {"Type": "Pass", "Result": "ran A", "End": true}}}`
	defB = `{"StartAt": "W", "States": {"W": {"Type": "Wait", "Seconds": 60, "Next": "B"}, "B": {"Type": "Pass", "Result": "ran B", "End": true}}}`
)

func apiCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

func (h *harness) publish(description string) string {
	h.t.Helper()
	out, err := h.client.PublishStateMachineVersion(context.Background(), &sfn.PublishStateMachineVersionInput{
		StateMachineArn: aws.String(h.eng.StateMachineArn()), Description: aws.String(description)})
	if err != nil {
		h.t.Fatalf("PublishStateMachineVersion: %v", err)
	}
	return aws.ToString(out.StateMachineVersionArn)
}

func (h *harness) startOn(target, name string) {
	h.t.Helper()
	if _, err := h.client.StartExecution(context.Background(), &sfn.StartExecutionInput{
		StateMachineArn: aws.String(target), Name: aws.String(name), Input: aws.String(`{}`)}); err != nil {
		h.t.Fatalf("StartExecution %s on %s: %v", name, target, err)
	}
}

func routing(pairs ...any) []types.RoutingConfigurationListItem {
	var out []types.RoutingConfigurationListItem
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, types.RoutingConfigurationListItem{StateMachineVersionArn: aws.String(pairs[i].(string)), Weight: int32(pairs[i+1].(int))})
	}
	return out
}

func TestPublishStateMachineVersion(t *testing.T) {
	h := newHarness(t, defA, nil)
	ctx := context.Background()
	sm := h.eng.StateMachineArn()
	v1 := h.publish("rev-aaa")
	if v1 != sm+":1" {
		t.Fatalf("first version %s, want %s:1", v1, sm)
	}
	machine, err := h.client.DescribeStateMachine(ctx, &sfn.DescribeStateMachineInput{StateMachineArn: aws.String(sm)})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		in       sfn.PublishStateMachineVersionInput
		wantARN  string
		wantCode string
	}{
		{"unchanged definition returns the latest version", sfn.PublishStateMachineVersionInput{StateMachineArn: aws.String(sm), Description: aws.String("another description")}, v1, ""},
		{"the current revision id", sfn.PublishStateMachineVersionInput{StateMachineArn: aws.String(sm), RevisionId: machine.RevisionId}, v1, ""},
		{"a stale revision id", sfn.PublishStateMachineVersionInput{StateMachineArn: aws.String(sm), RevisionId: aws.String("0123")}, "", "ConflictException"},
		{"a description too long", sfn.PublishStateMachineVersionInput{StateMachineArn: aws.String(sm), Description: aws.String(strings.Repeat("d", 257))}, "", "ValidationException"},
		{"another machine", sfn.PublishStateMachineVersionInput{StateMachineArn: aws.String(strings.Replace(sm, "test-machine", "other", 1))}, "", "StateMachineDoesNotExist"},
		{"not an ARN", sfn.PublishStateMachineVersionInput{StateMachineArn: aws.String("nope")}, "", "InvalidArn"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := h.client.PublishStateMachineVersion(ctx, &c.in)
			if c.wantCode != "" {
				if apiCode(err) != c.wantCode {
					t.Fatalf("err = %v, want %s", err, c.wantCode)
				}
				return
			}
			if err != nil || aws.ToString(out.StateMachineVersionArn) != c.wantARN {
				t.Fatalf("published %v, %v; want %s", out, err, c.wantARN)
			}
		})
	}
	d, err := h.client.DescribeStateMachine(ctx, &sfn.DescribeStateMachineInput{StateMachineArn: aws.String(v1)})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(d.StateMachineArn) != v1 || aws.ToString(d.Description) != "rev-aaa" || aws.ToString(d.Definition) != defA ||
		aws.ToString(d.RevisionId) != aws.ToString(machine.RevisionId) || d.Status != types.StateMachineStatusActive {
		t.Fatalf("described version %+v", d)
	}
	list, err := h.client.ListStateMachineVersions(ctx, &sfn.ListStateMachineVersionsInput{StateMachineArn: aws.String(sm)})
	if err != nil || len(list.StateMachineVersions) != 1 || aws.ToString(list.StateMachineVersions[0].StateMachineVersionArn) != v1 {
		t.Fatalf("versions %+v, %v", list, err)
	}
	for _, missing := range []string{sm + ":2", sm + ":0", sm + ":01"} {
		_, err := h.client.DescribeStateMachine(ctx, &sfn.DescribeStateMachineInput{StateMachineArn: aws.String(missing)})
		if code := apiCode(err); code != "StateMachineDoesNotExist" && code != "InvalidArn" {
			t.Errorf("DescribeStateMachine %s: %v", missing, err)
		}
	}
}

// Every execution runs on the definition it started on, including after a
// restart with another definition; DescribeExecution names the version
// and alias as Step Functions does.
func TestExecutionsKeepTheirDefinitionAcrossRestarts(t *testing.T) {
	h := newHarness(t, defA, nil)
	ctx := context.Background()
	sm := h.eng.StateMachineArn()
	v1 := h.publish("A")
	if _, err := h.client.CreateStateMachineAlias(ctx, &sfn.CreateStateMachineAliasInput{Name: aws.String("live"), RoutingConfiguration: routing(v1, 100)}); err != nil {
		t.Fatal(err)
	}
	live := sm + ":live"
	h.startOn(v1, "on-v1")
	h.startOn(live, "on-live-a")
	h.startOn(sm, "on-machine-a")

	h.def = defB
	h.restart()
	v2 := h.publish("B")
	if v2 != sm+":2" {
		t.Fatalf("second version %s", v2)
	}
	if _, err := h.client.UpdateStateMachineAlias(ctx, &sfn.UpdateStateMachineAliasInput{StateMachineAliasArn: aws.String(live), RoutingConfiguration: routing(v2, 100)}); err != nil {
		t.Fatal(err)
	}
	h.startOn(live, "on-live-b")
	h.startOn(sm, "on-machine-b")
	h.waitFor("five timers", func() bool { return h.clock.Pending() >= 5 })
	h.clock.Advance(time.Minute)

	cases := []struct {
		name, output, version, alias string
	}{
		{"on-v1", `"ran A"`, v1, ""},
		{"on-live-a", `"ran A"`, v1, live},
		{"on-machine-a", `"ran A"`, "", ""},
		{"on-live-b", `"ran B"`, v2, live},
		{"on-machine-b", `"ran B"`, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := h.waitStatus(c.name, types.ExecutionStatusSucceeded)
			if aws.ToString(d.Output) != c.output || aws.ToString(d.StateMachineVersionArn) != c.version || aws.ToString(d.StateMachineAliasArn) != c.alias {
				t.Fatalf("output %s version %q alias %q; want %s %q %q", aws.ToString(d.Output), aws.ToString(d.StateMachineVersionArn), aws.ToString(d.StateMachineAliasArn), c.output, c.version, c.alias)
			}
			if aws.ToString(d.StateMachineArn) != sm || aws.ToString(d.ExecutionArn) != h.eng.ExecutionArn(c.name) {
				t.Fatalf("arns %s %s", aws.ToString(d.StateMachineArn), aws.ToString(d.ExecutionArn))
			}
			def, err := h.client.DescribeStateMachineForExecution(ctx, &sfn.DescribeStateMachineForExecutionInput{ExecutionArn: d.ExecutionArn})
			want := defA
			if c.output == `"ran B"` {
				want = defB
			}
			if err != nil || aws.ToString(def.Definition) != want {
				t.Fatalf("definition for execution %v: %s", err, aws.ToString(def.Definition))
			}
		})
	}
	// Version 1 stays describable after the definition changed.
	d, err := h.client.DescribeStateMachine(ctx, &sfn.DescribeStateMachineInput{StateMachineArn: aws.String(v1)})
	if err != nil || aws.ToString(d.Definition) != defA {
		t.Fatalf("version 1 after the restart: %v %s", err, aws.ToString(d.Definition))
	}
	// ListExecutions of a version or an alias lists those started on it.
	for _, c := range []struct {
		arn  string
		want []string
	}{{v1, []string{"on-live-a", "on-v1"}}, {live, []string{"on-live-a", "on-live-b"}}, {v2, []string{"on-live-b"}}} {
		out, err := h.client.ListExecutions(ctx, &sfn.ListExecutionsInput{StateMachineArn: aws.String(c.arn)})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, it := range out.Executions {
			got = append(got, aws.ToString(it.Name))
		}
		if strings.Join(sortedCopy(got), ",") != strings.Join(c.want, ",") {
			t.Errorf("ListExecutions %s = %v, want %v", c.arn, got, c.want)
		}
	}
	// Restarting with the same definition publishes nothing new.
	h.restart()
	if again := h.publish("B again"); again != v2 {
		t.Fatalf("unchanged definition published %s, want %s", again, v2)
	}
}

func sortedCopy(s []string) []string {
	c := append([]string(nil), s...)
	for i := range c {
		for j := i + 1; j < len(c); j++ {
			if c[j] < c[i] {
				c[i], c[j] = c[j], c[i]
			}
		}
	}
	return c
}

// A version is deleted only when no alias routes to it, nothing runs on it
// and the VersionInUse hook does not hold it.
func TestDeleteStateMachineVersion(t *testing.T) {
	pinned := map[string]bool{}
	var hookErr error
	h := newHarnessNoOpen(t, defA)
	h.versionInUse = func(_ context.Context, arn string) (bool, error) { return pinned[arn], hookErr }
	h.open()
	t.Cleanup(h.close)
	ctx := context.Background()
	sm := h.eng.StateMachineArn()
	v1 := h.publish("A")
	del := func(arn string) error {
		_, err := h.client.DeleteStateMachineVersion(ctx, &sfn.DeleteStateMachineVersionInput{StateMachineVersionArn: aws.String(arn)})
		return err
	}

	// An alias routes to it.
	if _, err := h.client.CreateStateMachineAlias(ctx, &sfn.CreateStateMachineAliasInput{Name: aws.String("live"), RoutingConfiguration: routing(v1, 100)}); err != nil {
		t.Fatal(err)
	}
	if err := del(v1); apiCode(err) != "ConflictException" || !strings.Contains(err.Error(), "live") {
		t.Fatalf("delete with an alias: %v", err)
	}
	if _, err := h.client.DeleteStateMachineAlias(ctx, &sfn.DeleteStateMachineAliasInput{StateMachineAliasArn: aws.String(sm + ":live")}); err != nil {
		t.Fatal(err)
	}
	// An execution runs on it, also after a restart.
	h.startOn(v1, "running")
	h.restart()
	if err := del(v1); apiCode(err) != "ConflictException" || !strings.Contains(err.Error(), "running execution") {
		t.Fatalf("delete with a running execution: %v", err)
	}
	h.waitTimer()
	h.clock.Advance(time.Minute)
	h.waitStatus("running", types.ExecutionStatusSucceeded)
	// The lifecycle holds it.
	pinned[v1] = true
	if err := del(v1); apiCode(err) != "ConflictException" || !strings.Contains(err.Error(), "pinned") {
		t.Fatalf("delete of a pinned version: %v", err)
	}
	pinned[v1] = false
	// The hook's own failure refuses the delete, it does not allow it.
	hookErr = errors.New("store down")
	if err := del(v1); err == nil || !strings.Contains(err.Error(), "store down") {
		t.Fatalf("delete while the hook fails: %v", err)
	}
	hookErr = nil
	for _, bad := range []struct{ arn, code string }{{sm, "InvalidArn"}, {sm + ":live", "InvalidArn"}, {"nope", "InvalidArn"}} {
		if err := del(bad.arn); apiCode(err) != bad.code {
			t.Errorf("delete %s: %v, want %s", bad.arn, err, bad.code)
		}
	}
	// Free: deleted, then gone everywhere; deleting again succeeds.
	if err := del(v1); err != nil {
		t.Fatalf("delete of a free version: %v", err)
	}
	if err := del(v1); err != nil {
		t.Fatalf("delete again: %v", err)
	}
	if _, err := h.client.DescribeStateMachine(ctx, &sfn.DescribeStateMachineInput{StateMachineArn: aws.String(v1)}); apiCode(err) != "StateMachineDoesNotExist" {
		t.Fatalf("describe a deleted version: %v", err)
	}
	if _, err := h.client.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String(v1), Name: aws.String("late")}); apiCode(err) != "StateMachineDoesNotExist" {
		t.Fatalf("start on a deleted version: %v", err)
	}
	list, err := h.client.ListStateMachineVersions(ctx, &sfn.ListStateMachineVersionsInput{StateMachineArn: aws.String(sm)})
	if err != nil || len(list.StateMachineVersions) != 0 {
		t.Fatalf("versions after delete %+v %v", list, err)
	}
	// Numbers are not reused.
	if v := h.publish("A again"); v != sm+":2" {
		t.Fatalf("published %s after deleting 1, want :2", v)
	}
}

func newHarnessNoOpen(t *testing.T, def string) *harness {
	return &harness{t: t, path: t.TempDir() + "/state.db", def: def, clock: NewFakeClock(t0)}
}

func TestStateMachineAliases(t *testing.T) {
	h := newHarness(t, defA, nil)
	ctx := context.Background()
	sm := h.eng.StateMachineArn()
	v1 := h.publish("A")
	h.def = defB
	h.restart()
	v2 := h.publish("B")
	live := sm + ":live"

	createCases := []struct {
		name string
		in   sfn.CreateStateMachineAliasInput
		code string
	}{
		{"name of digits only", sfn.CreateStateMachineAliasInput{Name: aws.String("12"), RoutingConfiguration: routing(v1, 100)}, "ValidationException"},
		{"name with a colon", sfn.CreateStateMachineAliasInput{Name: aws.String("a:b"), RoutingConfiguration: routing(v1, 100)}, "ValidationException"},
		{"weights not 100", sfn.CreateStateMachineAliasInput{Name: aws.String("live"), RoutingConfiguration: routing(v1, 50, v2, 40)}, "ValidationException"},
		{"three versions", sfn.CreateStateMachineAliasInput{Name: aws.String("live"), RoutingConfiguration: routing(v1, 50, v2, 50, v1, 0)}, "ValidationException"},
		{"a version twice", sfn.CreateStateMachineAliasInput{Name: aws.String("live"), RoutingConfiguration: routing(v1, 50, v1, 50)}, "ValidationException"},
		{"the machine, not a version", sfn.CreateStateMachineAliasInput{Name: aws.String("live"), RoutingConfiguration: routing(sm, 100)}, "ValidationException"},
		{"a version that does not exist", sfn.CreateStateMachineAliasInput{Name: aws.String("live"), RoutingConfiguration: routing(sm+":9", 100)}, "ResourceNotFound"},
		{"created", sfn.CreateStateMachineAliasInput{Name: aws.String("live"), Description: aws.String("d"), RoutingConfiguration: routing(v1, 100)}, ""},
		{"the same again", sfn.CreateStateMachineAliasInput{Name: aws.String("live"), Description: aws.String("d"), RoutingConfiguration: routing(v1, 100)}, ""},
		{"the name with another routing", sfn.CreateStateMachineAliasInput{Name: aws.String("live"), RoutingConfiguration: routing(v2, 100)}, "ConflictException"},
	}
	for _, c := range createCases {
		t.Run("create "+c.name, func(t *testing.T) {
			out, err := h.client.CreateStateMachineAlias(ctx, &c.in)
			if apiCode(err) != c.code || c.code == "" && (err != nil || aws.ToString(out.StateMachineAliasArn) != live) {
				t.Fatalf("err = %v, want %q", err, c.code)
			}
		})
	}
	d, err := h.client.DescribeStateMachineAlias(ctx, &sfn.DescribeStateMachineAliasInput{StateMachineAliasArn: aws.String(live)})
	if err != nil || aws.ToString(d.Name) != "live" || aws.ToString(d.Description) != "d" || len(d.RoutingConfiguration) != 1 ||
		aws.ToString(d.RoutingConfiguration[0].StateMachineVersionArn) != v1 || d.RoutingConfiguration[0].Weight != 100 {
		t.Fatalf("described %+v %v", d, err)
	}
	h.startOn(live, "before-split")
	if got := aws.ToString(h.describe("before-split").StateMachineVersionArn); got != v1 {
		t.Fatalf("routed to %s, want %s", got, v1)
	}
	// Split 40/60: the harness's random number is 0.5, so the second.
	if _, err := h.client.UpdateStateMachineAlias(ctx, &sfn.UpdateStateMachineAliasInput{StateMachineAliasArn: aws.String(live), RoutingConfiguration: routing(v1, 40, v2, 60)}); err != nil {
		t.Fatal(err)
	}
	h.startOn(live, "split")
	if got := aws.ToString(h.describe("split").StateMachineVersionArn); got != v2 {
		t.Fatalf("split routed to %s, want %s", got, v2)
	}
	h.clock.Advance(time.Minute) // let "split" end
	for _, c := range []struct {
		arn  string
		want int
		code string
	}{{sm, 1, ""}, {v1, 1, ""}, {v2, 1, ""}, {sm + ":7", 0, "ResourceNotFound"}, {live, 0, "InvalidArn"}} {
		out, err := h.client.ListStateMachineAliases(ctx, &sfn.ListStateMachineAliasesInput{StateMachineArn: aws.String(c.arn)})
		if apiCode(err) != c.code || c.code == "" && (err != nil || len(out.StateMachineAliases) != c.want) {
			t.Errorf("ListStateMachineAliases %s: %+v %v", c.arn, out, err)
		}
	}
	updateCases := []struct {
		name string
		in   sfn.UpdateStateMachineAliasInput
		code string
	}{
		{"nothing to update", sfn.UpdateStateMachineAliasInput{StateMachineAliasArn: aws.String(live)}, "ValidationException"},
		{"a version ARN", sfn.UpdateStateMachineAliasInput{StateMachineAliasArn: aws.String(v1), Description: aws.String("x")}, "InvalidArn"},
		{"an alias that does not exist", sfn.UpdateStateMachineAliasInput{StateMachineAliasArn: aws.String(sm + ":canary"), Description: aws.String("x")}, "ResourceNotFound"},
		{"the description only", sfn.UpdateStateMachineAliasInput{StateMachineAliasArn: aws.String(live), Description: aws.String("new")}, ""},
	}
	for _, c := range updateCases {
		t.Run("update "+c.name, func(t *testing.T) {
			if _, err := h.client.UpdateStateMachineAlias(ctx, &c.in); apiCode(err) != c.code || c.code == "" && err != nil {
				t.Fatalf("err = %v, want %q", err, c.code)
			}
		})
	}
	if d, _ := h.client.DescribeStateMachineAlias(ctx, &sfn.DescribeStateMachineAliasInput{StateMachineAliasArn: aws.String(live)}); aws.ToString(d.Description) != "new" || len(d.RoutingConfiguration) != 2 {
		t.Fatalf("after a description update %+v", d)
	}
	if _, err := h.client.DeleteStateMachineAlias(ctx, &sfn.DeleteStateMachineAliasInput{StateMachineAliasArn: aws.String(live)}); err != nil {
		t.Fatal(err)
	}
	for _, call := range []func() error{
		func() error {
			_, err := h.client.DescribeStateMachineAlias(ctx, &sfn.DescribeStateMachineAliasInput{StateMachineAliasArn: aws.String(live)})
			return err
		},
		func() error {
			_, err := h.client.DeleteStateMachineAlias(ctx, &sfn.DeleteStateMachineAliasInput{StateMachineAliasArn: aws.String(live)})
			return err
		},
	} {
		if err := call(); apiCode(err) != "ResourceNotFound" {
			t.Errorf("deleted alias: %v", err)
		}
	}
	if _, err := h.client.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String(live)}); apiCode(err) != "StateMachineDoesNotExist" {
		t.Fatalf("start on a deleted alias: %v", err)
	}
	// A deleted alias can be created again.
	if _, err := h.client.CreateStateMachineAlias(ctx, &sfn.CreateStateMachineAliasInput{Name: aws.String("live"), RoutingConfiguration: routing(v2, 100)}); err != nil {
		t.Fatalf("create again: %v", err)
	}
}

// A definition that names a function the engine no longer has fails that
// Task as Lambda does for a function that does not exist; it never runs
// another definition instead.
func TestOldDefinitionWithAMissingFunction(t *testing.T) {
	old := `{"StartAt": "W", "States": {"W": {"Type": "Wait", "Seconds": 60, "Next": "T"}, "T": {"Type": "Task", "Resource": "` + arn("gone") + `", "End": true}}}`
	h := newHarness(t, old, map[string]LambdaFunc{"gone": echo()})
	v1 := h.publish("old")
	h.startOn(v1, "x")
	h.def, h.fns = defB, nil
	h.restart()
	h.waitTimer()
	h.clock.Advance(time.Minute)
	d := h.waitStatus("x", types.ExecutionStatusFailed)
	if aws.ToString(d.Error) != "Lambda.ResourceNotFoundException" || !strings.Contains(aws.ToString(d.Cause), "gone") {
		t.Fatalf("error %s cause %s", aws.ToString(d.Error), aws.ToString(d.Cause))
	}
}

// Starts on a version racing its deletion: either the delete wins and no
// execution runs on the version, or a start wins and the delete is refused.
// Never both (the start's read of the version and its listing as running
// happen under the lock deleteVersion takes).
func TestDeleteVersionRacingStarts(t *testing.T) {
	h := newHarness(t, defA, nil)
	ctx := context.Background()
	for round := range 20 {
		v := h.publish("round")
		// Each round publishes a new version: a new definition each time.
		h.def = strings.Replace(defA, `"ran A"`, `"ran `+strconv.Itoa(round)+`"`, 1)
		h.restart()
		var wg sync.WaitGroup
		var deleted atomic.Bool
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _ = h.client.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String(v), Name: aws.String(fmt.Sprintf("r%d-%d", round, i))})
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := h.client.DeleteStateMachineVersion(ctx, &sfn.DeleteStateMachineVersionInput{StateMachineVersionArn: aws.String(v)})
			deleted.Store(err == nil)
		}()
		wg.Wait()
		out, err := h.client.ListExecutions(ctx, &sfn.ListExecutionsInput{StateMachineArn: aws.String(v), StatusFilter: types.ExecutionStatusRunning})
		if err != nil {
			t.Fatal(err)
		}
		if deleted.Load() && len(out.Executions) > 0 {
			t.Fatalf("round %d: version %s deleted with %d executions running on it", round, v, len(out.Executions))
		}
	}
}
