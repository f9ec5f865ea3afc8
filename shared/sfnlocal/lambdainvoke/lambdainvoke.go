package lambdainvoke

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aws/aws-lambda-go/lambda/messages"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/smithy-go"

	"github.com/openprogram/lifecycle/shared/sfnlocal"
)

// API is the part of *lambda.Client the invoker uses.
type API interface {
	Invoke(ctx context.Context, in *lambda.InvokeInput, optFns ...func(*lambda.Options)) (*lambda.InvokeOutput, error)
}

var _ API = (*lambda.Client)(nil)

// Func is the sfnlocal function that invokes functionName (a name or an
// ARN, as the definition names it) through client.
func Func(client API, functionName string) sfnlocal.LambdaFunc {
	return func(ctx context.Context, payload []byte) ([]byte, error) {
		out, err := client.Invoke(ctx, &lambda.InvokeInput{
			FunctionName:   aws.String(functionName),
			InvocationType: types.InvocationTypeRequestResponse,
			Payload:        payload,
		})
		if err != nil {
			return nil, invokeError(err)
		}
		if out.FunctionError != nil {
			return nil, functionError(out.Payload)
		}
		return out.Payload, nil
	}
}

// Functions maps each ARN to Func(client, arn): Config.Functions of an
// engine whose every Task goes through the Invoke API.
func Functions(client API, arns ...string) map[string]sfnlocal.LambdaFunc {
	m := make(map[string]sfnlocal.LambdaFunc, len(arns))
	for _, arn := range arns {
		m[arn] = Func(client, arn)
	}
	return m
}

// functionError is the error of an invocation whose function failed: its
// payload is the runtime's {"errorMessage", "errorType"}.
func functionError(payload []byte) error {
	var e struct {
		Message string `json:"errorMessage"`
		Type    string `json:"errorType"`
	}
	if err := json.Unmarshal(payload, &e); err != nil || e.Type == "" {
		// Step Functions' name for a failure Lambda gives no type for.
		msg := e.Message
		if msg == "" {
			msg = fmt.Sprintf("the function failed without an error type; returned payload: %s", payload)
		}
		return messages.InvokeResponse_Error{Type: "Lambda.Unknown", Message: msg}
	}
	return messages.InvokeResponse_Error{Type: e.Type, Message: e.Message}
}

// invokeError names an error of the Invoke call itself as Step Functions
// names it for a Lambda task.
func invokeError(err error) error {
	var ae smithy.APIError
	if errors.As(err, &ae) && ae.ErrorCode() != "" {
		return messages.InvokeResponse_Error{Type: "Lambda." + ae.ErrorCode(), Message: ae.ErrorMessage()}
	}
	return messages.InvokeResponse_Error{Type: "Lambda.SdkClientException", Message: err.Error()}
}
