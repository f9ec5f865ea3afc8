package permission_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/openprogram/lifecycle/shared/permission"
)

// Decisions and requests are stored and passed between lifecycle steps as
// JSON; they round-trip exactly, the policy included.
func TestJSONRoundTrip(t *testing.T) {
	e := newEngine(t)
	p := policy(t, "v9", permission.ModeAcceptEdits, "deny: Bash(rm *)", "allow: Bash(make *)", "ask: Read(~/.config/**)")
	req := permission.Request{Trusted: trusted(true), Call: bashCall("make && rm -rf x"), Policy: p}
	d, err := e.Decide(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var back permission.Decision
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, d) {
		t.Errorf("decision changed over JSON:\n%+v\n%+v", d, back)
	}
	rb, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	var rback permission.Request
	if err := json.Unmarshal(rb, &rback); err != nil {
		t.Fatal(err)
	}
	d2, err := e.Decide(context.Background(), rback)
	if err != nil {
		t.Fatal(err)
	}
	if d2.PolicyDigest != d.PolicyDigest || d2.Permission != d.Permission || d2.Reason != d.Reason {
		t.Errorf("the request decides differently after JSON: %+v vs %+v", d2, d)
	}
	// A policy document with an error is refused inside a request too.
	var bad permission.Request
	if err := json.Unmarshal([]byte(`{"policy":{"version":"v1","allow":["Bash("]}}`), &bad); err == nil {
		t.Error("a request with a broken policy was accepted")
	}
}
