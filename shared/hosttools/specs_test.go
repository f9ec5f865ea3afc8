package hosttools_test

import (
	"encoding/json"
	"testing"

	"github.com/openprogram/lifecycle/shared/hosttools"
)

// Every spec's schema is a JSON object schema, and a call that satisfies
// its required fields is one Runner accepts (not invalid_arguments).
func TestSpecsMatchTheRunner(t *testing.T) {
	samples := map[string]string{
		"Bash":  `{"command":"true"}`,
		"Read":  `{"file_path":"a.txt"}`,
		"Write": `{"file_path":"a.txt","content":"x"}`,
		"Edit":  `{"file_path":"a.txt","old_string":"x","new_string":"y"}`,
	}
	r := hosttools.Runner{Workspace: t.TempDir()}
	for _, s := range hosttools.Specs {
		t.Run(s.Name, func(t *testing.T) {
			var schema struct {
				Type     string         `json:"type"`
				Required []string       `json:"required"`
				Props    map[string]any `json:"properties"`
			}
			if err := json.Unmarshal(s.InputSchema, &schema); err != nil || schema.Type != "object" {
				t.Fatalf("schema %s: %v", s.InputSchema, err)
			}
			for _, req := range schema.Required {
				if _, ok := schema.Props[req]; !ok {
					t.Fatalf("required %s has no property", req)
				}
			}
			res, err := r.Run(t.Context(), s.Name, []byte(samples[s.Name]))
			if err != nil {
				t.Fatal(err)
			}
			if res.ErrorCode == "invalid_arguments" {
				t.Fatalf("the runner refused a call that matches the spec: %+v", res)
			}
		})
	}
}
