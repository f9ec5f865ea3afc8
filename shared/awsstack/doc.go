// Package awsstack builds the lifecycle's services from a Lambda function's
// environment, once per process: the AWS SDK clients (DynamoDB, Step
// Functions, EventBridge, S3, Lambda, Bedrock), the dynamodb store, the
// permission engine behind the decider, the executors, and the action flow.
// Every functions/<name>/main.go calls it and only wires the result to
// lambda.Start.
//
// Environment (set by the CDK stack; a missing required variable fails the
// cold start with its name):
//
//	LIFECYCLE_TABLE               the table (required)
//	LIFECYCLE_STATE_MACHINE_ARN   the state machine (api, recover)
//	LIFECYCLE_STATE_MACHINE_VERSION_ARN
//	                              the version this deployment published (api,
//	                              recover): at cold start it is described and
//	                              its revision registered (sfnclient.
//	                              RegisterDeployment: live unless a later
//	                              version is); actions then start on their
//	                              execution's revision's version
//	LIFECYCLE_STATE_MACHINE_ALIAS_ARN
//	                              the `live` alias (for operators and tools;
//	                              actions start on versions, never the alias)
//	LIFECYCLE_EVENT_BUS           the projection bus (project, recover)
//	LIFECYCLE_BLOB_BUCKET         large results (dispatch, record, api)
//	LIFECYCLE_REVIEWER            "builtin" (default) or "bedrock" (authorize)
//	LIFECYCLE_BEDROCK_MODEL_ID    the reviewer's model (when bedrock)
//	LIFECYCLE_TOOL_FUNCTION_ARNS  comma-separated tool Lambda ARNs; the tool's
//	                              name is the function's name (authorize and
//	                              api route and list them, dispatch invokes)
//	LIFECYCLE_PROJECT_ROOT        the agent's project root for path rules
//	                              (default /workspace)
//	LIFECYCLE_LOG_LEVEL           debug|info|warn|error (default info)
//
// It is the only place outside adapters where AWS packages meet the domain.
package awsstack
