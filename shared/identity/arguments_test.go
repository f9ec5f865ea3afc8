package identity_test

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"

	"github.com/openprogram/lifecycle/shared/hosttools"
	"github.com/openprogram/lifecycle/shared/identity"
)

func TestCheckArguments(t *testing.T) {
	cases := []struct {
		name, tool, args string
		// want is "field:substring of the problem" per problem, sorted by field.
		want    []string
		outside bool
	}{
		{"valid Write", "Write", `{"file_path":"a/b.txt","content":""}`, nil, false},
		{"valid write_file", "write_file", `{"file_path":"/abs/elsewhere/is/the/caller's","content":"x"}`, nil, false},
		{"valid Bash with every field", "Bash", `{"command":"ls","description":"d","timeout":1000}`, nil, false},
		{"valid Edit", "edit_file", `{"file_path":"a","old_string":"x","new_string":"","replace_all":true}`, nil, false},
		{"path is not a field of write_file", "write_file", `{"path":"a.txt","content":"x"}`,
			[]string{`file_path:required`, `path:the field is named "file_path"`}, false},
		{"path next to file_path", "Read", `{"file_path":"a","path":"b"}`, []string{`path:the field is named "file_path"`}, false},
		{"unknown field of a closed contract", "Read", `{"file_path":"a","offset":3}`, []string{"offset:it takes file_path"}, false},
		{"climbs out", "Write", `{"file_path":"x/../../etc/passwd","content":"x"}`, []string{"file_path:outside the workspace"}, true},
		{"cwd is not a field of Bash (it runs in the workspace root)", "bash", `{"command":"ls","cwd":".."}`, []string{"cwd:it takes"}, false},
		{"dots inside a name stay inside", "Write", `{"file_path":"..notes/a..b","content":"x"}`, nil, false},
		{"wrong types", "Edit", `{"file_path":7,"old_string":null,"new_string":[],"replace_all":"yes"}`,
			[]string{"file_path:want a string, got a number", "new_string:want a string, got an array",
				"old_string:want a string, got null", "replace_all:want true or false, got a string"}, false},
		{"blank command", "Bash", `{"command":"   "}`, []string{"command:must not be empty"}, false},
		{"timeout not an integer", "Bash", `{"command":"ls","timeout":1.5}`, []string{"timeout:want an integer"}, false},
		{"timeout a numeric string", "Bash", `{"command":"ls","timeout":"100"}`, []string{"timeout:want an integer, got a string"}, false},
		{"timeout out of range", "Bash", `{"command":"ls","timeout":600001}`, []string{"timeout:must be 0..600000"}, false},
		{"Bash escalation fields", "Bash", `{"command":"npm ci","network":true,"dangerouslyDisableSandbox":false}`, nil, false},
		{"Bash escalation fields are booleans", "bash", `{"command":"npm ci","network":"yes","dangerouslyDisableSandbox":1}`,
			[]string{"dangerouslyDisableSandbox:want true or false, got a number", "network:want true or false, got a string"}, false},
		{"not an object", "Read", `["a"]`, []string{"arguments:not a JSON object"}, false},
		{"a tool without a contract is not checked", "noop", `{"anything":1}`, nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ct, _ := identity.Builtin.Lookup(tc.tool)
			got := ct.CheckArguments(json.RawMessage(tc.args))
			if len(got) != len(tc.want) {
				t.Fatalf("problems %+v, want %v", got, tc.want)
			}
			outside := false
			for i, p := range got {
				field, sub, _ := strings.Cut(tc.want[i], ":")
				if p.Field != field || !strings.Contains(p.Problem, sub) {
					t.Errorf("problem %d: %+v, want %s", i, p, tc.want[i])
				}
				outside = outside || p.OutsideWorkspace
			}
			if outside != tc.outside {
				t.Errorf("outside workspace %v, want %v", outside, tc.outside)
			}
		})
	}
}

// The contracts say what the published schemas (hosttools.Specs, the
// model's tool list) say: the same fields, the same required ones, closed
// where the schema refuses other properties; the lower-case names take
// exactly what their capitalised tools take.
func TestContractsMatchThePublishedSchemas(t *testing.T) {
	alias := map[string]string{"Bash": "bash", "Read": "read_file", "Write": "write_file", "Edit": "edit_file"}
	for _, spec := range hosttools.Specs {
		var schema struct {
			Required   []string                   `json:"required"`
			Props      map[string]json.RawMessage `json:"properties"`
			Additional *bool                      `json:"additionalProperties"`
		}
		if err := json.Unmarshal(spec.InputSchema, &schema); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{spec.Name, alias[spec.Name]} {
			ct, ok := identity.Builtin.Lookup(name)
			if !ok {
				t.Fatalf("no contract for %s", name)
			}
			var fields, required []string
			for _, f := range ct.Fields {
				fields = append(fields, f.Name)
				if f.Required {
					required = append(required, f.Name)
				}
				var p struct {
					Type string `json:"type"`
				}
				json.Unmarshal(schema.Props[f.Name], &p)
				if p.Type != string(f.Type) {
					t.Errorf("%s.%s: contract type %s, schema %s", name, f.Name, f.Type, p.Type)
				}
			}
			var props []string
			for p := range schema.Props {
				props = append(props, p)
			}
			sort.Strings(fields)
			sort.Strings(props)
			sort.Strings(required)
			sort.Strings(schema.Required)
			if strings.Join(fields, ",") != strings.Join(props, ",") || strings.Join(required, ",") != strings.Join(schema.Required, ",") {
				t.Errorf("%s: contract fields %v (required %v), schema %v (required %v)", name, fields, required, props, schema.Required)
			}
			if closed := schema.Additional != nil && !*schema.Additional; ct.Closed != closed {
				t.Errorf("%s: contract closed %v, schema closed %v", name, ct.Closed, closed)
			}
		}
	}
}
