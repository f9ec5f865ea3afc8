package permission_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/permission"
	"github.com/openprogram/lifecycle/shared/sandbox"
)

// allowingReviewer allows every call it is asked about.
type allowingReviewer struct{}

func (allowingReviewer) Review(context.Context, permission.ReviewInput) (permission.Verdict, error) {
	return permission.Verdict{Kind: permission.VerdictAllow, Reviewer: "test", Reason: "looks fine"}, nil
}

// relaxedCall is a Bash call with extra (boolean) arguments.
func relaxedCall(cmd string, extra map[string]any) permission.Call {
	m := map[string]any{"command": cmd}
	for k, v := range extra {
		m[k] = v
	}
	b, _ := json.Marshal(m)
	return permission.Call{ActionID: newAction(), Tool: "Bash", Args: b}
}

var (
	withNetwork = map[string]any{"network": true}
	unsandboxed = map[string]any{"dangerouslyDisableSandbox": true}
)

func profile(mode string, network bool, writable ...string) *sandbox.Profile {
	return &sandbox.Profile{Mode: mode, Network: network, Writable: writable}
}

func TestSandboxProfileDecision(t *testing.T) {
	const allowTests = `"allow": ["Bash(npm test)", "Bash(npm install *)", "Bash(cat *)", "WebFetch(domain:example.com)"]`
	ruleNet := `{"version":"v1","mode":"default",` + allowTests + `,
		"sandbox": {"rules": {"Bash(npm install *)": {"network": true, "writable": ["/var/cache/npm"]}}}}`
	ruleOff := `{"version":"v1","mode":"default",` + allowTests + `,
		"sandbox": {"rules": {"Bash(npm install *)": {"mode": "off"}, "Bash(cat *)": {"mode": "off"}}}}`
	plain := `{"version":"v1","mode":"default",` + allowTests + `}`
	relaxedCallDigest := digestOf(t, relaxedCall("npm test", withNetwork))
	sandboxedDigest := digestOf(t, relaxedCall("npm test", nil))
	cases := []struct {
		name        string
		doc         string
		call        permission.Call
		interactive bool
		auto        bool
		want        lifecycle.Permission
		source      permission.Source
		code        permission.Code
		profile     *sandbox.Profile
	}{
		{name: "default profile", doc: plain, call: relaxedCall("npm test", nil), interactive: true,
			want: allow, source: permission.SourceAllowRule, profile: profile(sandbox.ModeBwrap, false)},
		{name: "file tool gets the default profile", doc: plain, call: toolCall("Read", "file_path", "src/a.go"), interactive: true,
			want: allow, profile: profile(sandbox.ModeBwrap, false)},
		{name: "a tool the host does not run gets no profile", doc: plain, call: toolCall("WebFetch", "url", "https://example.com/x"), interactive: true,
			want: allow, profile: nil},
		{name: "policy off", doc: `{"version":"v1",` + allowTests + `,"sandbox":"off"}`, call: relaxedCall("npm test", nil), interactive: true,
			want: allow, profile: profile(sandbox.ModeOff, false)},
		{name: "policy off: dangerouslyDisableSandbox relaxes nothing", doc: `{"version":"v1",` + allowTests + `,"sandbox":"off"}`,
			call: relaxedCall("npm test", unsandboxed), interactive: true, want: allow, source: permission.SourceAllowRule, profile: profile(sandbox.ModeOff, false)},
		{name: "tool setting opens the network", doc: `{"version":"v1",` + allowTests + `,"sandbox":{"tools":{"bash":{"network":true}}}}`,
			call: relaxedCall("npm test", nil), interactive: true, want: allow, profile: profile(sandbox.ModeBwrap, true)},
		{name: "rule with network", doc: ruleNet, call: relaxedCall("npm install left-pad", nil), interactive: true,
			want: allow, source: permission.SourceAllowRule, profile: profile(sandbox.ModeBwrap, true, "/var/cache/npm")},
		{name: "another rule keeps the default", doc: ruleNet, call: relaxedCall("npm test", nil), interactive: true,
			want: allow, profile: profile(sandbox.ModeBwrap, false)},
		{name: "relaxed asks (network)", doc: plain, call: relaxedCall("npm test", withNetwork), interactive: true,
			want: ask, source: permission.SourceSandbox, code: permission.CodeSandboxRelaxation, profile: profile(sandbox.ModeBwrap, true)},
		{name: "relaxed asks (dangerouslyDisableSandbox)", doc: plain, call: relaxedCall("npm test", unsandboxed), interactive: true,
			want: ask, source: permission.SourceSandbox, code: permission.CodeSandboxRelaxation, profile: profile(sandbox.ModeOff, false)},
		{name: "relaxed allowed by explicit rule", doc: ruleNet, call: relaxedCall("npm install left-pad", withNetwork), interactive: true,
			want: allow, source: permission.SourceAllowRule, profile: profile(sandbox.ModeBwrap, true, "/var/cache/npm")},
		{name: "a network rule does not allow leaving the sandbox", doc: ruleNet, call: relaxedCall("npm install left-pad", unsandboxed), interactive: true,
			want: ask, source: permission.SourceSandbox, code: permission.CodeSandboxRelaxation, profile: &sandbox.Profile{Mode: sandbox.ModeOff, Network: true, Writable: []string{"/var/cache/npm"}}},
		{name: "an off rule allows leaving the sandbox", doc: ruleOff, call: relaxedCall("npm install left-pad", unsandboxed), interactive: true,
			want: allow, source: permission.SourceAllowRule, profile: profile(sandbox.ModeOff, false)},
		{name: "relaxed is denied when nobody can approve", doc: plain, call: relaxedCall("npm test", withNetwork), interactive: false,
			want: deny, source: permission.SourceSandbox, code: permission.CodeSandboxRelaxation},
		{name: "relaxed is denied in dontAsk", doc: `{"version":"v1","mode":"dontAsk",` + allowTests + `}`, call: relaxedCall("npm test", withNetwork), interactive: true,
			want: deny, source: permission.SourceSandbox},
		{name: "relaxed is denied by a deny rule", doc: `{"version":"v1","deny":["Bash(npm *)"]}`, call: relaxedCall("npm test", unsandboxed), interactive: true,
			want: deny, source: permission.SourceDenyRule},
		{name: "bypass mode still asks for a relaxation", doc: `{"version":"v1","mode":"bypassPermissions"}`, call: relaxedCall("npm test", unsandboxed), interactive: true,
			want: ask, source: permission.SourceSandbox, profile: profile(sandbox.ModeOff, false)},
		{name: "auto mode's reviewer never allows a relaxation", doc: `{"version":"v1","mode":"auto"}`, auto: true, call: relaxedCall("ls", withNetwork), interactive: true,
			want: ask, source: permission.SourceSandbox, profile: profile(sandbox.ModeBwrap, true)},
		{name: "auto mode allows the sandboxed form", doc: `{"version":"v1","mode":"auto"}`, auto: true, call: relaxedCall("ls", nil), interactive: true,
			want: allow, source: permission.SourceClassifier, profile: profile(sandbox.ModeBwrap, false)},
		{name: "grant doesn't cover relaxed", doc: `{"version":"v1","grants":[{"tool":"Bash","argsDigest":"` + sandboxedDigest + `","policyVersion":"v1"}]}`,
			call: relaxedCall("npm test", withNetwork), interactive: true, want: ask, source: permission.SourceMode, profile: profile(sandbox.ModeBwrap, true)},
		{name: "grant covers the sandboxed form", doc: `{"version":"v1","grants":[{"tool":"Bash","argsDigest":"` + sandboxedDigest + `","policyVersion":"v1"}]}`,
			call: relaxedCall("npm test", nil), interactive: true, want: allow, source: permission.SourceGrant, profile: profile(sandbox.ModeBwrap, false)},
		{name: "a grant of exactly the relaxed call allows it", doc: `{"version":"v1","grants":[{"tool":"Bash","argsDigest":"` + relaxedCallDigest + `","policyVersion":"v1"}]}`,
			call: relaxedCall("npm test", withNetwork), interactive: true, want: allow, source: permission.SourceGrant, profile: profile(sandbox.ModeBwrap, true)},
		{name: "hard constraint still wins", doc: ruleOff, call: relaxedCall("cat ../.lifecycle/auth.key", unsandboxed), interactive: true,
			want: deny, source: permission.SourceHardConstraint, code: permission.CodeProtectedPath},
		{name: "a writable path containing the state directory is denied", doc: `{"version":"v1",` + allowTests + `,"sandbox":{"tools":{"Bash":{"writable":["/work"]}}}}`,
			call: relaxedCall("npm test", nil), interactive: true, want: deny, source: permission.SourceHardConstraint, code: permission.CodeProtectedPath},
		{name: "a writable path in a credential store of the home is denied", doc: `{"version":"v1",` + allowTests + `,"sandbox":{"writable":["/srv/dev-home"]}}`,
			call: relaxedCall("npm test", nil), interactive: true, want: deny, source: permission.SourceHardConstraint, code: permission.CodeProtectedPath},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := permission.Config{ProtectedPaths: []string{state}}
			if tc.auto {
				cfg.Classifier, cfg.Counters = allowingReviewer{}, openStore(t)
			}
			e, err := permission.NewEngine(cfg)
			if err != nil {
				t.Fatal(err)
			}
			tr := trusted(tc.interactive)
			if strings.Contains(tc.name, "credential store of the home") {
				tr.HomeDir = "/srv/dev-home/user"
			}
			d, err := e.Decide(context.Background(), permission.Request{Trusted: tr, Call: tc.call, Policy: permission.MustParsePolicy(tc.doc)})
			if err != nil {
				t.Fatal(err)
			}
			if d.Permission != tc.want || (tc.source != "" && d.Reason.Source != tc.source) || (tc.code != "" && d.Reason.Code != tc.code) {
				t.Fatalf("got %s %s/%s (%s), want %s %s/%s", d.Permission, d.Reason.Source, d.Reason.Code, d.Reason.Detail, tc.want, tc.source, tc.code)
			}
			if tc.want != deny && !reflect.DeepEqual(d.Sandbox, tc.profile) {
				t.Fatalf("sandbox %+v, want %+v", d.Sandbox, tc.profile)
			}
			if tc.want == deny && d.Sandbox != nil {
				t.Fatalf("a denial records sandbox %+v", d.Sandbox)
			}
		})
	}
}

// An approved relaxed call revalidates to allow with the relaxed profile;
// the same approval never covers the sandboxed or another relaxed form.
func TestSandboxRelaxedApproval(t *testing.T) {
	e, err := permission.NewEngine(permission.Config{ProtectedPaths: []string{state}})
	if err != nil {
		t.Fatal(err)
	}
	pol := permission.MustParsePolicy(`{"version":"v1","allow":["Bash(npm test)"]}`)
	ctx := context.Background()
	call := relaxedCall("npm test", unsandboxed)
	req := permission.Request{Trusted: trusted(true), Call: call, Policy: pol}
	d, err := e.Decide(ctx, req)
	if err != nil || d.Permission != ask {
		t.Fatalf("%+v %v", d, err)
	}
	r, err := e.Revalidate(ctx, d, approve(d), req)
	if err != nil || r.Permission != allow || r.Reason.Source != permission.SourceApproval {
		t.Fatalf("revalidate: %+v %v", r, err)
	}
	if !reflect.DeepEqual(r.Sandbox, profile(sandbox.ModeOff, false)) {
		t.Fatalf("approved sandbox %+v, want mode off", r.Sandbox)
	}
	// The approval is bound to the digest, which carries the relaxation.
	other := req
	other.Call = relaxedCall("npm test", withNetwork)
	other.Call.ActionID = call.ActionID
	if r, err := e.Revalidate(ctx, d, approve(d), other); err != nil || r.Permission != deny || r.Reason.Code != permission.CodeArgsChanged {
		t.Fatalf("another relaxation under the same approval: %+v %v", r, err)
	}
	// Without an approval the relaxed call is not allowed by the rule.
	if r, err := e.Revalidate(ctx, d, permission.ApprovalEvidence{}, req); err != nil || r.Permission != deny {
		t.Fatalf("without approval: %+v %v", r, err)
	}
}

// The relaxation fields are validated booleans.
func TestSandboxRelaxationFieldsAreBooleans(t *testing.T) {
	e, err := permission.NewEngine(permission.Config{})
	if err != nil {
		t.Fatal(err)
	}
	pol := permission.MustParsePolicy(`{"version":"v1","allow":["Bash(npm test)"]}`)
	for _, field := range []string{"network", "dangerouslyDisableSandbox"} {
		for _, v := range []any{"true", 1, nil} {
			_, err := e.Decide(context.Background(), permission.Request{Trusted: trusted(true), Call: relaxedCall("npm test", map[string]any{field: v}), Policy: pol})
			var ic *permission.InvalidCallError
			if !errors.As(err, &ic) || ic.Field != field {
				t.Fatalf("%s=%v: %v, want an invalid call naming %s", field, v, err, field)
			}
		}
	}
}

func TestSandboxPolicyErrors(t *testing.T) {
	const allowDoc = `"allow":["Bash(npm test)","WebFetch(domain:example.com)"]`
	cases := []struct {
		name, sandbox, field, msg string
	}{
		{"relative path", `{"writable":["cache"]}`, "sandbox.writable[0]", "not an absolute path"},
		{"unclean path", `{"readOnly":["/opt/../etc"]}`, "sandbox.readOnly[0]", "not clean"},
		{"root", `{"writable":["/"]}`, "sandbox.writable[0]", "whole file system"},
		{"credential store", `{"tools":{"Bash":{"readOnly":["/home/dev/.ssh"]}}}`, `sandbox.tools["Bash"].readOnly[0]`, "credential store ~/.ssh"},
		{"inside a credential store", `{"writable":["/home/dev/.aws/cli"]}`, "sandbox.writable[0]", "credential store ~/.aws"},
		{"a home directory", `{"rules":{"Bash(npm test)":{"writable":["/home/dev"]}}}`, `sandbox.rules["Bash(npm test)"].writable[0]`, "home directory"},
		{"rule not in allow", `{"rules":{"Bash(npm ci)":{"network":true}}}`, `sandbox.rules["Bash(npm ci)"]`, "no allow rule"},
		{"rule of a tool not on the host", `{"rules":{"WebFetch(domain:example.com)":{"network":true}}}`, `sandbox.rules["WebFetch(domain:example.com)"]`, "only host tools"},
		{"tool not on the host", `{"tools":{"WebFetch":{"network":true}}}`, `sandbox.tools["WebFetch"]`, "not a host tool"},
		{"rule cannot turn the sandbox on", `{"rules":{"Bash(npm test)":{"mode":"bwrap"}}}`, `sandbox.rules["Bash(npm test)"].mode`, "only turn the sandbox off"},
		{"unknown mode", `{"mode":"docker"}`, "sandbox.mode", `"docker"`},
		{"unknown shorthand", `"none"`, "sandbox", `"none"`},
		{"unknown field", `{"net":true}`, "sandbox", "unknown field"},
		{"network not a boolean", `{"network":"yes"}`, "sandbox", "cannot unmarshal"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := permission.ParsePolicy([]byte(`{"version":"v1",` + allowDoc + `,"sandbox":` + tc.sandbox + `}`))
			var pe *permission.PolicyError
			if !errors.As(err, &pe) || len(pe.Errors) == 0 {
				t.Fatalf("want a policy error, got %v", err)
			}
			got := pe.Errors[0]
			if got.Field != tc.field || !strings.Contains(got.Msg, tc.msg) {
				t.Fatalf("got %s: %q, want %s: ...%s...", got.Field, got.Msg, tc.field, tc.msg)
			}
		})
	}
	// A valid document round-trips through MarshalJSON, and its digest
	// changes with the sandbox settings.
	doc := `{"version":"v1",` + allowDoc + `,"sandbox":{"network":false,"readOnly":["/opt/sdk"],"tools":{"bash":{"writable":["/var/cache/build"]}},"rules":{"Bash(npm test)":{"network":true}}}}`
	p := permission.MustParsePolicy(doc)
	b, err := p.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	back, err := permission.ParsePolicy(b)
	if err != nil || !reflect.DeepEqual(back.Sandbox, p.Sandbox) || back.Digest() != p.Digest() {
		t.Fatalf("round trip %s: %+v %v", b, back, err)
	}
	if p.Digest() == permission.MustParsePolicy(`{"version":"v1",`+allowDoc+`}`).Digest() {
		t.Fatal("the digest ignores the sandbox settings")
	}
}

// CheckSandbox refuses, naming the setting, sandbox paths that open what
// only the engine knows: the state directory and the stores under home.
func TestSandboxCheckAgainstProtectedPaths(t *testing.T) {
	e, err := permission.NewEngine(permission.Config{ProtectedPaths: []string{state}})
	if err != nil {
		t.Fatal(err)
	}
	const allowDoc = `"allow":["Bash(npm test)"]`
	cases := []struct {
		name, sandbox, field, protected string
	}{
		{"fine", `{"writable":["/var/cache/npm"],"readOnly":["/opt/sdk","/home"]}`, "", ""},
		{"writable contains the state directory", `{"writable":["/var/cache/npm","/work"]}`, "sandbox.writable[1]", state},
		{"read-only state directory", `{"tools":{"Bash":{"readOnly":["/work/.lifecycle"]}}}`, `sandbox.tools["Bash"].readOnly[0]`, state},
		{"writable inside the state directory", `{"rules":{"Bash(npm test)":{"writable":["/work/.lifecycle/tmp"]}}}`, `sandbox.rules["Bash(npm test)"].writable[0]`, state},
		{"writable contains the home's credential store", `{"writable":["/srv/dev-home"]}`, "sandbox.writable[0]", "/srv/dev-home/user/.ssh"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := permission.MustParsePolicy(`{"version":"v1",` + allowDoc + `,"sandbox":` + tc.sandbox + `}`)
			err := e.CheckSandbox(p, "/srv/dev-home/user")
			var se *permission.SandboxPathError
			if tc.field == "" {
				if err != nil {
					t.Fatalf("want no error, got %v", err)
				}
				return
			}
			if !errors.As(err, &se) || se.Field != tc.field || se.Protected != tc.protected {
				t.Fatalf("got %v, want %s opening %s", err, tc.field, tc.protected)
			}
		})
	}
}
