// Package recoverfn is the recover function's handler: an adapter from
// EventBridge events (the schedule tick, and the Step Functions
// "Execution Status Change" events for FAILED, TIMED_OUT and ABORTED
// executions) to the recovery sweeper. functions/recover/main.go only
// wires it; this package holds the event decoding so it can be tested
// with the sample payloads under events/.
//
// It must never decide anything itself: every decision is the sweeper's.
package recoverfn
