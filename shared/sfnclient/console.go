package sfnclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/machineview"
)

var _ machineview.Reader = (*Client)(nil)

// maxHistoryEvents bounds one read of a history (25 000 is Step Functions'
// own limit on a Standard execution's history).
const maxHistoryEvents = 25000

// ReadExecution reads an action's execution as a console does:
// DescribeExecution, DescribeStateMachineForExecution (the definition the
// execution runs) and every page of GetExecutionHistory.
func (c *Client) ReadExecution(ctx context.Context, a ids.ActionID) (machineview.Execution, error) {
	arn := aws.String(c.ExecutionARN(a))
	d, err := c.SFN.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: arn})
	var nf *types.ExecutionDoesNotExist
	if errors.As(err, &nf) {
		return machineview.Execution{}, fmt.Errorf("describe execution %s: %w", a, machineview.ErrNoExecution)
	}
	if err != nil {
		return machineview.Execution{}, fmt.Errorf("describe execution %s: %w", a, err)
	}
	x := machineview.Execution{ExecutionARN: aws.ToString(d.ExecutionArn), StateMachineARN: aws.ToString(d.StateMachineArn),
		Status: string(d.Status), StopDate: d.StopDate, Error: aws.ToString(d.Error), Cause: aws.ToString(d.Cause)}
	if d.StartDate != nil {
		x.StartDate = *d.StartDate
	}
	sm, err := c.SFN.DescribeStateMachineForExecution(ctx, &sfn.DescribeStateMachineForExecutionInput{ExecutionArn: arn})
	if err != nil {
		return machineview.Execution{}, fmt.Errorf("describe the state machine of execution %s: %w", a, err)
	}
	x.Definition = json.RawMessage(aws.ToString(sm.Definition))
	p := sfn.NewGetExecutionHistoryPaginator(c.SFN, &sfn.GetExecutionHistoryInput{ExecutionArn: arn, MaxResults: 1000})
	for p.HasMorePages() && len(x.Events) < maxHistoryEvents {
		page, err := p.NextPage(ctx)
		if err != nil {
			return machineview.Execution{}, fmt.Errorf("read the history of execution %s: %w", a, err)
		}
		for _, ev := range page.Events {
			x.Events = append(x.Events, historyEvent(ev))
		}
	}
	return x, nil
}

// eventDetails is what historyEvent reads of any "...EventDetails" object
// (their fields share these names across the event types).
type eventDetails struct {
	Name          string
	Input         *string
	InputDetails  *struct{ Truncated bool }
	Output        *string
	OutputDetails *struct{ Truncated bool }
	Parameters    *string
	Error         string
	Cause         string
	Resource      string
	ResourceType  string
}

// historyEvent converts an SDK history event. The SDK has one details field
// per event type (more than sixty); they are read by their shared field
// names rather than listed, so a new event type needs no code here.
func historyEvent(ev types.HistoryEvent) machineview.Event {
	out := machineview.Event{ID: ev.Id, PreviousID: ev.PreviousEventId, Type: string(ev.Type)}
	if ev.Timestamp != nil {
		out.Timestamp = *ev.Timestamp
	}
	v := reflect.ValueOf(ev)
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		if !strings.HasSuffix(v.Type().Field(i).Name, "EventDetails") || f.Kind() != reflect.Pointer || f.IsNil() {
			continue
		}
		b, err := json.Marshal(f.Interface())
		if err != nil {
			continue
		}
		var d eventDetails
		if json.Unmarshal(b, &d) != nil {
			continue
		}
		out.State, out.Error, out.Cause, out.Resource, out.ResourceType = d.Name, d.Error, d.Cause, d.Resource, d.ResourceType
		out.Input, out.Output = d.Input, d.Output
		if d.Input == nil && d.Parameters != nil {
			// A task's input is its Parameters.
			out.Input = d.Parameters
		}
		out.InputTruncated = d.InputDetails != nil && d.InputDetails.Truncated
		out.OutputTruncated = d.OutputDetails != nil && d.OutputDetails.Truncated
		break
	}
	return out
}
