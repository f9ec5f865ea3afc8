package sfnclient

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/ids"
)

// Client starts executions of one state machine and completes task tokens.
type Client struct {
	SFN             *sfn.Client
	StateMachineARN string
}

var (
	_ actionflow.Starter         = (*Client)(nil)
	_ actionflow.TaskCompleter   = (*Client)(nil)
	_ actionflow.TaskHeartbeater = (*Client)(nil)
)

// StartAction starts the execution named after the action. Standard
// workflows make a repeated start with the same name and input idempotent;
// a closed execution of that name means the action already ran, which is
// also success here.
func (c *Client) StartAction(ctx context.Context, a ids.ActionID, input []byte) error {
	_, err := c.SFN.StartExecution(ctx, &sfn.StartExecutionInput{
		StateMachineArn: aws.String(c.StateMachineARN),
		Name:            aws.String(string(a)),
		Input:           aws.String(string(input)),
	})
	var exists *types.ExecutionAlreadyExists
	if errors.As(err, &exists) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("start execution %s: %w", a, err)
	}
	return nil
}

// StartActionOn is StartAction on a version or an alias of the state
// machine (its ARN: "<StateMachineARN>:<version>" or ":<alias>"): the
// execution runs the definition of that version, or of the version the
// alias routes to, and is still named after the action (its ARN does not
// change). The same idempotency as StartAction.
func (c *Client) StartActionOn(ctx context.Context, a ids.ActionID, target string, input []byte) error {
	qualifier, ok := strings.CutPrefix(target, c.StateMachineARN+":")
	if !ok || qualifier == "" || strings.Contains(qualifier, ":") {
		return fmt.Errorf("start execution %s: %q is not a version or alias ARN of %s", a, target, c.StateMachineARN)
	}
	_, err := c.SFN.StartExecution(ctx, &sfn.StartExecutionInput{
		StateMachineArn: aws.String(target),
		Name:            aws.String(string(a)),
		Input:           aws.String(string(input)),
	})
	var exists *types.ExecutionAlreadyExists
	if errors.As(err, &exists) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("start execution %s on %s: %w", a, target, err)
	}
	return nil
}

// goneError maps an ended wait to actionflow.ErrTaskGone, and a timed-out
// one also to actionflow.ErrTaskTimedOut.
func goneError(op string, err error) error {
	var timedOut *types.TaskTimedOut
	if errors.As(err, &timedOut) {
		return fmt.Errorf("%s: %w: %w (%v)", op, actionflow.ErrTaskGone, actionflow.ErrTaskTimedOut, err)
	}
	return fmt.Errorf("%s: %w (%v)", op, actionflow.ErrTaskGone, err)
}

func gone(err error) bool {
	var timedOut *types.TaskTimedOut
	var notExist *types.TaskDoesNotExist
	var invalid *types.InvalidToken
	return errors.As(err, &timedOut) || errors.As(err, &notExist) || errors.As(err, &invalid)
}

func (c *Client) SendTaskSuccess(ctx context.Context, token string, output []byte) error {
	_, err := c.SFN.SendTaskSuccess(ctx, &sfn.SendTaskSuccessInput{TaskToken: aws.String(token), Output: aws.String(string(output))})
	if gone(err) {
		return goneError("send task success", err)
	}
	if err != nil {
		return fmt.Errorf("send task success: %w", err)
	}
	return nil
}

func (c *Client) SendTaskFailure(ctx context.Context, token, errorName, cause string) error {
	_, err := c.SFN.SendTaskFailure(ctx, &sfn.SendTaskFailureInput{TaskToken: aws.String(token), Error: aws.String(errorName), Cause: aws.String(cause)})
	if gone(err) {
		return goneError("send task failure", err)
	}
	if err != nil {
		return fmt.Errorf("send task failure: %w", err)
	}
	return nil
}

// SendTaskHeartbeat resets the heartbeat clock of a waiting task (the
// host worker's liveness while a host tool runs). An ended wait is
// actionflow.ErrTaskGone (and ErrTaskTimedOut when it timed out).
func (c *Client) SendTaskHeartbeat(ctx context.Context, token string) error {
	_, err := c.SFN.SendTaskHeartbeat(ctx, &sfn.SendTaskHeartbeatInput{TaskToken: aws.String(token)})
	if gone(err) {
		return goneError("send task heartbeat", err)
	}
	if err != nil {
		return fmt.Errorf("send task heartbeat: %w", err)
	}
	return nil
}

// ExecutionARN is the ARN of an action's execution.
func (c *Client) ExecutionARN(a ids.ActionID) string {
	return ExecutionARN(c.StateMachineARN, string(a))
}

// ExecutionARN derives an execution ARN from its state machine ARN and name.
func ExecutionARN(stateMachineARN, name string) string {
	const marker = ":stateMachine:"
	for i := 0; i+len(marker) <= len(stateMachineARN); i++ {
		if stateMachineARN[i:i+len(marker)] == marker {
			return stateMachineARN[:i] + ":execution:" + stateMachineARN[i+len(marker):] + ":" + name
		}
	}
	return stateMachineARN + ":" + name
}

// Describe returns an execution's status ("" and nil error when it does not exist).
func (c *Client) Describe(ctx context.Context, a ids.ActionID) (types.ExecutionStatus, error) {
	out, err := c.SFN.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(c.ExecutionARN(a))})
	var nf *types.ExecutionDoesNotExist
	if errors.As(err, &nf) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("describe execution %s: %w", a, err)
	}
	return out.Status, nil
}

// Stop stops an action's execution (cancellation).
func (c *Client) Stop(ctx context.Context, a ids.ActionID, cause string) error {
	_, err := c.SFN.StopExecution(ctx, &sfn.StopExecutionInput{ExecutionArn: aws.String(c.ExecutionARN(a)), Error: aws.String("ExecutionCancelled"), Cause: aws.String(cause)})
	var nf *types.ExecutionDoesNotExist
	if errors.As(err, &nf) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("stop execution %s: %w", a, err)
	}
	return nil
}

// Status returns an action's execution status as Step Functions names it
// ("RUNNING", "SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED",
// "PENDING_REDRIVE"), or "" when no execution of that name exists. It is
// the recovery sweeper's port (recovery.Machines).
func (c *Client) Status(ctx context.Context, a ids.ActionID) (string, error) {
	st, err := c.Describe(ctx, a)
	return string(st), err
}
