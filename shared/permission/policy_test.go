package permission_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/openprogram/lifecycle/shared/permission"
)

const fullPolicy = `{
  "version": "v7",
  "mode": "auto",
  "hardConstraints": ["Bash(rm -rf /*)"],
  "restrictions": ["Bash(git push *)"],
  "deny": ["Read(./secrets/**)", "Edit(/etc/**)"],
  "ask": ["Bash(npm publish *)"],
  "allow": ["Bash(npm run test:*)", "WebFetch(domain:example.com)", "mcp__github__*"],
  "grants": [{"tool": "Bash", "argsDigest": "sha256:` + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" + `", "policyVersion": "v7"}],
  "additionalDirectories": ["/srv/shared/"]
}`

func TestParsePolicy(t *testing.T) {
	p, err := permission.ParsePolicy([]byte(fullPolicy))
	if err != nil {
		t.Fatal(err)
	}
	if p.Version != "v7" || p.Mode != permission.ModeAuto || len(p.HardConstraints) != 1 || len(p.Restrictions) != 1 ||
		len(p.Deny) != 2 || len(p.Ask) != 1 || len(p.Allow) != 3 || len(p.Grants) != 1 ||
		!reflect.DeepEqual(p.AdditionalDirectories, []string{"/srv/shared"}) {
		t.Fatalf("parsed %+v", p)
	}
	// The document round-trips, and the digest is stable.
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var again permission.Policy
	if err := json.Unmarshal(b, &again); err != nil {
		t.Fatal(err)
	}
	if again.Digest() != p.Digest() {
		t.Errorf("digest changed over a round trip")
	}
	// Any change that can change a decision changes the digest.
	changed := again
	changed.Mode = permission.ModeDefault
	if changed.Digest() == p.Digest() {
		t.Errorf("a mode change does not change the digest")
	}
	changed = again
	changed.Allow = changed.Allow[:2]
	if changed.Digest() == p.Digest() {
		t.Errorf("removing a rule does not change the digest")
	}
}

func TestParsePolicyErrors(t *testing.T) {
	cases := []struct {
		name string
		doc  string
		want []string // "line:col field" of each error, in order
	}{
		{"bad rule with its line", "{\n  \"version\": \"v1\",\n  \"deny\": [\n    \"Bash(rm *)\",\n    \"Bash(\"\n  ]\n}",
			[]string{"5:5 deny[1] \"Bash(\""}},
		{"every bad rule is reported", `{"version":"v1","allow":["Bash()","Read(~x/y)"],"ask":["Nope(x)"]}`,
			[]string{"1:26 allow[0]", "1:35 allow[1]", "1:56 ask[0]"}},
		{"unknown key", "{\"version\":\"v1\",\n\"denny\":[\"Bash\"]}", []string{"2:1 denny"}},
		{"duplicate key", `{"version":"v1","deny":[],"deny":["Bash"]}`, []string{"1:27 deny"}},
		{"wrong type", `{"version":"v1","allow":"Bash"}`, []string{"1:25 allow"}},
		{"non-string rule", `{"version":"v1","allow":[1]}`, []string{"1:26 allow[0]"}},
		{"missing version", `{"allow":[]}`, []string{"1:1 version"}},
		{"bad version", `{"version":"v 1"}`, []string{"1:12 version"}},
		{"bad mode", `{"version":"v1","mode":"yolo"}`, []string{"1:24 mode"}},
		{"grant for another version", `{"version":"v2","grants":[{"tool":"Bash","argsDigest":"sha256:` + strings.Repeat("a", 64) + `","policyVersion":"v1"}]}`, []string{"1:12 grants[0]"}},
		{"grant with bad digest", `{"version":"v1","grants":[{"tool":"Bash","argsDigest":"md5:x","policyVersion":"v1"}]}`, []string{"1:27 grants[0]"}},
		{"grant with unknown field", `{"version":"v1","grants":[{"tool":"Bash","scope":"all"}]}`, []string{"1:27 grants[0]"}},
		{"relative directory", `{"version":"v1","additionalDirectories":["srv"]}`, []string{"1:42 additionalDirectories[0]"}},
		{"syntax error", "{\"version\":\"v1\",\n \"allow\": [\"Bash\",]}", []string{"2:19"}},
		{"trailing data", `{"version":"v1"} {}`, []string{"1:18"}},
		{"not an object", `["Bash"]`, []string{"1:1"}},
		{"truncated", `{"version":"v1","allow":["Bash"`, []string{"1:32"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := permission.ParsePolicy([]byte(tc.doc))
			var pe *permission.PolicyError
			if !errors.As(err, &pe) || p != nil {
				t.Fatalf("ParsePolicy = %v, %v; want a *PolicyError and no policy", p, err)
			}
			var got []string
			for _, e := range pe.Errors {
				s := strings.TrimSpace(strings.Join([]string{itoa(e.Line) + ":" + itoa(e.Column), e.Field, quoteIf(e.Rule)}, " "))
				got = append(got, s)
			}
			for i, w := range tc.want {
				if i >= len(got) || !strings.HasPrefix(got[i], w) {
					t.Fatalf("errors %q, want %q\n%v", got, tc.want, err)
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("errors %q, want %q\n%v", got, tc.want, err)
			}
			var one *permission.ParseError
			if !errors.As(err, &one) || !strings.Contains(err.Error(), "line ") {
				t.Errorf("error does not expose its location: %v", err)
			}
		})
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }
func quoteIf(s string) string {
	if s == "" {
		return ""
	}
	b, _ := json.Marshal(s)
	return string(b)
}
