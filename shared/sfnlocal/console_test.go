package sfnlocal

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
)

// TestBoto3Console browses the engine with boto3 (testdata/console.py), a
// client nobody here wrote, exactly as a console does: list state machines,
// describe one, page through executions with maxResults=1 following
// nextToken, describe each execution, and get the typed errors.
func TestBoto3Console(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed: the boto3 console test needs python3 with boto3 (apt-get install python3-boto3)")
	}
	if out, err := exec.Command(python, "-c", "import boto3").CombinedOutput(); err != nil {
		t.Skipf("boto3 is not installed (apt-get install python3-boto3 or pip install boto3): %v: %s", err, out)
	}
	h := newHarness(t, waitDef, nil)
	for i := range 3 {
		h.start(fmt.Sprintf("e%d", i), fmt.Sprintf(`{"n": %d}`, i))
		h.clock.Advance(time.Millisecond)
	}
	if _, err := h.client.StopExecution(context.Background(), &sfn.StopExecutionInput{ExecutionArn: aws.String(h.eng.ExecutionArn("e1"))}); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, filepath.Join("testdata", "console.py"), h.srv.URL)
	// Fake credentials on the command line; nothing from the user's AWS
	// configuration, and no instance metadata lookups.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env,
		"AWS_CONFIG_FILE="+filepath.Join(t.TempDir(), "none"),
		"AWS_SHARED_CREDENTIALS_FILE="+filepath.Join(t.TempDir(), "none"),
		"AWS_EC2_METADATA_DISABLED=true")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("console.py: %v\n%s", err, stderr.String())
	}
	var got map[string]any
	if err := json.Unmarshal(stdout, &got); err != nil {
		t.Fatalf("console.py printed %q: %v", stdout, err)
	}
	smArn := h.eng.StateMachineArn()
	want := map[string]any{
		"machines": []any{map[string]any{"name": "test-machine", "arn": smArn, "type": "STANDARD"}},
		"machine": map[string]any{"name": "test-machine", "status": "ACTIVE", "type": "STANDARD",
			"roleArn": "arn:aws:iam::123456789012:role/test-machine-role", "definitionStartAt": "W"},
		"pages":   3.0,
		"names":   []any{"e2", "e1", "e0"},
		"aborted": []any{"e1"},
		"described": []any{
			map[string]any{"name": "e2", "status": "RUNNING", "input": map[string]any{"n": 2.0}, "firstEvent": "ExecutionStarted"},
			map[string]any{"name": "e1", "status": "ABORTED", "input": map[string]any{"n": 1.0}, "firstEvent": "ExecutionStarted"},
			map[string]any{"name": "e0", "status": "RUNNING", "input": map[string]any{"n": 0.0}, "firstEvent": "ExecutionStarted"},
		},
		"validate": map[string]any{"result": "FAIL", "codes": []any{"SCHEMA_VALIDATION_FAILED", "SCHEMA_VALIDATION_FAILED"}},
		"errors": map[string]any{
			"describeExecution":    "ExecutionDoesNotExist",
			"describeStateMachine": "StateMachineDoesNotExist",
			"listExecutionsToken":  "InvalidToken",
			"badArn":               "InvalidArn",
		},
	}
	for k, w := range want {
		if !reflect.DeepEqual(got[k], w) {
			t.Errorf("%s: boto3 saw %v, want %v", k, got[k], w)
		}
	}
}
