package events

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/openprogram/lifecycle/shared/actionflow"
)

func strictDecode(t *testing.T, path string, v any) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return b
}

func sameJSON(t *testing.T, name string, a, b []byte) {
	t.Helper()
	var x, y any
	json.Unmarshal(a, &x)
	json.Unmarshal(b, &y)
	if !reflect.DeepEqual(x, y) {
		t.Errorf("%s does not round-trip:\n%s\n%s", name, a, b)
	}
}

// Every Step Functions task payload decodes into the handlers' input with
// no unknown field and encodes back to the same document (nulls aside).
func TestStepFunctionsPayloadsRoundTrip(t *testing.T) {
	files, _ := filepath.Glob("stepfunctions/*.json")
	if len(files) < 9 {
		t.Fatalf("only %d samples", len(files))
	}
	for _, f := range files {
		var in actionflow.StepInput
		raw := strictDecode(t, f, &in)
		if in.ActionID == "" || in.ExecutionID == "" {
			t.Errorf("%s: identities missing", f)
		}
		var m map[string]any
		json.Unmarshal(raw, &m)
		for k, v := range m {
			if v == nil {
				delete(m, k)
			}
		}
		want, _ := json.Marshal(m)
		got, _ := json.Marshal(in)
		sameJSON(t, f, want, got)
	}
}
