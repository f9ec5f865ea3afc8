package dynamostore_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

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

// tableTamper rewrites log items with plain PutItem and DeleteItem, as
// anyone with write access to the table could.
type tableTamper struct{ b *dynamotest.Backend }

func (x tableTamper) PutLogEntry(ctx context.Context, e store.LogEntry) error {
	item := map[string]types.AttributeValue{
		"pk":        &types.AttributeValueMemberS{Value: e.Stream},
		"sk":        &types.AttributeValueMemberS{Value: store.LogSK(e.Seq)},
		"version":   &types.AttributeValueMemberN{Value: "1"},
		"fence":     &types.AttributeValueMemberN{Value: "0"},
		"at":        &types.AttributeValueMemberN{Value: strconv.FormatInt(store.UnixMicro(e.At), 10)},
		"append_id": &types.AttributeValueMemberS{Value: "tampered"},
	}
	for name, v := range map[string][]byte{"body": e.Body, "digest": e.Digest, "prev": e.Prev} {
		if len(v) > 0 {
			item[name] = &types.AttributeValueMemberB{Value: v}
		}
	}
	_, err := x.b.Client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(x.b.Table), Item: item})
	return err
}

func (x tableTamper) DeleteLogEntry(ctx context.Context, stream string, seq int64) error {
	_, err := x.b.Client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(x.b.Table), Key: map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: stream}, "sk": &types.AttributeValueMemberS{Value: store.LogSK(seq)}}})
	return err
}

func TestChainTamper(t *testing.T) {
	b := dynamotest.New(t)
	s := dynamostore.New(b.Client, b.Table)
	storetest.RunTamper(t, func(t *testing.T) store.Store { return s },
		func(store.Store) storetest.LogTamper { return tableTamper{b} })
}
