package embedded_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/openprogram/lifecycle/shared/store/metered"
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

// TestTableWritesPerPath pins what an action writes to the lifecycle
// table, in DynamoDB write units (transaction parts double; the embedded
// engine's own records left out, as on AWS they are Step Functions'
// state), on each path: issue 16 set at most 20 for the allow path. Counts,
// not timings: actions run one at a time, so no lost race adds a retry.
// The figures with their breakdown by record come from make bench.
func TestTableWritesPerPath(t *testing.T) {
	bs := startBench(t, t.TempDir())
	tests := []struct {
		name, tool string
		max        float64
	}{
		// Submit (key claim, action, action.submitted: 6), Authorize
		// (decision, action.decided: 4), the attempt lease, start evidence,
		// the dispatch result and the receipt (1 each), RecordOutcome (saved
		// point, projected action, action.projected: 6).
		{name: "allow", tool: "noop", max: 20},
		{name: "deny", tool: "noop_deny", max: 18},
		{name: "ask, approved", tool: "noop_ask", max: 40},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			bs.run(t, tc.tool, 64, 8) // warm up: the first action of each of the benchmark's 64 executions writes the execution too
			k0 := bs.meter.ByKind()
			const n = 10
			bs.run(t, tc.tool, n, 1)
			var wcu float64
			for _, k := range metered.SubKinds(bs.meter.ByKind(), k0) {
				if !engineKind(k.Kind) {
					wcu += k.WCU
				}
			}
			if got := wcu / n; got > tc.max {
				t.Errorf("%.2f table WCU per action, want at most %.0f:\n%s", got, tc.max, kindTable(metered.SubKinds(bs.meter.ByKind(), k0), n))
			} else {
				t.Logf("%.2f table WCU per action (at most %.0f)", got, tc.max)
			}
		})
	}
}
