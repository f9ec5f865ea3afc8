package identity

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"testing"
)

func digest(t *testing.T, tool, args string) string {
	t.Helper()
	id, err := Of(tool, json.RawMessage(args))
	if err != nil {
		t.Fatalf("Of(%s, %s): %v", tool, args, err)
	}
	return id.Digest
}

func TestDigestTable(t *testing.T) {
	base := `{"command":"ls -la","description":"list files","cwd":"/w","timeout":30000,"dangerouslyDisableSandbox":false}`
	cases := []struct {
		name      string
		tool, a   string
		tool2, b  string
		wantEqual bool
	}{
		{"bash description only", "Bash", base, "Bash", `{"command":"ls -la","description":"something else entirely","cwd":"/w","timeout":30000,"dangerouslyDisableSandbox":false}`, true},
		{"bash description removed", "Bash", base, "Bash", `{"command":"ls -la","cwd":"/w","timeout":30000,"dangerouslyDisableSandbox":false}`, true},
		{"bash command changes", "Bash", base, "Bash", `{"command":"ls -l","description":"list files","cwd":"/w","timeout":30000,"dangerouslyDisableSandbox":false}`, false},
		{"bash cwd changes", "Bash", base, "Bash", `{"command":"ls -la","description":"list files","cwd":"/x","timeout":30000,"dangerouslyDisableSandbox":false}`, false},
		{"bash timeout changes", "Bash", base, "Bash", `{"command":"ls -la","description":"list files","cwd":"/w","timeout":30001,"dangerouslyDisableSandbox":false}`, false},
		{"bash permission field changes", "Bash", base, "Bash", `{"command":"ls -la","description":"list files","cwd":"/w","timeout":30000,"dangerouslyDisableSandbox":true}`, false},
		{"key order", "Bash", base, "Bash", `{"timeout":30000,"dangerouslyDisableSandbox":false,"cwd":"/w","description":"list files","command":"ls -la"}`, true},
		{"number formatting", "Bash", base, "Bash", `{"command":"ls -la","description":"list files","cwd":"/w","timeout":3.0e4,"dangerouslyDisableSandbox":false}`, true},
		{"whitespace", "Bash", base, "Bash", "{ \"command\" : \"ls -la\",\n\"cwd\":\"/w\", \"timeout\": 30000, \"dangerouslyDisableSandbox\": false }", true},
		{"user tool keeps description", "create_ticket", `{"title":"a","description":"x"}`, "create_ticket", `{"title":"a","description":"y"}`, false},
		{"tool name is part of identity", "Read", `{"file_path":"/a"}`, "Write", `{"file_path":"/a"}`, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, b := digest(t, tc.tool, tc.a), digest(t, tc.tool2, tc.b)
			if (a == b) != tc.wantEqual {
				t.Fatalf("digest equal=%v, want %v\n%s\n%s", a == b, tc.wantEqual, a, b)
			}
		})
	}
	ra, _ := Of("Read", json.RawMessage(`{"file_path":"/a"}`))
	wa, _ := Of("Write", json.RawMessage(`{"file_path":"/a"}`))
	if ra.RepeatKey() == wa.RepeatKey() {
		t.Fatal("repeat key must include the tool name")
	}
}

// TestDigestProperties checks the identity properties on random argument
// objects: only the Bash description is ignored, every other field counts,
// and key order / number formatting never matter.
func TestDigestProperties(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	randVal := func() any {
		switch rng.Intn(4) {
		case 0:
			return fmt.Sprintf("v%d", rng.Intn(1000))
		case 1:
			return rng.Intn(100000)
		case 2:
			return rng.Intn(2) == 0
		default:
			return []any{rng.Intn(10), fmt.Sprint(rng.Intn(10))}
		}
	}
	fields := []string{"command", "cwd", "timeout", "run_in_background", "dangerouslyDisableSandbox", "env", "x"}
	for i := 0; i < 300; i++ {
		args := map[string]any{"command": fmt.Sprintf("echo %d", i), "description": fmt.Sprintf("d%d", i)}
		for _, f := range fields[1:] {
			if rng.Intn(2) == 0 {
				args[f] = randVal()
			}
		}
		enc := func(m map[string]any) string { b, _ := json.Marshal(m); return string(b) }
		d0 := digest(t, "Bash", enc(args))

		changedDesc := map[string]any{}
		for k, v := range args {
			changedDesc[k] = v
		}
		changedDesc["description"] = fmt.Sprintf("other %d", rng.Int())
		if digest(t, "Bash", enc(changedDesc)) != d0 {
			t.Fatalf("case %d: description change changed the Bash digest", i)
		}

		f := fields[rng.Intn(len(fields))]
		changed := map[string]any{}
		for k, v := range changedDesc {
			changed[k] = v
		}
		changed[f] = fmt.Sprintf("changed-%d", rng.Int())
		if digest(t, "Bash", enc(changed)) == d0 {
			t.Fatalf("case %d: changing %s kept the digest", i, f)
		}

		userA := digest(t, "my_tool", enc(args))
		if digest(t, "my_tool", enc(changedDesc)) == userA {
			t.Fatalf("case %d: a user tool lost its description field", i)
		}
	}
}

func TestArgumentsMustBeAnObject(t *testing.T) {
	for _, bad := range []string{`[]`, `null`, `"x"`, `{"a":1} {}`, `{`, ``} {
		_, err := Of("Bash", json.RawMessage(bad))
		var ae *ArgumentsError
		if !errors.As(err, &ae) {
			t.Errorf("%q: want *ArgumentsError, got %v", bad, err)
		}
	}
}
