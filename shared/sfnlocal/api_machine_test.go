package sfnlocal

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sfn/types"
)

const waitDef = `{"StartAt": "W", "States": {"W": {"Type": "Wait", "Seconds": 60, "End": true}}}`

// The state machine read API, through the real SDK client: what a console
// or toolkit calls before it lists anything.
func TestStateMachineReadAPI(t *testing.T) {
	h := newHarness(t, waitDef, nil)
	ctx := context.Background()
	smArn := h.eng.StateMachineArn()
	h.start("one", `{}`)

	t.Run("list state machines", func(t *testing.T) {
		out, err := h.client.ListStateMachines(ctx, &sfn.ListStateMachinesInput{})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.StateMachines) != 1 || out.NextToken != nil {
			t.Fatalf("listed %+v next %v", out.StateMachines, out.NextToken)
		}
		sm := out.StateMachines[0]
		if aws.ToString(sm.StateMachineArn) != smArn || aws.ToString(sm.Name) != "test-machine" ||
			sm.Type != types.StateMachineTypeStandard || !sm.CreationDate.Equal(t0) {
			t.Fatalf("listed %s %s %s %v", aws.ToString(sm.StateMachineArn), aws.ToString(sm.Name), sm.Type, sm.CreationDate)
		}
	})
	t.Run("describe state machine", func(t *testing.T) {
		out, err := h.client.DescribeStateMachine(ctx, &sfn.DescribeStateMachineInput{StateMachineArn: aws.String(smArn)})
		if err != nil {
			t.Fatal(err)
		}
		if aws.ToString(out.StateMachineArn) != smArn || aws.ToString(out.Name) != "test-machine" ||
			aws.ToString(out.Definition) != waitDef || out.Type != types.StateMachineTypeStandard ||
			out.Status != types.StateMachineStatusActive || !out.CreationDate.Equal(t0) ||
			aws.ToString(out.RoleArn) != "arn:aws:iam::123456789012:role/test-machine-role" ||
			out.LoggingConfiguration == nil || out.LoggingConfiguration.Level != types.LogLevelOff {
			t.Fatalf("described %+v", out)
		}
	})
	t.Run("no versions or aliases", func(t *testing.T) {
		versions, err := h.client.ListStateMachineVersions(ctx, &sfn.ListStateMachineVersionsInput{StateMachineArn: aws.String(smArn)})
		if err != nil || versions.StateMachineVersions == nil || len(versions.StateMachineVersions) != 0 || versions.NextToken != nil {
			t.Fatalf("versions %+v, %v", versions, err)
		}
		aliases, err := h.client.ListStateMachineAliases(ctx, &sfn.ListStateMachineAliasesInput{StateMachineArn: aws.String(smArn)})
		if err != nil || aliases.StateMachineAliases == nil || len(aliases.StateMachineAliases) != 0 || aliases.NextToken != nil {
			t.Fatalf("aliases %+v, %v", aliases, err)
		}
	})
	t.Run("describe state machine for execution", func(t *testing.T) {
		out, err := h.client.DescribeStateMachineForExecution(ctx, &sfn.DescribeStateMachineForExecutionInput{ExecutionArn: aws.String(h.eng.ExecutionArn("one"))})
		if err != nil {
			t.Fatal(err)
		}
		if aws.ToString(out.StateMachineArn) != smArn || aws.ToString(out.Definition) != waitDef ||
			aws.ToString(out.Name) != "test-machine" || !out.UpdateDate.Equal(t0) {
			t.Fatalf("described %+v", out)
		}
	})
}

// Placeholders are filled in the definition DescribeStateMachine returns.
func TestDescribeStateMachineSubstituted(t *testing.T) {
	eng, err := New(Config{Store: nopStore{}, StateMachineName: "m",
		Definition:    []byte(`{"StartAt": "P", "States": {"P": {"Type": "Pass", "Result": "${Greeting}", "End": true}}}`),
		Substitutions: map[string]string{"Greeting": "hello"}})
	if err != nil {
		t.Fatal(err)
	}
	out, err := eng.describeStateMachine(context.Background(), eng.StateMachineArn())
	if err != nil {
		t.Fatal(err)
	}
	if def := out.(map[string]any)["definition"].(string); !strings.Contains(def, `"hello"`) || strings.Contains(def, "${") {
		t.Fatalf("definition %s", def)
	}
}

func TestValidateStateMachineDefinition(t *testing.T) {
	h := newHarness(t, waitDef, nil)
	ctx := context.Background()
	tests := []struct {
		name      string
		def       string
		max       int32
		result    types.ValidateStateMachineDefinitionResultCode
		locations []string
		message   string
		truncated bool
	}{
		{name: "valid", def: waitDef, result: types.ValidateStateMachineDefinitionResultCodeOk},
		{name: "not JSON", def: `{`, result: types.ValidateStateMachineDefinitionResultCodeFail, locations: []string{""}},
		{name: "missing next", def: `{"StartAt": "A", "States": {"A": {"Type": "Pass", "Next": "B"}}}`,
			result: types.ValidateStateMachineDefinitionResultCodeFail, locations: []string{"/States/A/Next"}, message: "B"},
		{name: "two problems", def: `{"StartAt": "A", "States": {"A": {"Type": "Pass", "Next": "B", "Bogus": 1}}}`,
			result: types.ValidateStateMachineDefinitionResultCodeFail, locations: []string{"/States/A/Bogus", "/States/A/Next"}},
		{name: "truncated", def: `{"StartAt": "A", "States": {"A": {"Type": "Pass", "Next": "B", "Bogus": 1}}}`, max: 1,
			result: types.ValidateStateMachineDefinitionResultCodeFail, locations: []string{"/States/A/Bogus"}, truncated: true},
		{name: "not implemented here", def: `{"StartAt": "P", "States": {"P": {"Type": "Pass", "Assign": {"x": 1}, "End": true}}}`,
			result: types.ValidateStateMachineDefinitionResultCodeFail, locations: []string{"/States/P/Assign"}, message: "not implemented"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := h.client.ValidateStateMachineDefinition(ctx, &sfn.ValidateStateMachineDefinitionInput{Definition: aws.String(tc.def), MaxResults: tc.max})
			if err != nil {
				t.Fatal(err)
			}
			var locs []string
			for _, d := range out.Diagnostics {
				if d.Severity != types.ValidateStateMachineDefinitionSeverityError || aws.ToString(d.Code) != "SCHEMA_VALIDATION_FAILED" || aws.ToString(d.Message) == "" {
					t.Errorf("diagnostic %s %s %q", d.Severity, aws.ToString(d.Code), aws.ToString(d.Message))
				}
				if tc.message != "" && !strings.Contains(aws.ToString(d.Message), tc.message) {
					t.Errorf("message %q does not say %q", aws.ToString(d.Message), tc.message)
				}
				locs = append(locs, aws.ToString(d.Location))
			}
			if out.Result != tc.result || fmt.Sprint(locs) != fmt.Sprint(tc.locations) || aws.ToBool(out.Truncated) != tc.truncated {
				t.Fatalf("result %s locations %q truncated %v; want %s %q %v", out.Result, locs, aws.ToBool(out.Truncated), tc.result, tc.locations, tc.truncated)
			}
		})
	}
}

// ListExecutions as documented: newest first, statusFilter, maxResults and
// nextToken paging, with the filter applied before the page is cut.
func TestListExecutionsPagingAndFilter(t *testing.T) {
	h := newHarness(t, waitDef, nil)
	ctx := context.Background()
	for i := range 6 {
		h.start(fmt.Sprintf("e%d", i), `{}`)
		h.clock.Advance(time.Millisecond)
	}
	for _, name := range []string{"e0", "e2", "e5"} {
		if _, err := h.client.StopExecution(ctx, &sfn.StopExecutionInput{ExecutionArn: aws.String(h.eng.ExecutionArn(name))}); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name   string
		filter types.ExecutionStatus
		max    int32
		want   string
		pages  int
	}{
		{"all, pages of 1", "", 1, "e5 e4 e3 e2 e1 e0", 6},
		{"all, pages of 4", "", 4, "e5 e4 e3 e2 e1 e0", 2},
		{"all, one page", "", 0, "e5 e4 e3 e2 e1 e0", 1},
		{"aborted, pages of 1", types.ExecutionStatusAborted, 1, "e5 e2 e0", 3},
		{"running, pages of 2", types.ExecutionStatusRunning, 2, "e4 e3 e1", 2},
		{"succeeded, none", types.ExecutionStatusSucceeded, 1, "", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var names []string
			pages := 0
			p := sfn.NewListExecutionsPaginator(h.client, &sfn.ListExecutionsInput{StateMachineArn: aws.String(h.eng.StateMachineArn()), StatusFilter: tc.filter, MaxResults: tc.max})
			for p.HasMorePages() {
				page, err := p.NextPage(ctx)
				if err != nil {
					t.Fatal(err)
				}
				pages++
				if tc.max > 0 && len(page.Executions) > int(tc.max) {
					t.Fatalf("page of %d, maxResults %d", len(page.Executions), tc.max)
				}
				for _, e := range page.Executions {
					if tc.filter != "" && e.Status != tc.filter {
						t.Fatalf("%s is %s, filter %s", aws.ToString(e.Name), e.Status, tc.filter)
					}
					names = append(names, aws.ToString(e.Name))
				}
			}
			if got := strings.Join(names, " "); got != tc.want || pages != tc.pages {
				t.Fatalf("listed %q in %d pages, want %q in %d", got, pages, tc.want, tc.pages)
			}
		})
	}
}

func TestReadAPIErrors(t *testing.T) {
	h := newHarness(t, waitDef, nil)
	ctx := context.Background()
	other := "arn:aws:states:us-east-1:123456789012:stateMachine:other"
	tests := []struct {
		name   string
		call   func() error
		target any
	}{
		{"describe other state machine", func() error {
			_, err := h.client.DescribeStateMachine(ctx, &sfn.DescribeStateMachineInput{StateMachineArn: aws.String(other)})
			return err
		}, new(*types.StateMachineDoesNotExist)},
		{"describe state machine bad arn", func() error {
			_, err := h.client.DescribeStateMachine(ctx, &sfn.DescribeStateMachineInput{StateMachineArn: aws.String("nope")})
			return err
		}, new(*types.InvalidArn)},
		{"state machine for unknown execution", func() error {
			_, err := h.client.DescribeStateMachineForExecution(ctx, &sfn.DescribeStateMachineForExecutionInput{ExecutionArn: aws.String(h.eng.ExecutionArn("ghost"))})
			return err
		}, new(*types.ExecutionDoesNotExist)},
		{"state machine for execution bad arn", func() error {
			_, err := h.client.DescribeStateMachineForExecution(ctx, &sfn.DescribeStateMachineForExecutionInput{ExecutionArn: aws.String(other)})
			return err
		}, new(*types.InvalidArn)},
		{"list state machines foreign token", func() error {
			_, err := h.client.ListStateMachines(ctx, &sfn.ListStateMachinesInput{NextToken: aws.String("garbage")})
			return err
		}, new(*types.InvalidToken)},
		{"versions of another state machine", func() error {
			_, err := h.client.ListStateMachineVersions(ctx, &sfn.ListStateMachineVersionsInput{StateMachineArn: aws.String(other)})
			return err
		}, new(*types.ValidationException)},
		{"aliases of another state machine", func() error {
			_, err := h.client.ListStateMachineAliases(ctx, &sfn.ListStateMachineAliasesInput{StateMachineArn: aws.String(other)})
			return err
		}, new(*types.StateMachineDoesNotExist)},
		{"aliases bad arn", func() error {
			_, err := h.client.ListStateMachineAliases(ctx, &sfn.ListStateMachineAliasesInput{StateMachineArn: aws.String("nope")})
			return err
		}, new(*types.InvalidArn)},
		{"list executions other state machine", func() error {
			_, err := h.client.ListExecutions(ctx, &sfn.ListExecutionsInput{StateMachineArn: aws.String(other)})
			return err
		}, new(*types.StateMachineDoesNotExist)},
		{"list executions bad arn", func() error {
			_, err := h.client.ListExecutions(ctx, &sfn.ListExecutionsInput{StateMachineArn: aws.String("nope")})
			return err
		}, new(*types.InvalidArn)},
		{"list executions foreign token", func() error {
			// Valid base64 that is not one of the engine's tokens.
			_, err := h.client.ListExecutions(ctx, &sfn.ListExecutionsInput{StateMachineArn: aws.String(h.eng.StateMachineArn()), NextToken: aws.String("Z2FyYmFnZQ")})
			return err
		}, new(*types.InvalidToken)},
		{"list executions maxResults too large", func() error {
			_, err := h.client.ListExecutions(ctx, &sfn.ListExecutionsInput{StateMachineArn: aws.String(h.eng.StateMachineArn()), MaxResults: 1001})
			return err
		}, new(*types.ValidationException)},
		{"validate without definition", func() error {
			_, err := h.client.ValidateStateMachineDefinition(ctx, &sfn.ValidateStateMachineDefinitionInput{Definition: aws.String("")})
			return err
		}, new(*types.ValidationException)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.call(); err == nil || !errors.As(err, tc.target) {
				t.Fatalf("want %T, got %v", tc.target, err)
			}
		})
	}
}
