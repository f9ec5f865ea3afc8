package embedded_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sfn/types"
)

// TestStateTransitionsPerPath runs each path of the ASL file to its end
// and counts the states it entered: Step Functions Standard bills each one,
// so a state added to the allow path is a cost to notice (issue 16 set at
// most 6). Each execution must succeed: a Choice rule reading a path its
// input lacks fails the execution with States.Runtime, which the recovery
// sweeper would then quietly cover.
func TestStateTransitionsPerPath(t *testing.T) {
	bs := startBench(t, t.TempDir())
	tests := []struct {
		name, tool string
		want       int
	}{
		// Authorize, PermissionChoice, DispatchSync, RecordOutcome (which
		// projects).
		{name: "allow", tool: "noop", want: 4},
		// Authorize, PermissionChoice, RecordOutcome.
		{name: "deny", tool: "noop_deny", want: 3},
		// Authorize, PermissionChoice, AwaitApproval, Revalidate,
		// RevalidatedChoice, DispatchSync, RecordOutcome.
		{name: "ask, approved", tool: "noop_ask", want: 7},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, id := bs.run(t, tc.tool, 1, 1)
			// The action is projected by the last Task; the execution
			// closes right after it.
			var out *sfn.DescribeExecutionOutput
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				var err error
				out, err = bs.SFN.DescribeExecution(context.Background(), &sfn.DescribeExecutionInput{ExecutionArn: aws.String(bs.SFNClient.ExecutionARN(id))})
				if err != nil {
					t.Fatal(err)
				}
				if out.Status != types.ExecutionStatusRunning || time.Now().After(deadline) {
					break
				}
			}
			if out.Status != types.ExecutionStatusSucceeded {
				t.Fatalf("execution %s: %s (%s: %s)", id, out.Status, aws.ToString(out.Error), aws.ToString(out.Cause))
			}
			if got := bs.transitionsOf(t, id); got != tc.want {
				t.Errorf("%d state transitions, want %d", got, tc.want)
			}
		})
	}
}
