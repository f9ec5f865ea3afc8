package stack

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/jsii-runtime-go"
)

// Every grant below is written out by hand instead of using the CDK's
// grantReadWriteData / grantPut helpers: those add actions the functions do
// not use (Scan, stream reads, DescribeTable, s3:Abort*, object tagging...)
// and patterns with "*" in the action, which the least-privilege test
// forbids.

// tableActions are the item and query actions of the store adapter: single
// item conditional writes, reads, queries on the table and its two indexes,
// batch reads/writes, and ConditionCheckItem/Put/Update/Delete, which are
// also what TransactWriteItems is authorized against (there is no separate
// IAM action for transactions). No Scan: the sweeper queries the sparse GSI2.
var tableActions = []string{
	"dynamodb:GetItem",
	"dynamodb:BatchGetItem",
	"dynamodb:Query",
	"dynamodb:PutItem",
	"dynamodb:UpdateItem",
	"dynamodb:DeleteItem",
	"dynamodb:BatchWriteItem",
	"dynamodb:ConditionCheckItem",
}

// sendTaskActions have no resource-level permissions in IAM: the task token
// is the capability, and IAM only accepts Resource "*" for them. They are
// the only lifecycle actions granted on "*" (the api function completes
// approval waits and host tasks with them and relays host heartbeats; the
// dispatch function gets SendTaskSuccess alone, to answer a host wait
// published again over a started task).
var sendTaskActions = []string{
	"states:SendTaskSuccess",
	"states:SendTaskFailure",
	"states:SendTaskHeartbeat",
}

func statement(actions []string, resources ...*string) awsiam.PolicyStatement {
	return awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Effect:    awsiam.Effect_ALLOW,
		Actions:   jsii.Strings(actions...),
		Resources: &resources,
	})
}

// grantTable allows the item/query actions on the table and its indexes.
func grantTable(role awsiam.Role, table awsdynamodb.Table) {
	role.AddToPrincipalPolicy(statement(tableActions,
		table.TableArn(),
		awscdk.Fn_Join(jsii.String(""), &[]*string{table.TableArn(), jsii.String("/index/*")}),
	))
}

// grantObjects allows object-level actions on every key of the bucket.
func grantObjects(role awsiam.Role, bucket awss3.Bucket, actions ...string) {
	role.AddToPrincipalPolicy(statement(actions, bucket.ArnForObjects(jsii.String("*"))))
}
