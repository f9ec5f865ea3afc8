// Package sfnclient adapts the aws-sdk-go-v2 Step Functions client to the
// lifecycle's Starter, TaskCompleter and TaskHeartbeater ports. The same
// code talks to AWS Step Functions and to the embedded engine
// (AWS_ENDPOINT_URL_SFN), so the local stack exercises the real client.
// StartActionOn starts on a state machine version or alias (issue 15: an
// action runs on the version its execution recorded, or on `live`).
package sfnclient
