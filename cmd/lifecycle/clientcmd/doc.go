// Package clientcmd holds the `lifecycle` CLI's client commands — token,
// submit, show, approvals, approve, decline, questions, answer, reconcile,
// command, activity, tail, policy (with policy replay: a dry run of a
// candidate over a window of recorded actions), host and audit (export, verify) — each a thin shell over package apiclient (or, for
// token, package auth with the key under the state directory). The
// root command adds them with AddTo. audit verify recomputes a decision
// log's chain with package audit, from an export or the live API, and
// exits non-zero (ErrChainBroken) when it does not hold.
//
// token signs agent tokens with the agent key only and never reads the
// human key for them; a human or admin token is issued only after the
// person at the controlling terminal (/dev/tty, in its foreground) types
// "yes", so a program without a terminal (an agent's Bash tool) cannot
// mint one. The state directory is StateDir: --state-dir or
// LIFECYCLE_STATE_DIR, else the default `lifecycle serve` derives from the
// same workspace (embedded.DefaultStateDir).
//
// Output is for people by default and JSON with --json. The API address
// and token come from --api/--token or LIFECYCLE_API/LIFECYCLE_TOKEN; the
// session defaults to the one the token is scoped to. approvals prints each
// approval's risk (level, HIGH in capitals, and reasons; a model's marked).
//
// What it must never do: decide anything itself (authorization is the
// API's), send an approval without the exact digest of the arguments it
// showed, or validate an answer itself (the API names the wrong field).
package clientcmd
