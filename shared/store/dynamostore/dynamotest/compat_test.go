package dynamotest_test

import (
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/openprogram/lifecycle/shared/store/dynamostore/dynamotest"
)

// TestCompat pins each minidyn correction to the DynamoDB behaviour it
// stands for. (New itself proves the DescribeTable and UpdateTimeToLive
// corrections: dynamostore.CreateTable waits for ACTIVE and enables TTL.)
func TestCompat(t *testing.T) {
	b := dynamotest.New(t)
	if b.Real() {
		t.Skip("pins minidyn corrections")
	}
	ctx := t.Context()
	key := map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "SESSION#s"},
		"sk": &types.AttributeValueMemberS{Value: "COUNTER#1"},
	}
	addMember := func(m string) error {
		expr, err := expression.NewBuilder().
			WithCondition(expression.Not(expression.Contains(expression.Name("counted"), m))).
			WithUpdate(expression.Add(expression.Name("counted"), expression.Value(&types.AttributeValueMemberSS{Value: []string{m}}))).
			Build()
		if err != nil {
			t.Fatal(err)
		}
		_, err = b.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(b.Table), Key: key,
			ConditionExpression: expr.Condition(), UpdateExpression: expr.Update(),
			ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
		})
		return err
	}

	t.Run("contains on a missing attribute is false", func(t *testing.T) {
		if err := addMember("block:a1"); err != nil {
			t.Fatalf("first member of a new item: %v", err)
		}
		var ccf *types.ConditionalCheckFailedException
		if err := addMember("block:a1"); !errors.As(err, &ccf) {
			t.Fatalf("same member again: %v, want ConditionalCheckFailedException", err)
		}
		if err := addMember("block:a2"); err != nil {
			t.Fatalf("second member: %v", err)
		}
	})

	t.Run("an item that loses its index keys leaves the index", func(t *testing.T) {
		put := func(attrs map[string]string) {
			it := map[string]types.AttributeValue{
				"pk": &types.AttributeValueMemberS{Value: "EXEC#e"}, "sk": &types.AttributeValueMemberS{Value: "ACTION#a"},
			}
			for k, v := range attrs {
				it[k] = &types.AttributeValueMemberS{Value: v}
			}
			if _, err := b.Client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(b.Table), Item: it}); err != nil {
				t.Fatal(err)
			}
		}
		query := func() []map[string]types.AttributeValue {
			kc := expression.Key("gsi2pk").Equal(expression.Value("OPEN#ACTION")).And(expression.Key("gsi2sk").GreaterThan(expression.Value("")))
			expr, err := expression.NewBuilder().WithKeyCondition(kc).Build()
			if err != nil {
				t.Fatal(err)
			}
			out, err := b.Client.Query(ctx, &dynamodb.QueryInput{
				TableName: aws.String(b.Table), IndexName: aws.String("gsi2"),
				KeyConditionExpression: expr.KeyCondition(), ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
			})
			if err != nil {
				t.Fatalf("query with a sort-key condition: %v", err)
			}
			return out.Items
		}
		put(map[string]string{"gsi2pk": "OPEN#ACTION", "gsi2sk": "1"})
		if n := len(query()); n != 1 {
			t.Fatalf("open index holds %d items, want 1", n)
		}
		put(nil)
		if n := len(query()); n != 0 {
			t.Fatalf("open index holds %d items after the keys were removed, want 0", n)
		}
		put(map[string]string{"gsi2pk": "OPEN#ACTION", "gsi2sk": "2"})
		if n := len(query()); n != 1 {
			t.Fatalf("open index holds %d items after re-adding, want 1", n)
		}
	})
}
