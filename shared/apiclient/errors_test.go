package apiclient

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/openprogram/lifecycle/shared/actionflow"
)

func TestErrorOfMapsToLifecycleErrors(t *testing.T) {
	cases := []struct {
		name   string
		status int
		body   string
		check  func(error) bool
	}{
		{"400 with a field", 400, `{"error":{"code":"unknown_field","message":"unknown field \"x\"","field":"x"}}`,
			func(err error) bool { var e *actionflow.ValidationError; return errors.As(err, &e) && e.Field == "x" }},
		{"400 without a field", 400, `{"error":{"code":"malformed_json","message":"bad"}}`,
			func(err error) bool { var e *Error; return errors.As(err, &e) && e.Code == "malformed_json" }},
		{"403", 403, `{"error":{"code":"forbidden","message":"no"}}`,
			func(err error) bool { var e *actionflow.ForbiddenError; return errors.As(err, &e) }},
		{"404", 404, `{"error":{"code":"not_found","message":"action a not found"}}`,
			func(err error) bool {
				var e *actionflow.NotFoundError
				return errors.As(err, &e) && e.What == "action a"
			}},
		{"409 keeps current", 409, `{"error":{"code":"already_decided","message":"m","current":{"status":"approved"}}}`,
			func(err error) bool {
				var e *actionflow.ConflictError
				return errors.As(err, &e) && e.Code == "already_decided" && string(e.Current.(json.RawMessage)) == `{"status":"approved"}`
			}},
		{"not JSON", 502, `<html>bad gateway</html>`,
			func(err error) bool { var e *Error; return errors.As(err, &e) && e.Status == 502 }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := errorOf(c.status, []byte(c.body)); !c.check(err) {
				t.Fatalf("%T %v", err, err)
			}
		})
	}
}
