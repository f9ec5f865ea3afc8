// Package permission owns the permission decision of the action lifecycle:
// the policy (version, hard constraints, the owner's restrictions, deny /
// ask / allow rules, scoped grants, mode), its parser, the decision engine
// (Decide), the re-check before dispatch (Revalidate), the model-facing tool
// filter (VisibleTools) and the refusal fallback of automatic review.
//
// It must never execute anything, never keep a global allow cache, never let
// untrusted data (tool arguments, repository content, a classifier's prose)
// change the policy, and never import AWS or Lambda packages; reviewers that
// call a provider live in their own packages (riskreview: deterministic,
// the default; bedrockreview: Amazon Bedrock, wired behind riskreview).
//
// # Precedence
//
// Hard constraints (and Config.ProtectedPaths) > owner restrictions >
// plan mode > deny rules > grants > unanalysable input > ask rules > allow
// rules > the mode's defaults > automatic review (auto mode). Deny beats ask
// beats allow. Hard constraints, restrictions and deny rules are never turned
// into a prompt, never lifted by a grant, an approval, a mode or the refusal
// fallback. See Engine.evaluate for the exact order and Mode for the modes.
//
// Every Decision carries a Reason: Source says who or what decided
// (hard_constraint, restriction, deny_rule, ask_rule, allow_rule, grant,
// mode, analysis, classifier, counter, approval, revalidation, visibility),
// Code the specific case, Rule the rule text, Command the part of a Bash
// program concerned, Detail a sentence for the model and the UI.
//
// # Bash
//
// Bash commands are analysed as whole programs (package bashscan). A deny or
// ask rule matches when ANY command of the program matches it or might
// match it (a computed word, a wrapper like sudo or xargs, a possible path);
// an allow rule allows only when EVERY command is allowed, every word is
// static and every redirection stays in the project scope. Input over
// bashscan.MaxBytes (64 KiB), input that does not parse and opaque commands
// (eval, $CMD, bash -c "$x") are never allowed by a rule, a mode or a
// classifier: they are asked (interactive) or denied, and denied outright
// when a scoped hard constraint, restriction or deny rule might match them.
//
// # Trusted and untrusted
//
// Request.Trusted (session, working directory, project scope, home, the
// owner's request and restrictions, interactivity) and Request.Policy come
// from the service; Request.Call comes from the model and is only ever read
// as data. Nothing in a Call's arguments is interpreted as policy.
//
// # Tool names
//
// A tool is judged by its canonical name (identity.CanonicalTool, the list
// the host runner and the default executor routes share): bash, read_file,
// write_file and edit_file are Bash, Read, Write and Edit for families,
// argument fields, rules (a Bash rule applies to bash, bash(git *) is a
// Bash rule, an Edit rule covers write_file), hard constraints, protected
// paths, visibility, modes, review and revalidation. The host file tools
// read file_path and fall back to path; a call that carries path, or an
// empty file_path, is an *InvalidCallError, never judged on one field and
// run on another. Grants and decisions stay bound to the name as called.
//
// # Revalidation
//
// Decide judges a snapshot. Before dispatch the caller must call Revalidate
// with the live policy and context: it denies when the policy version or
// fingerprint (mode included), the trusted context, the argument digest or
// the approval's binding (approval id + action + digest + version) changed,
// when a live rule now denies, or when a file an edit touches changed since
// the decision (FilePrecondition). A grant or approval for one action never
// authorizes a modified command, because the digest differs.
//
// # Automatic review and the refusal fallback
//
// In auto mode a call no rule decides goes to the Classifier with the
// complete operation (never a truncated prefix; over MaxReviewBytes it is
// not reviewed) and the trusted context. Its verdict is allow, block, or
// unproven (VerdictUnproven: the reviewer could not show the call is safe).
// The built-in reviewer (riskreview) allows only what its known-safe
// analysis proves harmless, blocks known risks, and answers unproven for
// everything else, or hands it to the model reviewer when one is configured
// (riskreview.WithModel). An unproven verdict is not a refusal: Decide
// returns ask (interactive) or deny (noninteractive) with CodeNotProvenSafe
// and the reviewer's reason, and no counter changes. A classifier timeout, cancellation,
// provider failure or unparseable answer is a *NoVerdictError, distinct from
// a block: the call is not executed, no counter changes, and Decide returns
// ask (interactive) or deny (noninteractive) with CodeNoVerdict. If the
// caller's own context is cancelled, Decide returns the error instead.
//
// Counters (session scope). One counter item per session and policy
// version: the policy version is the accounting epoch, so a new version
// starts from zero, and a session's counts never leak into another session.
// Counters are durable in the store (CounterStore: ApplyCounter/GetCounter
// of store.Store).
//
// Updates. A classifier block applies CounterBlock (consecutive+1, total+1).
// Any allow in auto mode (classifier, rule, grant or mode) applies
// CounterAllow (consecutive = 0, total unchanged). An approved fallback
// action applies CounterAllow; when the wait was triggered by the total
// threshold, its completion (approved or declined) applies CounterResetTotal
// (both zero). No-verdict errors, unproven verdicts and rule denials change
// nothing.
//
// Thresholds. The block that brings the counter to 3 consecutive or 20
// total (DefaultThresholds) becomes, for an interactive owner, an ask with
// Fallback=true and source "counter", reusing the durable approval wait;
// later blocks stay asks until an approval resets the count. Noninteractive
// (or dontAsk) runs keep the precise denial (Reason.Noninteractive) and never
// wait for an approval nobody can give. The fallback never applies to hard
// constraints, restrictions or deny rules: they decide before the classifier
// is asked.
//
// Concurrency and resume. Every update is one conditional store write keyed
// by (action id, operation): a resumed or repeated Decide for the same action
// is counted once (ApplyCounter reports applied=false and returns the
// current counter), parallel blocks of distinct actions are each counted
// exactly once, and the threshold is judged on the counter value that the
// action's own update returned. Decide is not memoized: the lifecycle
// records the decision it acts on.
//
// Repeat budget. A classifier refusal is a permission outcome (not_started),
// not an execution failure: Decision.RiskRefusal reports it so the
// execution-failure repeat tracker does not count it. Otherwise repeat
// suppression would stop an identical operation before it reaches the
// refusal threshold and its manual approval.
package permission
