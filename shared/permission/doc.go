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
// Hard constraints (and the protected paths) > owner restrictions >
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
// # Protected paths
//
// Config.ProtectedPaths (the service's state directory and keys) and
// Config.CredentialStores (DefaultCredentialStores: ~/.ssh, ~/.aws,
// ~/.config/gcloud, ~/.kube, ~/.netrc, ...) are never read, written,
// deleted or listed, by any tool through any program (protect.go): a file
// tool whose path is at or below one (or, for Glob, Grep and LS, above
// one); a Bash word or a piece of one ("--in=P", "if=P", "@P", a path in
// inline code, a here-document, a for-list) that resolves to one from any
// directory the program may be in; a walking program (find, grep -r, rg,
// du, ls -R, tar, cp -r, rm -r, mv, git, ...) started above one; the
// service's own CLI (lifecycle); a command that prints a stored credential
// (gh auth token, git credential fill, ...). Each is a hard-constraint
// denial (CodeProtectedPath) that no rule, grant, mode, approval or
// fallback lifts. A call that might reach one without naming it (a
// computed word, inline interpreter code or a script, a shell reading
// stdin, xargs, a glob whose static part may expand into one, an unknown
// cd) is never allowed: CodeUnverifiable, asked of an interactive owner
// and denied otherwise. A shell or interpreter that bashscan marks opaque
// (echo ... | sh, bash -c "$x", python3 -) is named this way, before the
// analysis's own "opaque" answer; other opaque commands (eval, $CMD, a
// glob command name) keep CodeOpaque. Programs that run project code (make, go test,
// ./script) are judged by their command line only: what the code does
// is the host sandbox's to contain.
//
// # Bash
//
// Bash commands are analysed as whole programs (package bashscan). A deny or
// ask rule matches when ANY command of the program matches it or might
// match it: a computed word, a wrapper like sudo or xargs, a command line a
// program's option runs (find -exec, git -c core.pager=..., go test -exec),
// a delete seen as rm -rf (find -delete, git clean), a possible path (a
// tree that rm -r or tar -x writes may contain the rule's path), a glob
// command name (/usr/bin/r[m]). A match is definite when every text the
// command may become matches the rule ("rm $X" is definitely "rm *").
//
// An allow rule allows only when EVERY command is allowed: its own text and
// every command line it may run (the wrapped command, find -exec's command,
// the synthetic rm -rf of a delete, the commands of a script it hands to a
// shell) each match an allow rule; every word is static; no command name
// is a glob; every write (redirection, file argument, written option) stays
// in the project scope; and inline code (python3 -c, perl -e, awk
// '{system(...)}') is covered only by a rule whose literal text names its
// flag (Bash(python3 -c *)), never by Bash(python3 *). A whole-tool Bash
// allow stays whole-tool. So Bash(find *) alone does not allow find . -exec
// rm {} +; Bash(find *) with Bash(grep *) allows find . -exec grep -l x {} +.
//
// Input over bashscan.MaxBytes (64 KiB), input that does not parse and
// opaque commands (eval, $CMD, bash -c "$x", echo ... | sh, sh <<EOF, bash
// <(...), an expanded alias) are never allowed by a rule, a mode or a
// classifier: they are asked (interactive) or denied (noninteractive). An
// opaque command is a possible match of every Bash pattern rule, so a hard
// constraint, restriction or deny rule is named in the decision.
//
// # Scope and symbolic links
//
// The project scope is the project root and the policy's additional
// directories (Scope). With a file system (Config.FS; `lifecycle serve`
// wires OSFS) every path the analysis judges is resolved against the real
// file system: component by component from "/", following symbolic links,
// with ".." taken physically after a link ("notes/../x" with notes -> /etc
// is /x, not x; Physical), up to the first component that does not exist
// yet (a write may create it). A path is in the scope only if where it
// leads is: a repository shipping notes -> .. cannot make notes/.bashrc
// "inside". Deny-like rules (hard constraints, protected paths,
// restrictions, deny and ask) match the path as written OR where it leads;
// allow rules and the mode's defaults (read-only in scope, acceptEdits,
// Bash writes under an allow rule) need where it leads. A Bash call's
// relative paths start at its cwd argument (placed like the host tool
// does: under the working directory, cleaned, then resolved); after a cd
// they resolve from both the shell's logical directory and the physical one;
// a glob's static part is resolved and the glob is expanded against the
// file system, each match resolved (MaxGlobEntries). A path that cannot be
// resolved (a link loop, a directory that cannot be examined) is in no
// scope, matches no path allow rule and might match every deny-like rule.
// The trusted directories may themselves be reached through links (/tmp
// -> /private/tmp): rules written against their trusted names still
// match. A path at or under what another command of the program may turn
// into a link (ln, cp -R, mv, rsync operands) cannot be known before run
// time and is judged like a computed path; links made by other programs
// (tar, unzip, git checkout) are not modelled.
//
// Without a file system (the AWS stack, whose decisions run away from the
// host; most unit tests) paths are compared lexically (cleaned, not
// resolved), and the host tool's own check at execution is what stands
// between a link and the outside.
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
// when a live rule now denies, when a path the decision resolved now leads
// elsewhere (Decision.Resolutions: a link created, removed or swapped since;
// CodeResolutionChanged names the path), or when a file an edit touches
// changed since the decision (FilePrecondition). Every path an allowed or
// asked call names is resolved and recorded, even those no rule needed, so
// an approval is bound to the files its paths led to (at most
// MaxResolutions; a call naming more is denied with CodeTooManyPaths). A
// glob's matches are not recorded: revalidation expands it again and
// judges what it names then. A grant or approval for one action never
// authorizes a modified command, because the digest differs.
//
// # Sandbox
//
// Every decision for a host tool (Bash, Read, Write, Edit, any spelling)
// carries the sandbox profile the call runs in (Decision.Sandbox, a
// sandbox.Profile; nil for other tools and for denials). The policy chooses
// it (Policy.Sandbox, the document's "sandbox" key): confined with no
// network by default, "off" for every call, and per tool and per allow
// rule (keyed by the rule's text) the network, extra read-only or writable
// paths, or "mode": "off". Paths are checked when the policy is parsed
// (absolute, clean, not "/", not in a credential store, a writable one not
// a home), when the service stores it (Engine.CheckSandbox: against
// Config.ProtectedPaths and the credential stores under the home, a
// *SandboxPathError naming the setting), and again when deciding: a
// profile that opens one is a hard-constraint denial (CodeProtectedPath).
//
// A Bash call may ask to relax its sandbox (dangerouslyDisableSandbox,
// network: part of its arguments, so of its digest). An allow that does
// not already give that relaxation (the deciding rule's, the tool's or the
// policy's settings) becomes a question for a person (SourceSandbox,
// CodeSandboxRelaxation): in every mode, bypassPermissions included, and
// the automatic reviewer's allow too; it is denied where nobody can
// approve. A grant covers exactly one digest, so a grant of the sandboxed
// form never covers the relaxed one (a grant of exactly the relaxed call
// does). Hard constraints, restrictions and deny rules decide before any
// of this. The approved decision (Revalidate) carries the relaxed profile.
//
// # Risk on every ask
//
// Every ask decision, in every mode, carries Decision.Risk from
// Config.Risk (by default the Classifier, when it is a RiskAssessor:
// riskreview is): a level (low, medium, high) and plain reasons; a model
// reviewer's reasons are marked ModelGenerated. The assessment never
// changes the decision, and allows and denials carry none. Reviewers that
// judge multi-step patterns read the execution's earlier calls through
// Request.Recent (ReviewInput.Recent), lazily: a call that needs none costs
// nothing.
//
// # Replaying
//
// Engine.Replaying is a copy of an engine with the same configuration
// (file system, protected paths, contracts, thresholds) and another
// classifier and counters, for policy replay (package replay): hard
// constraints, grants, modes and the Bash analysis decide exactly as live,
// and nothing is written.
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
