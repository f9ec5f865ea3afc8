// Package chaos is the black-box chaos run of the lifecycle: a real
// `lifecycle serve` process (built with the faultinject tag), SIGKILLed at
// random moments and at named points inside the lifecycle (after start
// evidence (and between taking a task's lease and writing it), after the executor, after the receipt, after the checkpoint,
// after the projection) and restarted on the same state directory, under a
// concurrent load of allow, ask and deny actions whose host tool appends one
// line per real execution to a ledger in the workspace.
//
// The invariants are checked from the HTTP API and the workspace only:
//
//   - no duplicate execution: every ledger line is unique;
//   - no lost receipt: every accepted action ends with a receipt, its delivery
//     projected;
//   - every action ends with a known outcome, or `unknown` listed under
//     Needs attention in Activity;
//   - outcomes agree with the ledger: succeeded has its line, not_started has
//     none;
//   - denials, refusals and declines are not_started;
//   - the refusal counter counts each refusal of the automatic review once;
//   - the session's event sequence is gapless (1..n).
//
// `go test ./tests/chaos/` runs 300 actions (what `make test` runs);
// `make chaos N=10000` runs 10,000. CHAOS_SEED replays a run's choices. A
// failed run keeps its seed, the serve logs, the driver's log, the state
// directory and the workspace under artifacts/chaos/<seed>/ at the
// repository root.
//
// It sends traffic only to the loopback address the server listens on.
package chaos
