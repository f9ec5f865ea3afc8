// Package sfnclient adapts the aws-sdk-go-v2 Step Functions client to the
// lifecycle's Starter, TaskCompleter and TaskHeartbeater ports, and reads
// an action's execution as a console does (machineview.Reader: the
// execution, the definition it runs and its whole history). The same
// code talks to AWS Step Functions and to the embedded engine
// (AWS_ENDPOINT_URL_SFN), so the local stack exercises the real client.
// StartActionOn starts on a state machine version or alias (issue 15: an
// action runs on the version its execution recorded, or on `live`).
//
// Revisions (revisions.go) is actionflow's Revisions port over the
// revision registry and this client: an action's machine starts on the
// state machine version its revision was published as, never on the
// alias, so what runs is exactly what the execution recorded even if a
// deployment moves `live` between the selection and the start; a
// revision missing from the registry, or a version the engine no longer
// has, is actionflow.ErrRevisionUnavailable (the execution pauses, new
// code never runs in its place). VersionInUse is the engine's guard for
// DeleteStateMachineVersion: a version is in use while an open execution
// is pinned to a revision published as it (actionflow.OpenOnRevisions).
package sfnclient
