package mcpdownstream

import (
	"encoding/json"
	"strings"
	"testing"
)

// A downstream tool's contract checks a call against its input schema
// and names each field it refuses.
func TestSchemaContract(t *testing.T) {
	schema := map[string]any{
		"type": "object", "required": []any{"message", "count"}, "additionalProperties": false,
		"properties": map[string]any{
			"message": map[string]any{"type": "string"},
			"count":   map[string]any{"type": "integer", "minimum": 1},
			"mode":    map[string]any{"enum": []any{"fast", "slow"}},
			"target":  map[string]any{"type": "object", "required": []any{"host"}, "properties": map[string]any{"host": map[string]any{"type": "string"}}},
		},
	}
	ct, err := schemaContract("mcp__s__t", schema)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, args string
		want       []string // "field: part of its problem"
	}{
		{"valid", `{"message":"hi","count":2}`, nil},
		{"valid with options", `{"message":"hi","count":2,"mode":"slow","target":{"host":"h"}}`, nil},
		{"both required fields missing", `{}`, []string{"count: required", "message: required"}},
		{"a wrong type and a missing field", `{"message":7}`, []string{"count: required", `message: want "string"`}},
		{"below the minimum", `{"message":"hi","count":0}`, []string{"count: minimum"}},
		{"not in the enum", `{"message":"hi","count":1,"mode":"warp"}`, []string{"mode: enum"}},
		{"a nested required field", `{"message":"hi","count":1,"target":{}}`, []string{"target.host: required"}},
		{"an unknown field", `{"message":"hi","count":1,"colour":"red"}`, []string{"colour: not an argument"}},
		{"not an object", `["hi"]`, []string{"arguments: not a JSON object"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, p := range ct.CheckArguments(json.RawMessage(tc.args)) {
				got = append(got, p.Field+": "+p.Problem)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
			for i, w := range tc.want {
				if !strings.HasPrefix(got[i], w[:strings.Index(w, ":")+1]) || !strings.Contains(got[i], w[strings.Index(w, ":")+2:]) {
					t.Fatalf("got %q, want %q", got, tc.want)
				}
			}
		})
	}
	t.Run("a schema that cannot be resolved has no contract", func(t *testing.T) {
		if _, err := schemaContract("mcp__s__r", map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"$ref": "https://example.com/x.json"}}}); err == nil {
			t.Fatal("a remote $ref was accepted")
		}
	})
	t.Run("no schema: any object", func(t *testing.T) {
		ct, err := schemaContract("mcp__s__n", nil)
		if err != nil {
			t.Fatal(err)
		}
		if p := ct.CheckArguments(json.RawMessage(`{"anything":1}`)); len(p) != 0 {
			t.Fatalf("got %v", p)
		}
	})
}
