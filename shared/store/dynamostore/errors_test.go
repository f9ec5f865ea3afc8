package dynamostore

import (
	"context"
	"errors"
	"net"
	"testing"

	"github.com/aws/smithy-go"

	"github.com/openprogram/lifecycle/shared/store"
)

func TestBackendErrClassifies(t *testing.T) {
	cases := []struct {
		name        string
		err         error
		unavailable bool
	}{
		{"throttled request", &smithy.GenericAPIError{Code: "ProvisionedThroughputExceededException", Fault: smithy.FaultClient}, true},
		{"request limit", &smithy.GenericAPIError{Code: "RequestLimitExceeded", Fault: smithy.FaultClient}, true},
		{"throttling", &smithy.GenericAPIError{Code: "ThrottlingException", Fault: smithy.FaultClient}, true},
		{"server fault", &smithy.GenericAPIError{Code: "InternalServerError", Fault: smithy.FaultServer}, true},
		{"unknown server fault", &smithy.GenericAPIError{Code: "Whatever", Fault: smithy.FaultServer}, true},
		{"connection refused", &net.OpError{Op: "dial", Err: errors.New("connection refused")}, true},
		{"cancelled", context.Canceled, true},
		{"validation", &smithy.GenericAPIError{Code: "ValidationException", Fault: smithy.FaultClient}, false},
		{"missing table", &smithy.GenericAPIError{Code: "ResourceNotFoundException", Fault: smithy.FaultClient}, false},
		{"access denied", &smithy.GenericAPIError{Code: "AccessDeniedException", Fault: smithy.FaultClient}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := backendErr("op", tc.err)
			if got := errors.Is(err, store.ErrUnavailable); got != tc.unavailable {
				t.Fatalf("ErrUnavailable = %v, want %v (%v)", got, tc.unavailable, err)
			}
			if !errors.Is(err, tc.err) {
				t.Fatalf("%v does not wrap the cause", err)
			}
		})
	}
}
