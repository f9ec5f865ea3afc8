// Package lambdainvoke runs the embedded Step Functions engine's Task
// resources through the Lambda Invoke API instead of in process: each
// function ARN of the definition becomes an sfnlocal.LambdaFunc that calls
// Invoke (RequestResponse) with the aws-sdk-go-v2 lambda client, and the
// answer is turned into what Step Functions reports for a Lambda task:
//
//   - a response with FunctionError set is a function error named by the
//     payload's errorType (aws-lambda-go's Go type name, "Runtime.ExitError"
//     for a runtime that died), or "Lambda.Unknown" when the payload names
//     none (a timeout), with the payload's errorMessage;
//   - an error returned by the Lambda API itself is "Lambda.<code>"
//     (Lambda.ServiceException, Lambda.TooManyRequestsException,
//     Lambda.ResourceNotFoundException, ...), and an invocation that got no
//     answer at all (connection refused or reset) is
//     "Lambda.SdkClientException", the names the ASL retries on.
//
// It is what the AWS-mode end-to-end test (tests/awsmode) runs the engine
// with, against the Lambda Runtime Interface Emulator: the deployed
// bootstrap binaries behind the Invoke API. It is an adapter: the engine
// itself (package sfnlocal) imports no AWS SDK.
//
// The client should not retry on its own (RetryMaxAttempts 1): Step
// Functions' retries are the ones the definition declares, and a client
// retry would re-invoke a function the definition does not retry.
package lambdainvoke
