// Package decider adapts the permission engine (shared/permission) to the
// lifecycle's Decider port (shared/actionflow). For each action it loads the
// session's live policy, builds the trusted context (working directory,
// project root, home, interactivity) apart from the untrusted call, and
// translates the engine's decision into the lifecycle's decision record,
// keeping the engine's own decision (policy digest, context digest, file
// preconditions, path resolutions) opaque on it so revalidation compares
// exactly what was decided. Whether paths are resolved through symbolic
// links is the engine's configuration (permission.Config.FS): `lifecycle
// serve` gives it the host's file system; the AWS stack, whose decisions
// run away from the host, does not.
//
// Every ask decision carries the engine's risk assessment (Decision.Risk,
// translated to actionflow.Risk and shown on the approval). With History
// (actionflow.History) the reviewer can read, lazily and bounded, the
// execution's earlier calls to find a download in one call run by a later
// one; calls that never ran (not_started) are left out. Trusted is the
// trusted context an action is decided in, which policy replay reuses.
//
// A session without a stored policy gets DefaultPolicy (mode default, no
// rules): the engine's defaults apply, so nothing is allowed without an
// explicit allow rule, grant, mode or approval. No global allow cache exists:
// every decision reads the live policy.
package decider
