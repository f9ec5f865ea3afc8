package dynamostore

import (
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/openprogram/lifecycle/shared/store"
)

var _ store.Store = (*Store)(nil)

// Store is the DynamoDB adapter: one table, every operation one
// conditional request (PutOnceIfVersion and Transact: one TransactWriteItems).
type Store struct {
	db    *dynamodb.Client
	table string
}

// New returns a store over an existing table (see CreateTable). The client
// is used as configured, including its retry policy: throttling and 5xx
// are retried by the SDK before they surface as *store.UnavailableError.
func New(client *dynamodb.Client, table string) *Store {
	return &Store{db: client, table: table}
}

// Close does nothing: the client belongs to the caller.
func (s *Store) Close() error { return nil }

// Attribute names of the table (see ../SCHEMA.md).
const (
	attrPK          = "pk"
	attrSK          = "sk"
	attrVersion     = "version"
	attrFence       = "fence"
	attrGSI1PK      = "gsi1pk"
	attrGSI1SK      = "gsi1sk"
	attrGSI2PK      = "gsi2pk"
	attrGSI2SK      = "gsi2sk"
	attrExpiresAt   = "expires_at"
	attrBody        = "body"
	attrAttemptID   = "attempt_id"
	attrLeaseUntil  = "lease_until"
	attrAt          = "at"
	attrAppendID    = "append_id"
	attrConsecutive = "consecutive"
	attrTotal       = "total"
	attrCounted     = "counted"
)

// Index names in DynamoDB equal the store.Index values.
const (
	indexGSI1 = string(store.IndexSession)
	indexGSI2 = string(store.IndexOpen)
)

// throttled are the error codes that mean "try again later", whatever HTTP
// status carried them.
var throttled = map[string]bool{
	"ProvisionedThroughputExceededException": true,
	"RequestLimitExceeded":                   true,
	"ThrottlingException":                    true,
	"Throttling":                             true,
	"TooManyRequestsException":               true,
	"LimitExceededException":                 true,
	"TransactionInProgressException":         true,
	"InternalServerError":                    true,
	"ServiceUnavailable":                     true,
}

// backendErr classifies an error that is not a lost condition. Throttling,
// server faults and transport failures (no answer, timeout, cancelled
// context) are *store.UnavailableError: the request may be retried. A
// request DynamoDB refused as invalid (validation, missing table, access)
// is a plain error: retrying it cannot help.
//
// Unavailable does not always mean "not written": a write whose response
// was lost may have been applied. Every write here is conditional, so the
// retry then fails its condition and the caller sees its own write as the
// existing item (see doc.go).
func backendErr(op string, err error) error {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		var re *smithyhttp.ResponseError
		if throttled[apiErr.ErrorCode()] || apiErr.ErrorFault() == smithy.FaultServer ||
			(errors.As(err, &re) && re.HTTPStatusCode() >= 500) {
			return &store.UnavailableError{Op: "dynamostore: " + op, Err: err}
		}
		return fmt.Errorf("dynamostore: %s: %w", op, err)
	}
	return &store.UnavailableError{Op: "dynamostore: " + op, Err: err}
}

// conditionFailed reports whether err is a failed ConditionExpression and
// returns the item DynamoDB sent back with it (ALL_OLD; nil when the item
// did not exist).
func conditionFailed(err error) (old map[string]types.AttributeValue, ok bool) {
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return ccf.Item, true
	}
	return nil, false
}
