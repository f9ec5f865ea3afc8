// Command toolfn is the tool Lambda of the AWS-mode test (tests/awsmode):
// a function the lambda executor invokes as the tool named by its ARN. It
// records every invocation as a file in $TOOLFN_DIR (so the test counts how
// often a tool call ran), can block until the test releases it (to crash
// the dispatch function while the tool runs) and can return a large output
// (to send the result through S3).
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
)

type payload struct {
	ActionID       string `json:"action_id"`
	IdempotencyKey string `json:"idempotency_key"`
	Arguments      struct {
		// Block: write started-<action_id>, then wait for release-<action_id>.
		Block bool `json:"block"`
		// Size: the output's length in bytes.
		Size int `json:"size"`
	} `json:"arguments"`
}

type response struct {
	OK     bool   `json:"ok"`
	Output string `json:"output"`
}

func handle(ctx context.Context, p payload) (response, error) {
	dir := os.Getenv("TOOLFN_DIR")
	if dir == "" || p.ActionID == "" {
		return response{}, errors.New("toolfn: TOOLFN_DIR and action_id are required")
	}
	f, err := os.CreateTemp(dir, "invoked-"+p.ActionID+"-*")
	if err != nil {
		return response{}, err
	}
	f.Close()
	if p.Arguments.Block {
		if err := os.WriteFile(filepath.Join(dir, "started-"+p.ActionID), nil, 0o644); err != nil {
			return response{}, err
		}
		for {
			if _, err := os.Stat(filepath.Join(dir, "release-"+p.ActionID)); err == nil {
				break
			}
			select {
			case <-ctx.Done():
				return response{}, ctx.Err()
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	out := fmt.Sprintf("ran %s (key %s)", p.ActionID, p.IdempotencyKey)
	if n := p.Arguments.Size; n > len(out) {
		out += strings.Repeat("x", n-len(out))
	}
	return response{OK: true, Output: out}, nil
}

func main() {
	lambda.Start(handle)
}
