// Package sfnlocal is the embedded Step Functions engine: it runs the very
// ASL definition that runs on AWS Step Functions (Standard), resolves its
// Lambda ARNs to in-process functions, keeps its executions durable in the
// project's store (shared/store.Store), and serves the part of the Step
// Functions API the project uses over HTTP in the AWS JSON 1.0 protocol, so
// all code talks to it through the real aws-sdk-go-v2/service/sfn client.
//
// It owns execution state (position, task tokens, timers, history) and the
// API. It never interprets ASL itself (shared/asl does, and refuses what
// neither implements), never retries or routes anything the definition
// does not say, and never talks to AWS.
//
// # Wiring
//
//	eng, err := sfnlocal.New(sfnlocal.Config{
//		Store:            db,                              // sqlitestore.Open(...)
//		Definition:       statemachines.ActionLifecycle,
//		Substitutions:    map[string]string{"AuthorizeFunctionArn": authorizeARN, ...},
//		StateMachineName: "action-lifecycle",
//		Functions:        map[string]sfnlocal.LambdaFunc{authorizeARN: sfnlocal.Handler(authorize.Handle), ...},
//		OnStatusChange:   sweeper.OnStatusChange,
//		VersionInUse:     pinned,                          // optional: refuses DeleteStateMachineVersion
//	})
//	err = eng.Start(ctx)                                 // resume stored executions
//	srv := &http.Server{Addr: "127.0.0.1:0", Handler: eng.Handler()}
//	// sfn.NewFromConfig(cfg, func(o *sfn.Options) { o.BaseEndpoint = aws.String(url) })
//	// ... on shutdown: srv.Shutdown(ctx); eng.Close(ctx); db.Close()
//
// # Semantics (as Step Functions Standard)
//
//   - StartExecution with the name of a running execution and the same
//     input (byte for byte) returns that execution; another input, or the
//     name of a closed execution, is ExecutionAlreadyExists.
//   - Functions run at least once per attempt: a Task whose result was not
//     written when the process stopped is invoked again after Start, with
//     the same input and, for .waitForTaskToken, the same token and
//     deadlines. Handlers must be idempotent (they are, by the project's
//     contract), exactly as with Lambda's own at-least-once invocation.
//     A Task whose result leads straight to another Task is not written
//     on its own (see "Durability and cost"), so a killed process re-runs
//     every Task since the last write; an orderly Close writes the
//     position first, so a restart re-runs only Tasks that were in flight.
//   - A .waitForTaskToken task's token is written before its function can
//     see it; once the function has returned, a restart does not invoke it
//     again: the wait continues with its original TimeoutSeconds and
//     HeartbeatSeconds deadlines. SendTaskSuccess/Failure return once the
//     outcome is durable.
//   - Function errors are named as aws-lambda-go names them (the Go type
//     name without the pointer: *TransientError is "TransientError", an
//     fmt.Errorf wrapper is "wrapError"; a panic is named by the panic
//     value's type) with the Lambda error payload
//     {"errorMessage":..., "errorType":...} as the cause.
//   - Wait states, retry delays, task timeouts and heartbeats run on the
//     Clock (a FakeClock in tests).
//   - Status-change events (EventBridge's "Step Functions Execution Status
//     Change") go to Config.OnStatusChange after the change is durable. They
//     are not themselves durable: an event due just before a crash is not
//     sent after the restart; the recovery sweeper's schedule covers that.
//
// # Durability and cost
//
// An execution lives in two places in the store:
//
//	SFNEXEC#<name> / META   its item: identity, input, status, outcome, the
//	                        definition (and version, alias) it started on. Written
//	                        when it starts (PutOnce, which is also the
//	                        idempotency check) and when it closes (one
//	                        CompareAndSwap). While it runs the item is in the
//	                        sparse index GSI2PK "OPEN#SFN", which Start reads;
//	                        GSI1PK "SFNSM#<machine>" lists all executions.
//	SFNHIST#<name>          its log (store.Append): one entry per boundary
//	                        written in between, holding the history events
//	                        since the previous write and the position reached.
//
// History of more than 2 KiB is stored as "packed": an S2 block of the
// events' JSON array, base64 in the item's JSON. Every event repeats the
// state's data, so a lifecycle action's 13 KiB of history takes 3 KiB.
//
// Start rebuilds a running execution from its item and the last position
// in its log. Task tokens carry their execution's name, so SendTask* needs
// no token index. Writes per step (each one store operation):
//
//	StartExecution                                   1 (PutOnce of the item)
//	Pass, Choice, Succeed, Fail, Wait with 0 seconds 0 (they ride on the next write)
//	Task completed, the next Task runs right away    0 (rides on the next write)
//	Task completed into a park (token, Wait, delay)  1 Append
//	Task failed, retried at once / after a delay     0 / 1 Append
//	.waitForTaskToken: function returned, waiting    1 Append
//	.waitForTaskToken: SendTaskSuccess/Failure       1 Append (+1 if it arrives while the function still runs)
//	SendTaskHeartbeat                                1 Append (0 without HeartbeatSeconds)
//	Wait state elapsed                               1 Append (the position moves on)
//	Execution closes (success, failure, stop, timeout) 1 CompareAndSwap
//	Engine Close                                     1 Append per execution with an unwritten position
//
// The project's allow path (Authorize, a Choice, DispatchSync,
// RecordOutcome) therefore costs 2 writes (about 4 KiB):
// the item when the execution starts and again when it closes. Every
// change made through the API (SendTask*, StopExecution) is written before
// the call returns, and every token before its function can see it.
// Measured with BenchmarkAllowPath (functions that do nothing, SQLite, 128
// executions in flight, 2 shared and busy cores): about 0.35 ms of CPU per
// execution, about 4,900 executions per second (it was 5 writes, 12 KiB,
// 1.0 to 1.5 ms and 800 per second when every Task was written).
//
// A process stopping between two writes loses only work the restart redoes:
// the Tasks since the last write run again (and an interrupted multi-entry
// log write may leave duplicate entries, which readers skip by event id).
// A history read while an execution runs shows its events so far, from
// memory; after a kill, the Tasks that run again get the same event ids,
// with the new run's data.
//
// # Limits
//
// One engine per store. Parallel and Map states, JSONata, variables and
// integrations other than Lambda are refused when the definition loads (see
// shared/asl). An execution's input and
// output must together fit in one store item (about 380 KiB; Step Functions
// allows 256 KiB each); history events whose data would not fit in an item
// are kept with the data left out and marked truncated. A run of more than
// 1000 states without a Task or a Wait fails with States.Runtime (a loop).
// The API is unauthenticated: serve it on loopback only.
//
// # The read API of consoles and toolkits
//
// Besides the operations the project calls, the engine answers what the
// AWS CLI, boto3 or the AWS Toolkit call to browse: ListStateMachines (the
// one machine, type STANDARD), DescribeStateMachine (the definition as
// loaded, placeholders filled; status ACTIVE; creationDate is when New
// ran, since the engine keeps no state machine record; a version ARN
// describes the version), DescribeStateMachineForExecution (the definition
// the execution started on), ValidateStateMachineDefinition (shared/asl's validation as
// diagnostics, all of severity ERROR and code SCHEMA_VALIDATION_FAILED,
// location "/States/<name>/<field>"; what the engine does not implement
// FAILs), and ListExecutions with statusFilter, maxResults (0 to 1000) and
// nextToken, newest first (a version or alias ARN lists the executions
// started on it).
//
// # Versions and aliases
//
// As on Step Functions: PublishStateMachineVersion snapshots the current
// definition as version n (ARN "<machine>:<n>"; revisionId fences it, a
// description of up to 256 characters names it; publishing the definition
// of the latest version again returns that version), ListStateMachineVersions
// (newest first), DeleteStateMachineVersion (numbers are never reused),
// CreateStateMachineAlias, UpdateStateMachineAlias,
// DescribeStateMachineAlias, ListStateMachineAliases (of the machine or of
// one version), DeleteStateMachineAlias; an alias ("<machine>:<name>")
// routes to one version or splits between two by weight (Config.Random
// picks). StartExecution takes the machine, a version or an alias ARN;
// DescribeExecution and ListExecutions report stateMachineVersionArn and
// stateMachineAliasArn as AWS does (the execution ARN stays unqualified).
//
// Every definition the engine ever ran is kept in the store under its
// SHA-256 (SFNDEF#<hex>, written by Start before any execution names it),
// and every execution records the one it started on: current, or its
// version's. It resumes on that definition after a restart, whatever the
// current file is, and never on another. Executions written before
// definitions were stored name none and run the current one (failing with
// States.Runtime if their state is gone). A Task of an old definition
// naming a function the engine no longer has fails with
// Lambda.ResourceNotFoundException, as Lambda does, which Retry and Catch
// can route. The engine runs the handlers it has: a version pins the
// definition, not the code behind its functions (the lifecycle's handler
// contract, shared/revision, covers that).
//
// One difference from AWS, on purpose: DeleteStateMachineVersion is
// refused with ConflictException not only while an alias routes to the
// version (as on AWS) but also while an execution of the engine runs on it
// or Config.VersionInUse says the lifecycle still needs it. AWS lets
// running executions finish on a deleted version; here nothing that may
// still need a definition loses it. Publishing, deleting and alias changes
// are serialized against starts on a version or alias, so a version is
// never deleted under an execution starting on it. A start on a version or
// alias writes what any start writes; the version and alias it reads are
// cached in memory (they change only through this engine, which empties
// the cache on every change), so it reads nothing from the store either.
//
// Versions and aliases live in the store beside the executions:
//
//	SFNDEF#<sha256>    / DEF               a definition (PutOnce, never changed)
//	SFNVER#<machine>   / V#<10 digits>     a version; deleting leaves a tombstone
//	SFNALIAS#<machine> / <name>            an alias; deleting leaves a tombstone
package sfnlocal
