package stack_test

import (
	"encoding/json"
	"os"
	"slices"
	"testing"

	"github.com/openprogram/lifecycle/infra/stack"
)

// awsModeEnvFile is what the AWS-mode test (tests/awsmode) sets on the
// functions it runs under the Lambda Runtime Interface Emulator.
const awsModeEnvFile = "../../tests/awsmode/testdata/function-env.json"

// TestAWSModeEnvironmentIsTheStacks: the AWS-mode test runs the functions
// with the environment this stack sets, no more, no less, so a variable
// renamed, added or dropped here cannot leave that test exercising a
// wiring nobody deploys.
func TestAWSModeEnvironmentIsTheStacks(t *testing.T) {
	b, err := os.ReadFile(awsModeEnvFile)
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Common    []string            `json:"common"`
		Functions map[string][]string `json:"functions"`
	}
	if err := json.Unmarshal(b, &file); err != nil {
		t.Fatalf("%s: %v", awsModeEnvFile, err)
	}
	if len(file.Functions) != len(stack.Functions) {
		t.Errorf("%s names %d functions, the stack has %d", awsModeEnvFile, len(file.Functions), len(stack.Functions))
	}
	s := defaults
	if s.cfg.Reviewer != stack.ReviewerBuiltin {
		t.Fatalf("the default reviewer is %s; the AWS-mode test runs the builtin one", s.cfg.Reviewer)
	}
	for _, name := range stack.Functions {
		t.Run(name, func(t *testing.T) {
			extra, ok := file.Functions[name]
			if !ok {
				t.Fatalf("%s has no entry for %s", awsModeEnvFile, name)
			}
			want := append(slices.Clone(file.Common), extra...)
			_, fn := s.function(t, name)
			var got []string
			for k := range fn["Environment"].(map[string]any)["Variables"].(map[string]any) {
				got = append(got, k)
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("%s: the stack sets %v, the AWS-mode test %v (%s)", name, got, want, awsModeEnvFile)
			}
		})
	}
}
