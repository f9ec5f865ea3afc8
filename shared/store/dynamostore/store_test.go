package dynamostore_test

import (
	"testing"

	"github.com/openprogram/lifecycle/shared/store"
	"github.com/openprogram/lifecycle/shared/store/dynamostore"
	"github.com/openprogram/lifecycle/shared/store/dynamostore/dynamotest"
	"github.com/openprogram/lifecycle/shared/store/storetest"
)

// TestContract runs the store contract against one table: minidyn, or the
// endpoint in AWS_ENDPOINT_URL_DYNAMODB.
func TestContract(t *testing.T) {
	b := dynamotest.New(t)
	s := dynamostore.New(b.Client, b.Table)
	storetest.Run(t, func(t *testing.T) store.Store { return s })
}

// TestContractMoto runs the sequential part of the contract against moto's
// DynamoDB (python3 -m moto.server), a second implementation independent
// of minidyn and of this adapter's assumptions. Moto serves one request at
// a time safely only, so the racing part (Concurrency) is left to minidyn
// and real DynamoDB. Skipped without moto; LIFECYCLE_AWS_MODE_REQUIRED=1
// (make test) makes that a failure.
func TestContractMoto(t *testing.T) {
	b := dynamotest.NewMoto(t, dynamotest.Moto(t))
	s := dynamostore.New(b.Client, b.Table)
	storetest.RunSequential(t, func(t *testing.T) store.Store { return s })
}
