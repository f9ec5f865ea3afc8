// Package stack owns the AWS shape of the action lifecycle: one CDK stack with
// the DynamoDB table, the blob bucket, the seven Lambda functions, the Standard
// state machine loaded from the project's one ASL file, the HTTP API, the
// EventBridge rules and bus, the dead-letter queue, the alarms and the outputs.
//
// Versions (issue 15): each function the state machine invokes publishes a
// Lambda version per deployment that changes it (retained on replacement)
// with a `live` alias; the definition's Tasks name those versions, so a
// code change is a definition change, which publishes a state machine
// version (CfnStateMachineVersion on the revision id) that the `live`
// state machine alias then points at. An execution started on an older
// state machine version keeps invoking the Lambda versions it named. The
// API and recover functions get the alias and the version ARN
// (LIFECYCLE_STATE_MACHINE_ALIAS_ARN, LIFECYCLE_STATE_MACHINE_VERSION_ARN)
// and may start executions on any version or alias of the machine. The
// project function is retired (the record step projects): the current
// definition does not invoke it and deployments publish no version of it,
// but it stays, and the state machine may invoke it, because versions of
// earlier revisions name its versions (retiredFunctions).
//
// Every IAM grant is written out here, action by action and resource by
// resource, so that the stack tests can prove least privilege by walking the
// synthesized template. The only statements with a "*" resource are the ones
// IAM offers no resource-level permission for (see wildcardActions in
// grants.go).
//
// This package builds infrastructure only: it must never import the lifecycle
// domain packages, read AWS credentials, or call AWS. Its inputs are a Config
// (from CDK context, see config.go), the directory of the function zips and
// the ASL file; everything else is derived.
package stack
