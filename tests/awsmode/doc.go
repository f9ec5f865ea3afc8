// Package awsmode is AWS mode on one machine: the artifacts a deployment
// runs, run together here without an AWS account or Docker.
//
//   - Every function's bootstrap (functions/*/main.go), built for this host,
//     runs under the AWS Lambda Runtime Interface Emulator, one emulator
//     process per execution environment, behind a loopback Lambda Invoke
//     API (lambda_test.go) that routes by function name as Lambda does.
//   - The ASL file runs on the embedded Step Functions engine
//     (shared/sfnlocal), whose Task resources go through the Invoke API with
//     the real aws-sdk-go-v2 lambda client (shared/sfnlocal/lambdainvoke).
//   - The functions get the environment the CDK stack sets
//     (infra/stack/stack.go) and reach their services through the SDK's
//     AWS_ENDPOINT_URL_<SERVICE> variables: DynamoDB on minidyn (one table
//     created as the CDK table is), Step Functions on the engine, and
//     EventBridge and S3 on moto; a rule on the projection bus copies every
//     event to an SQS queue the test reads.
//   - The api function is reached through a stand-in for API Gateway
//     (gateway_test.go): HTTP requests become HTTP API payload 2.0 events
//     with the claims of a verified JWT, as the JWT authorizer passes them.
//   - `lifecycle host` (the real CLI) completes host tools against it.
//
// Through them (TestAWSMode): the gateway's refusals, allow (noop, and a
// tool Lambda whose large result goes to S3), deny, ask → approve (a host
// Write run by `lifecycle host`) and ask → decline; recover invoked with a
// Step Functions status-change event (the engine's, filtered as the CDK
// rule filters) and with a scheduled event (after a Step Functions outage
// left an action unstarted); dispatch crashing while its tool runs, its
// whole environment or only its function process killed: unknown, the tool
// never run again; and the HTTP half of localstack/smoke.sh. Each action's
// states, receipt and projection event (read back from the queue) are
// checked as the embedded end-to-end tests check them.
//
// The test needs the emulator (`make test-aws` go-installs it under .tools/
// and sets LIFECYCLE_AWS_RIE) and moto (python3 -m moto.server); without
// them it skips, and with LIFECYCLE_AWS_MODE_REQUIRED=1 (make test) it
// fails naming what is missing. Everything listens on 127.0.0.1; every
// child process runs in its own process group and is killed when the test
// ends.
package awsmode
