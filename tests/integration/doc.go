// Package integration holds the end-to-end tests that run against a
// deployed lifecycle stack: LocalStack or a real AWS account. They drive
// the HTTP API the way an agent and a human do (submit an action, approve
// it, read its receipt) and, when AWS credentials are set, check the Step
// Functions execution behind it.
//
// The tests are behind the `integration` build tag and skip unless
// LIFECYCLE_STACK_OUTPUTS names the outputs file of a deployed stack:
//
//	cdk deploy --outputs-file cdk-outputs.json ...
//	LIFECYCLE_STACK_OUTPUTS=$PWD/cdk-outputs.json \
//	LIFECYCLE_AGENT_TOKEN=... LIFECYCLE_HUMAN_TOKEN=... \
//	AWS_REGION=... [AWS_ENDPOINT_URL=http://localhost.localstack.cloud:4566] \
//	go test -tags integration -count=1 -v ./tests/integration/
//
// Every variable is described in e2e_test.go and in localstack/README.md.
// Nothing here runs in `make test`; nothing here may mutate anything but
// the session it creates.
package integration
