package stack_test

import (
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/openprogram/lifecycle/infra/stack"
)

// TestDefinitionDeployedAsFile: the DefinitionString in the template is the
// ASL file byte for byte, DefinitionSubstitutions covers exactly the file's
// placeholders, each one with the ARN of the function it names, and the
// definition with those substitutions applied is the file with the same
// substitutions applied.
func TestDefinitionDeployedAsFile(t *testing.T) {
	file, err := os.ReadFile(definitionFile())
	if err != nil {
		t.Fatal(err)
	}
	placeholders := stack.Placeholders(string(file))
	var wantPlaceholders []string
	for p := range lifecycleSubstitutions {
		wantPlaceholders = append(wantPlaceholders, p)
	}
	slices.Sort(wantPlaceholders)
	if !slices.Equal(placeholders, wantPlaceholders) {
		t.Errorf("the ASL file's placeholders are %v, want the lifecycle functions %v", placeholders, wantPlaceholders)
	}
	if got := stack.SubstitutionFunctions(); !reflect.DeepEqual(got, lifecycleSubstitutions) {
		t.Errorf("the stack fills placeholders with %v, want %v", got, lifecycleSubstitutions)
	}
	if got := stack.RetiredFunctions(); !reflect.DeepEqual(got, retiredFunctions) {
		t.Errorf("retired functions %v, want %v", got, retiredFunctions)
	}
	both(t, func(t *testing.T, s *synthesized) {
		_, sm := s.only(t, "AWS::StepFunctions::StateMachine")
		body, ok := sm["DefinitionString"].(string)
		if !ok {
			t.Fatalf("DefinitionString is not a plain string (%T): the file must be deployed as is", sm["DefinitionString"])
		}
		if sm["DefinitionS3Location"] != nil || sm["Definition"] != nil {
			t.Error("definition given twice")
		}
		if body != string(file) {
			t.Error("DefinitionString differs from the ASL file")
		}
		subs, _ := sm["DefinitionSubstitutions"].(map[string]any)
		var keys []string
		for k := range subs {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if !slices.Equal(keys, placeholders) {
			t.Errorf("DefinitionSubstitutions keys %v, placeholders in the file %v", keys, placeholders)
		}

		// Resolve each substitution to "function:<logical id>" and apply it
		// to both the deployed string and the file.
		resolved := map[string]string{}
		byFunction := map[string]string{}
		// Each is the Lambda version this deployment published of the
		// function (qualified: a state machine version pins the code).
		for placeholder, fnName := range lifecycleSubstitutions {
			id, _ := s.function(t, fnName)
			byFunction["function:"+id] = fnName
			if v, ok := subs[placeholder]; ok {
				if got, want := render(v), "{"+lambdaVersionOf(t, s, id)+"}"; got != want {
					t.Errorf("${%s} = %s, want %s (the published version of the %s function)", placeholder, got, want, fnName)
				}
				resolved[placeholder] = "function:" + id
			}
		}
		deployed, err := stack.Substitute(body, resolved)
		if err != nil {
			t.Fatalf("deployed definition: %v", err)
		}
		fromFile, err := stack.Substitute(string(file), resolved)
		if err != nil {
			t.Fatalf("file: %v", err)
		}
		var got, want any
		if err := json.Unmarshal([]byte(deployed), &got); err != nil {
			t.Fatalf("substituted definition is not JSON: %v", err)
		}
		if err := json.Unmarshal([]byte(fromFile), &want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Error("substituted definition differs from the substituted file")
		}
		if strings.Contains(deployed, "${") {
			t.Error("a placeholder is left after substitution")
		}
		// Every Lambda the definition calls is one of the lifecycle functions.
		for _, name := range lambdaTargets(got) {
			if _, ok := byFunction[name]; !ok {
				t.Errorf("the definition invokes %q, which is not a lifecycle function", name)
			}
		}
	})
}

// lifecycleSubstitutions is the contract with the ASL file, spelled out
// here rather than read from the package under test.
var lifecycleSubstitutions = map[string]string{
	"AuthorizeFunctionArn": stack.FnAuthorize,
	"ApprovalFunctionArn":  stack.FnApproval,
	"DispatchFunctionArn":  stack.FnDispatch,
	"RecordFunctionArn":    stack.FnRecord,
}

// retiredFunctions: invoked by earlier revisions' definitions only.
var retiredFunctions = []string{stack.FnProject}

// lambdaTargets collects FunctionName parameters and direct Task resources.
func lambdaTargets(v any) []string {
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if fn, ok := x["FunctionName"].(string); ok {
				out = append(out, fn)
			}
			if x["Type"] == "Task" {
				if r, ok := x["Resource"].(string); ok && !strings.HasPrefix(r, "arn:aws:states:::") {
					out = append(out, r)
				}
			}
			for _, e := range x {
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	return out
}

func TestParseDefinition(t *testing.T) {
	cases := []struct {
		name    string
		body    string
		want    []string
		wantErr string
	}{
		{name: "known placeholders, repeated", body: `{"StartAt":"A","States":{"A":{"Resource":"${AuthorizeFunctionArn}"},"B":{"Resource":"${AuthorizeFunctionArn}"},"C":{"X":"${RecordFunctionArn}"}}}`,
			want: []string{"AuthorizeFunctionArn", "RecordFunctionArn"}},
		{name: "no placeholders", body: `{"StartAt":"A","States":{}}`},
		{name: "unknown placeholder", body: `{"StartAt":"A","States":{"A":{"Resource":"${ToolFunctionArn}"}}}`, wantErr: "${ToolFunctionArn}"},
		{name: "empty placeholder", body: `{"StartAt":"A","States":{"A":{"Resource":"${}"}}}`, wantErr: "${}"},
		{name: "not JSON", body: `{"StartAt":`, wantErr: "not a JSON object"},
		{name: "no StartAt", body: `{"States":{}}`, wantErr: "no StartAt"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			def, err := stack.ParseDefinition("test.asl.json", c.body)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("want error containing %q, got %v", c.wantErr, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(def.Placeholders, c.want) || def.Body != c.body {
				t.Errorf("got %v", def.Placeholders)
			}
		})
	}
}

func TestSubstitute(t *testing.T) {
	got, err := stack.Substitute(`{"a":"${X}","b":"${Y}","c":"${X}"}`, map[string]string{"X": "1", "Y": "2"})
	if err != nil || got != `{"a":"1","b":"2","c":"1"}` {
		t.Errorf("got %q, %v", got, err)
	}
	if _, err := stack.Substitute(`"${X}${Z}"`, map[string]string{"X": "1"}); err == nil || !strings.Contains(err.Error(), "${Z}") {
		t.Errorf("missing substitution not reported: %v", err)
	}
}

// TestFunctionTimeoutsFitTheDefinition: a Task that calls a function
// directly and has TimeoutSeconds must outlive the function, so the state
// machine always sees the function's own result or error rather than
// States.Timeout while the function may still be running. The state's clock
// starts before the function's, hence the margin.
func TestFunctionTimeoutsFitTheDefinition(t *testing.T) {
	const marginSeconds = 30
	raw, err := os.ReadFile(definitionFile())
	if err != nil {
		t.Fatal(err)
	}
	var asl struct {
		States map[string]struct {
			Type           string  `json:"Type"`
			Resource       string  `json:"Resource"`
			TimeoutSeconds float64 `json:"TimeoutSeconds"`
		} `json:"States"`
	}
	if err := json.Unmarshal(raw, &asl); err != nil {
		t.Fatal(err)
	}
	checked := 0
	for name, st := range asl.States {
		if st.Type != "Task" || st.TimeoutSeconds == 0 || !strings.HasPrefix(st.Resource, "${") {
			continue
		}
		fnName, ok := lifecycleSubstitutions[strings.Trim(st.Resource, "${}")]
		if !ok {
			t.Errorf("state %s calls unknown %s", name, st.Resource)
			continue
		}
		checked++
		_, fn := defaults.function(t, fnName)
		timeout, _ := fn["Timeout"].(float64)
		if timeout+marginSeconds > st.TimeoutSeconds {
			t.Errorf("state %s times out after %.0f s but the %s function may run %.0f s (need %d s margin)",
				name, st.TimeoutSeconds, fnName, timeout, marginSeconds)
		}
	}
	if checked == 0 {
		t.Log("no direct function task with TimeoutSeconds in the definition")
	}
}
