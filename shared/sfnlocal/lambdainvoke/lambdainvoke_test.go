package lambdainvoke_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/lambda/messages"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/openprogram/lifecycle/shared/sfnlocal/lambdainvoke"
)

// A fake Lambda service answering the way the Invoke API does; the real
// client talks to it. Each case checks the name Step Functions would give.
func TestFuncNamesWhatStepFunctionsNames(t *testing.T) {
	cases := []struct {
		name      string
		serve     func(w http.ResponseWriter)
		wantOut   string
		wantType  string
		wantInMsg string
	}{
		{"success", func(w http.ResponseWriter) { w.Write([]byte(`{"ok":true}`)) }, `{"ok":true}`, "", ""},
		{"function error", func(w http.ResponseWriter) {
			w.Header().Set("X-Amz-Function-Error", "Unhandled")
			w.Write([]byte(`{"errorMessage":"store busy","errorType":"TransientError"}`))
		}, "", "TransientError", "store busy"},
		{"runtime died", func(w http.ResponseWriter) {
			w.Header().Set("X-Amz-Function-Error", "Unhandled")
			w.Write([]byte(`{"errorMessage":"Runtime exited with error: signal: killed","errorType":"Runtime.ExitError"}`))
		}, "", "Runtime.ExitError", "signal: killed"},
		{"function error without a type", func(w http.ResponseWriter) {
			w.Header().Set("X-Amz-Function-Error", "Unhandled")
			w.Write([]byte(`{"errorMessage":"Task timed out after 3.00 seconds"}`))
		}, "", "Lambda.Unknown", "timed out"},
		{"service throttled", func(w http.ResponseWriter) {
			w.Header().Set("X-Amzn-ErrorType", "TooManyRequestsException")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			w.Write([]byte(`{"message":"Rate exceeded"}`))
		}, "", "Lambda.TooManyRequestsException", "Rate exceeded"},
		{"no answer", func(w http.ResponseWriter) {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
		}, "", "Lambda.SdkClientException", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var path string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				path = r.URL.EscapedPath()
				tc.serve(w)
			}))
			defer srv.Close()
			client := lambda.New(lambda.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), RetryMaxAttempts: 1,
				Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
			arn := "arn:aws:lambda:us-east-1:123456789012:function:authorize"
			fn := lambdainvoke.Functions(client, arn)[arn]
			out, err := fn(context.Background(), []byte(`{"action_id":"a"}`))
			if !strings.Contains(path, "function%3Aauthorize/invocations") {
				t.Errorf("invoked %s, want the function's ARN in the path", path)
			}
			if tc.wantType == "" {
				if err != nil || string(out) != tc.wantOut {
					t.Fatalf("got %q, %v; want %q", out, err, tc.wantOut)
				}
				return
			}
			var ie messages.InvokeResponse_Error
			if !errors.As(err, &ie) {
				t.Fatalf("error %v (%T) is not a Lambda error payload", err, err)
			}
			if ie.Type != tc.wantType || !strings.Contains(ie.Message, tc.wantInMsg) {
				t.Fatalf("error %s %q, want %s containing %q", ie.Type, ie.Message, tc.wantType, tc.wantInMsg)
			}
		})
	}
}
