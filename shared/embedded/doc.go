// Package embedded assembles the whole lifecycle in one process: the SQLite
// store, the embedded Step Functions engine interpreting the very ASL file
// AWS runs, the lifecycle handlers invoked in process exactly as Lambda would
// invoke them (aws-lambda-go's handler adapter, so error names match), the
// real aws-sdk-go-v2 Step Functions client talking to the engine over
// loopback HTTP, the in-process event bus, the blob directory and a host
// worker on a workspace directory. Execution control and recovery run in it
// too: the command service (Stack.Control), restart continuation at Start
// (before anything runs again), the recovery sweeper at once, on every
// failed machine and on a ticker (the EventBridge schedule's stand-in), and
// the orderly shutdown's cooperative pause at Close.
//
// Managed processes (Stack.Processes) are supervised by the in-process
// host worker under the supervisor host name "embedded": they cannot
// outlive it. Close stops them and records them stopped (by
// worker_shutdown); a hard Close (ctx already done) or a killed process
// leaves their records running, and the next Start's supervisor report
// marks them lost (shown in Needs attention), never signalling their saved
// PIDs. The sweeper also marks lost remote workers' processes whose
// supervisor has not reported for process.LostAfter.
//
// The state directory (state.db, blobs, the signing keys of `lifecycle
// serve`) defaults to DefaultStateDir(workspace):
// $XDG_STATE_HOME/openprogram-lifecycle/<workspace name>-<hash of its
// path>, outside the workspace and its parent. Start creates it 0700 and
// tightens a looser one (logged), and refuses a state directory that is,
// contains or lies inside the workspace the host worker runs tools in
// (CheckStateDir).
//
// Start deploys, as a deployment does on AWS: it computes the revision of
// the definition and the handler contract this build declares
// (shared/revision) and, when it differs from the live one (or none is
// live), publishes a state machine version through the engine's
// PublishStateMachineVersion (its description names the revision),
// records it in the registry (Stack.Revisions), points the `live` alias at
// it and makes it live. An unchanged start publishes nothing; a rollback
// to a revision that ran before goes live on the version it had. Every
// version stays describable, and executions keep the definition they
// started on (sfnlocal). Stack.Revision, LiveAliasARN and LiveVersionARN
// name the live one.
//
// It is what `lifecycle serve` (make run), the end-to-end tests and the
// benchmarks run. A killed process leaves everything durable in the state
// directory; Start on the same directory resumes executions where they were.
package embedded
