// Package decider adapts the permission engine (shared/permission) to the
// lifecycle's Decider port (shared/actionflow). For each action it loads the
// session's live policy, builds the trusted context (working directory,
// project root, home, interactivity) apart from the untrusted call, and
// translates the engine's decision into the lifecycle's decision record,
// keeping the engine's own decision (policy digest, context digest, file
// preconditions) opaque on it so revalidation compares exactly what was
// decided.
//
// A session without a stored policy gets DefaultPolicy (mode default, no
// rules): the engine's defaults apply, so nothing is allowed without an
// explicit allow rule, grant, mode or approval. No global allow cache exists:
// every decision reads the live policy.
package decider
