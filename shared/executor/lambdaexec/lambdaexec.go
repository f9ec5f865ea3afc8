package lambdaexec

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/lifecycle"
)

// Executor invokes the function configured for each tool.
type Executor struct {
	Client *lambda.Client
	// Functions maps tool name to function ARN.
	Functions map[string]string
}

var _ actionflow.Executor = (*Executor)(nil)

type response struct {
	OK        bool   `json:"ok"`
	Output    string `json:"output"`
	ErrorCode string `json:"error_code"`
	Error     string `json:"error"`
}

func (e *Executor) Execute(ctx context.Context, t actionflow.Task) (actionflow.ToolResult, error) {
	fn, ok := e.Functions[t.Tool]
	if !ok {
		return actionflow.ToolResult{Outcome: lifecycle.OutcomeFailed, ErrorCode: "no_function",
			Error: "no tool function is configured for " + t.Tool}, nil
	}
	payload, err := json.Marshal(map[string]any{
		"action_id": t.ActionID, "execution_id": t.ExecutionID, "session_id": t.SessionID, "tool_call_id": t.ToolCallID,
		"tool": t.Tool, "arguments": json.RawMessage(t.Arguments), "args_digest": t.ArgsDigest, "idempotency_key": t.IdempotencyKey,
	})
	if err != nil {
		return actionflow.ToolResult{}, fmt.Errorf("encode payload: %w", err)
	}
	out, err := e.Client.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String(fn), Payload: payload})
	if err != nil {
		return actionflow.ToolResult{}, fmt.Errorf("invoke %s: %w", fn, err)
	}
	if out.FunctionError != nil {
		return actionflow.ToolResult{Outcome: lifecycle.OutcomeFailed, ErrorCode: "function_error",
			Error: aws.ToString(out.FunctionError), Output: string(out.Payload)}, nil
	}
	var r response
	if err := json.Unmarshal(out.Payload, &r); err != nil {
		return actionflow.ToolResult{Outcome: lifecycle.OutcomeFailed, ErrorCode: "bad_tool_response", Error: err.Error(), Output: string(out.Payload)}, nil
	}
	if !r.OK {
		return actionflow.ToolResult{Outcome: lifecycle.OutcomeFailed, ErrorCode: r.ErrorCode, Error: r.Error, Output: r.Output}, nil
	}
	return actionflow.ToolResult{Outcome: lifecycle.OutcomeSucceeded, Output: r.Output}, nil
}
