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
