package sfnlocal

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambda/messages"

	"github.com/openprogram/lifecycle/shared/asl"
)

// LambdaFunc is an in-process Lambda function: JSON payload in, JSON
// response out. Build it from a Go handler with Handler, so the function
// runs exactly the code (and reports exactly the errors) it runs in AWS.
//
// Functions are invoked at least once per attempt, like Lambda: a Task whose
// result was not yet recorded when the process stopped is invoked again
// after a restart, with the same input (and, for .waitForTaskToken, the same
// token). Handlers must therefore be idempotent.
type LambdaFunc func(ctx context.Context, payload []byte) ([]byte, error)

// Handler adapts a Go Lambda handler (any function signature aws-lambda-go
// accepts) into a LambdaFunc that runs exactly the code lambda.Start would
// run in AWS: same JSON decoding, same response encoding, same errors.
//
// Use it rather than passing lambda.NewHandler(h).Invoke directly: one
// aws-lambda-go handler reuses a pooled response buffer, returning it to
// its pool before Invoke returns, so two invocations running at the same
// time on one handler can overwrite each other's response (measured here:
// about 1 response in 16,000 corrupted with 8 concurrent callers). In AWS
// a runtime process never runs two invocations at once; in this process
// it does. Handler keeps a pool of handler instances, one per concurrent
// call, and copies the response before the instance is reused.
func Handler(handler any, opts ...lambda.Option) LambdaFunc {
	pool := sync.Pool{New: func() any { return lambda.NewHandlerWithOptions(handler, opts...) }}
	return func(ctx context.Context, payload []byte) ([]byte, error) {
		h := pool.Get().(lambda.Handler)
		out, err := h.Invoke(ctx, payload)
		out = append([]byte(nil), out...)
		pool.Put(h)
		return out, err
	}
}

// invocation is the result of calling a function.
type invocation struct {
	output   []byte
	errName  string // empty on success
	cause    string
	timedOut bool
	// abandoned: the engine is closing hard and cancelled the call; the
	// result means nothing and is not recorded.
	abandoned bool
}

// callFunction invokes fn with the payload, bounded by timeout (0: none) on
// the engine's clock. A function still running at the timeout is cancelled
// and left to return on its own; its result is ignored.
func (e *Engine) callFunction(fn LambdaFunc, payload []byte, timeout time.Duration) invocation {
	ctx, cancel := context.WithCancel(e.baseCtx)
	defer cancel()

	select {
	case e.slots <- struct{}{}:
	case <-ctx.Done():
		return invocation{abandoned: true}
	}
	done := make(chan invocation, 1)
	if !e.track() {
		<-e.slots
		return invocation{abandoned: true}
	}
	go func() {
		defer e.untrack()
		defer func() { <-e.slots }()
		done <- runFunction(ctx, fn, payload)
	}()

	var expired <-chan struct{}
	if timeout > 0 {
		ch := make(chan struct{})
		stop := e.clock.AfterFunc(timeout, func() { close(ch) })
		defer stop()
		expired = ch
	}
	select {
	case r := <-done:
		if e.baseCtx.Err() != nil {
			return invocation{abandoned: true}
		}
		return r
	case <-expired:
		return invocation{timedOut: true, errName: "States.Timeout", cause: fmt.Sprintf("the function did not return within %s", timeout)}
	case <-e.baseCtx.Done():
		return invocation{abandoned: true}
	}
}

// runFunction calls fn and turns its error or panic into the error name and
// cause Step Functions reports for a Lambda function error.
func runFunction(ctx context.Context, fn LambdaFunc, payload []byte) (res invocation) {
	defer func() {
		if p := recover(); p != nil {
			// aws-lambda-go reports a panic with the panic value's type name
			// and fmt's rendering of the value.
			res = failure(lambdaErrorType(p), fmt.Sprintf("%v", p))
		}
	}()
	out, err := fn(ctx, payload)
	if err != nil {
		if ive, ok := err.(messages.InvokeResponse_Error); ok {
			return failure(ive.Type, ive.Message)
		}
		return failure(lambdaErrorType(err), err.Error())
	}
	// aws-lambda-go may hand back a pooled buffer; keep our own copy.
	return invocation{output: append([]byte(nil), out...)}
}

// lambdaErrorType is aws-lambda-go's error type naming (lambda/errors.go):
// the Go type name with a pointer stripped, so a *TransientError is
// "TransientError" and an fmt.Errorf wrapper is "wrapError". That name is
// what ErrorEquals matches, in AWS and here.
func lambdaErrorType(v any) string {
	t := reflect.TypeOf(v)
	if t.Kind() == reflect.Ptr {
		return t.Elem().Name()
	}
	return t.Name()
}

// failure builds the error of a failed invocation; the cause is the error
// payload the Lambda runtime returns, as Step Functions shows it.
func failure(errType, message string) invocation {
	cause, _ := asl.EncodeJSON(messages.InvokeResponse_Error{Message: message, Type: errType})
	return invocation{errName: errType, cause: string(cause)}
}
