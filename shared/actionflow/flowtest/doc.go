// Package flowtest is a test kit for packages built on actionflow: the
// ports' test doubles (a rule decider with refusal counters, an executor
// that keeps its own log, a router) and Engine, a small durable stand-in
// for the Step Functions engine that walks the state machine's states in
// the order of statemachines/action-lifecycle.asl.json (checked against
// the file by its test) and keeps each machine's position in the store, so
// a test can "kill" a process at a fault point and resume with a new
// engine over the same store.
//
// It is not the embedded engine (shared/sfnlocal interprets the ASL file
// itself); it exists so control and recovery can be tested, crash by
// crash, without it. It must never be used outside tests.
package flowtest
