package httpapi_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/httpapi"
	"github.com/openprogram/lifecycle/shared/permission"
)

// A stored policy's sandbox paths are checked against the service's state
// directory and the home's credential stores: refused as a validation
// error naming the setting (400), not left to deny every call.
func TestPermissionPolicyValidatorChecksSandboxPaths(t *testing.T) {
	eng, err := permission.NewEngine(permission.Config{ProtectedPaths: []string{"/srv/state"}})
	if err != nil {
		t.Fatal(err)
	}
	validate := httpapi.PermissionPolicyValidator(eng, "/home/dev")
	cases := []struct {
		name, doc, field, msg string
	}{
		{"fine", `{"version":"v1","sandbox":{"writable":["/var/cache"]}}`, "", ""},
		{"parse error first", `{"version":"v1","sandbox":{"writable":["cache"]}}`, "policy.sandbox.writable[0]", "not an absolute path"},
		{"state directory", `{"version":"v1","allow":["Bash(make)"],"sandbox":{"rules":{"Bash(make)":{"writable":["/srv"]}}}}`,
			`policy.sandbox.rules["Bash(make)"].writable[0]`, "/srv/state"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v, err := validate(json.RawMessage(tc.doc))
			if tc.field == "" {
				if err != nil || v != "v1" {
					t.Fatalf("got %q %v", v, err)
				}
				return
			}
			var ve *actionflow.ValidationError
			if !errors.As(err, &ve) || ve.Field != tc.field || !strings.Contains(ve.Msg, tc.msg) {
				t.Fatalf("got %v, want %s: ...%s...", err, tc.field, tc.msg)
			}
		})
	}
}
