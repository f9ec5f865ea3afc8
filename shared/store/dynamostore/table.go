package dynamostore

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// TableInput is the table's definition (see ../SCHEMA.md): pk/sk strings,
// GSI1 (gsi1pk, gsi1sk) and the sparse GSI2 (gsi2pk, gsi2sk), both
// projecting every attribute, billed per request. Infrastructure code that
// declares the table elsewhere (CDK) must match it.
func TableInput(table string) *dynamodb.CreateTableInput {
	str := func(name string) types.AttributeDefinition {
		return types.AttributeDefinition{AttributeName: aws.String(name), AttributeType: types.ScalarAttributeTypeS}
	}
	keys := func(pk, sk string) []types.KeySchemaElement {
		return []types.KeySchemaElement{
			{AttributeName: aws.String(pk), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(sk), KeyType: types.KeyTypeRange},
		}
	}
	gsi := func(name, pk, sk string) types.GlobalSecondaryIndex {
		return types.GlobalSecondaryIndex{
			IndexName:  aws.String(name),
			KeySchema:  keys(pk, sk),
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
		}
	}
	return &dynamodb.CreateTableInput{
		TableName: aws.String(table),
		AttributeDefinitions: []types.AttributeDefinition{
			str(attrPK), str(attrSK), str(attrGSI1PK), str(attrGSI1SK), str(attrGSI2PK), str(attrGSI2SK),
		},
		KeySchema: keys(attrPK, attrSK),
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{
			gsi(indexGSI1, attrGSI1PK, attrGSI1SK),
			gsi(indexGSI2, attrGSI2PK, attrGSI2SK),
		},
		BillingMode: types.BillingModePayPerRequest,
	}
}

// TTLInput turns on expiry by the expires_at attribute (epoch seconds).
func TTLInput(table string) *dynamodb.UpdateTimeToLiveInput {
	return &dynamodb.UpdateTimeToLiveInput{
		TableName: aws.String(table),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{
			AttributeName: aws.String(attrExpiresAt),
			Enabled:       aws.Bool(true),
		},
	}
}

// tableWait bounds how long CreateTable waits for the table to be ACTIVE.
const tableWait = 5 * time.Minute

// CreateTable creates the table, waits until it is active, and enables
// TTL on expires_at.
func CreateTable(ctx context.Context, client *dynamodb.Client, table string) error {
	if _, err := client.CreateTable(ctx, TableInput(table)); err != nil {
		return fmt.Errorf("create table %s: %w", table, err)
	}
	if err := dynamodb.NewTableExistsWaiter(client).Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)}, tableWait); err != nil {
		return fmt.Errorf("create table %s: wait until active: %w", table, err)
	}
	if _, err := client.UpdateTimeToLive(ctx, TTLInput(table)); err != nil {
		return fmt.Errorf("create table %s: enable TTL on %s: %w", table, attrExpiresAt, err)
	}
	return nil
}
