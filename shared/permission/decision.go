package permission

import (
	"encoding/json"
	"fmt"

	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/sandbox"
	"github.com/openprogram/lifecycle/shared/store"
)

// Trusted is the context the owner and the service vouch for. Nothing in a
// Call (tool arguments, repository content) can change it.
type Trusted struct {
	SessionID ids.SessionID `json:"session_id"`
	// WorkingDir is where relative paths resolve (absolute).
	WorkingDir string `json:"working_dir"`
	// ProjectRoot bounds the project scope (absolute); relative rule paths
	// ("./secrets/**") are relative to it.
	ProjectRoot string `json:"project_root"`
	// HomeDir expands "~" in rules and arguments. Empty: "~" paths in
	// arguments cannot be resolved, so they are treated as unknown paths.
	HomeDir string `json:"home_dir,omitempty"`
	// OwnerRequest is what the owner asked for, in their words; reviewers
	// weigh a call against it.
	OwnerRequest string `json:"owner_request,omitempty"`
	// Restrictions are the owner's explicit restrictions in their words
	// ("do not touch the production database"); reviewers enforce them.
	// Enforceable restrictions belong in Policy.Restrictions as rules.
	Restrictions []string `json:"restrictions,omitempty"`
	// Interactive: an owner is present who can answer an approval. When
	// false, Decide never returns ask.
	Interactive bool `json:"interactive"`
}

// Call is the untrusted part: what the model asked to run.
type Call struct {
	ActionID ids.ActionID    `json:"action_id"`
	Tool     string          `json:"tool"`
	Args     json.RawMessage `json:"args"`
	// Digest is the identity digest (shared/identity). Empty: computed
	// here; set: verified against Args.
	Digest string `json:"digest,omitempty"`
}

// Request is everything one decision depends on.
type Request struct {
	Trusted Trusted `json:"trusted"`
	Call    Call    `json:"call"`
	Policy  *Policy `json:"policy"`
	// Recent reads the execution's earlier calls for reviewers that judge
	// multi-step patterns (nil: none known). Called lazily.
	Recent RecentCalls `json:"-"`
}

// Source answers "who or what decided this call".
type Source string

const (
	SourceVisibility     Source = "visibility"      // the tool is hidden by a whole-tool deny
	SourceHardConstraint Source = "hard_constraint" // a hard constraint (or a protected path)
	SourceRestriction    Source = "restriction"     // the owner's explicit restriction
	SourceMode           Source = "mode"            // the policy mode (plan, dontAsk, bypass, defaults)
	SourceDenyRule       Source = "deny_rule"
	SourceGrant          Source = "grant"
	SourceAnalysis       Source = "analysis" // the Bash analysis could not review the input
	SourceAskRule        Source = "ask_rule"
	SourceAllowRule      Source = "allow_rule"
	SourceClassifier     Source = "classifier" // the automatic reviewer's verdict (or its absence)
	SourceCounter        Source = "counter"    // the refusal fallback threshold
	SourceApproval       Source = "approval"   // a human approved this exact action
	SourceRevalidation   Source = "revalidation"
	SourceSandbox        Source = "sandbox" // the call asks to relax its sandbox
)

// Code is the machine-readable specific reason.
type Code string

const (
	CodeToolHidden             Code = "tool_hidden"
	CodeHardConstraint         Code = "hard_constraint"
	CodeProtectedPath          Code = "protected_path"
	CodeRestriction            Code = "restriction"
	CodeUnverifiable           Code = "unverifiable" // computed or unanalysable input might match a denial
	CodePlanMode               Code = "plan_mode"
	CodeDenyRule               Code = "deny_rule"
	CodeGrant                  Code = "grant"
	CodeUnparseable            Code = "unparseable"
	CodeOversized              Code = "oversized"
	CodeOpaque                 Code = "opaque"
	CodeAskRule                Code = "ask_rule"
	CodeAllowRule              Code = "allow_rule"
	CodeBypass                 Code = "bypass"
	CodeReadOnlyInScope        Code = "read_only_in_scope"
	CodeEditInScope            Code = "accept_edits_in_scope"
	CodeDontAsk                Code = "dont_ask"
	CodeNoRule                 Code = "no_rule"
	CodeClassifierAllow        Code = "classifier_allow"
	CodeClassifierBlock        Code = "classifier_block"
	CodeNoVerdict              Code = "no_verdict"
	CodeNoClassifier           Code = "no_classifier"
	CodeFallbackConsecutive    Code = "refusal_fallback_consecutive"
	CodeFallbackTotal          Code = "refusal_fallback_total"
	CodeApproved               Code = "approved"
	CodePolicyVersionChanged   Code = "policy_version_changed"
	CodePolicyChanged          Code = "policy_changed"
	CodeContextChanged         Code = "context_changed"
	CodeArgsChanged            Code = "args_changed"
	CodeApprovalMismatch       Code = "approval_mismatch"
	CodeNotApproved            Code = "not_approved"
	CodePreconditionChanged    Code = "precondition_changed"
	CodePreconditionUnverified Code = "precondition_unverified"
	CodeResolutionChanged      Code = "resolution_changed"    // a path leads elsewhere than when decided
	CodeResolutionUnverified   Code = "resolution_unverified" // no file system to resolve the recorded paths
	CodeTooManyPaths           Code = "too_many_paths"        // more paths than a decision can record
	CodeNotAllowed             Code = "not_allowed"           // the prior decision was a deny
	CodeSandboxRelaxation      Code = "sandbox_relaxation"    // dangerouslyDisableSandbox or network no rule allows
)

// CodeQuestion: AskUserQuestion asks the person; it changes nothing, so the
// mode default allows it where someone can answer and denies it elsewhere.
const CodeQuestion Code = "question_to_user"

// Reason is the machine-readable account of a decision.
type Reason struct {
	Source Source `json:"source"`
	Code   Code   `json:"code"`
	// Rule is the rule text that decided, if a rule did.
	Rule string `json:"rule,omitempty"`
	// Command is the part of a Bash program the reason is about.
	Command string `json:"command,omitempty"`
	// Detail is a sentence for the model and the UI.
	Detail string `json:"detail"`
	// Verdict is the classifier's verdict, when a classifier was consulted.
	Verdict *Verdict `json:"verdict,omitempty"`
	// Counter is the refusal counter after a classifier block.
	Counter *store.Counter `json:"counter,omitempty"`
	// Noninteractive: the call needed an approval but no interactive owner
	// can give one, so it is denied.
	Noninteractive bool `json:"noninteractive,omitempty"`
}

// FilePrecondition is a file's state captured at decision time. Before
// dispatch the file must still be in this state.
type FilePrecondition struct {
	Path string `json:"path"`
	// Digest is "sha256:<hex>" of the content, or "absent".
	Digest string `json:"digest"`
}

// Decision is a permission decision for one exact operation.
type Decision struct {
	ActionID   ids.ActionID         `json:"action_id"`
	SessionID  ids.SessionID        `json:"session_id"`
	Tool       string               `json:"tool"`
	Permission lifecycle.Permission `json:"permission"`
	Reason     Reason               `json:"reason"`
	// PolicyVersion and PolicyDigest identify the policy decided under.
	PolicyVersion string `json:"policy_version"`
	PolicyDigest  string `json:"policy_digest"`
	// ContextDigest fingerprints the trusted context decided in.
	ContextDigest string `json:"context_digest"`
	ArgsDigest    string `json:"args_digest"`
	// Fallback: an ask produced by the refusal fallback (classifier blocks
	// reached a threshold); completing its approval updates the counters.
	Fallback bool `json:"fallback,omitempty"`
	// Preconditions are file states the operation assumes (file edits).
	Preconditions []FilePrecondition `json:"preconditions,omitempty"`
	// Resolutions are where the paths the decision judged led through the
	// file system (symbolic links, "..") when it was made; revalidation
	// resolves them again and denies on any difference.
	Resolutions []PathResolution `json:"resolutions,omitempty"`
	// Sandbox is the profile a host tool call runs in (allow and ask; for
	// an ask, the profile that runs once approved): the policy's sandbox
	// settings, the tool's, the deciding allow rule's, and the call's own
	// relaxation (dangerouslyDisableSandbox, network). Nil for tools the
	// host does not run and for denials.
	Sandbox *sandbox.Profile `json:"sandbox,omitempty"`
	// Risk is the assessment of an ask (Config.Risk): a level and plain
	// reasons for the person deciding. It never changes the decision.
	Risk *Risk `json:"risk,omitempty"`
}

// RiskRefusal reports whether the automatic reviewer refused the call. Such
// refusals must not consume the execution-failure repeat budget: an
// identical operation must be able to reach the refusal-fallback threshold
// and its manual approval.
func (d Decision) RiskRefusal() bool {
	return d.Reason.Source == SourceClassifier && d.Reason.Code == CodeClassifierBlock ||
		d.Reason.Source == SourceCounter
}

// Authorization is what an executor needs: proof that exactly this
// operation of exactly this action was allowed under one policy version.
// Only an allow decision yields one.
type Authorization struct {
	ActionID      ids.ActionID `json:"action_id"`
	Tool          string       `json:"tool"`
	ArgsDigest    string       `json:"args_digest"`
	PolicyVersion string       `json:"policy_version"`
}

// NotAllowedError: an authorization was requested from a decision that is
// not an allow.
type NotAllowedError struct {
	ActionID   ids.ActionID
	Permission lifecycle.Permission
	Reason     Reason
}

func (e *NotAllowedError) Error() string {
	return fmt.Sprintf("action %s is not allowed (%s: %s/%s)", e.ActionID, e.Permission, e.Reason.Source, e.Reason.Code)
}

// Authorization returns the executor's authorization, or a
// *NotAllowedError for ask and deny decisions.
func (d Decision) Authorization() (Authorization, error) {
	if d.Permission != lifecycle.PermissionAllow || d.ArgsDigest == "" || d.PolicyVersion == "" {
		return Authorization{}, &NotAllowedError{ActionID: d.ActionID, Permission: d.Permission, Reason: d.Reason}
	}
	return Authorization{ActionID: d.ActionID, Tool: d.Tool, ArgsDigest: d.ArgsDigest, PolicyVersion: d.PolicyVersion}, nil
}

// Covers reports whether the authorization is for exactly this operation.
func (a Authorization) Covers(action ids.ActionID, tool, digest, version string) bool {
	return a.ActionID == action && a.Tool == tool && a.ArgsDigest == digest && a.PolicyVersion == version
}

// ApprovalStatus is the state of a durable approval wait.
type ApprovalStatus string

const (
	ApprovalPending    ApprovalStatus = "pending"
	ApprovalApproved   ApprovalStatus = "approved"
	ApprovalDeclined   ApprovalStatus = "declined"
	ApprovalExpired    ApprovalStatus = "expired"
	ApprovalCancelled  ApprovalStatus = "cancelled"
	ApprovalSuperseded ApprovalStatus = "superseded"
)

// ApprovalEvidence is a human's answer to one approval wait, bound to the
// action, the exact argument digest and the policy version it was asked
// under.
type ApprovalEvidence struct {
	ApprovalID    ids.ApprovalID `json:"approval_id"`
	ActionID      ids.ActionID   `json:"action_id"`
	ArgsDigest    string         `json:"args_digest"`
	PolicyVersion string         `json:"policy_version"`
	Status        ApprovalStatus `json:"status"`
	// DecidedBy is the authenticated human principal who answered.
	DecidedBy string `json:"decided_by"`
}

// InvalidCallError: the call cannot be judged (bad arguments, missing
// fields, a digest that does not match the arguments). Structured so the
// model can correct it.
type InvalidCallError struct {
	ActionID ids.ActionID
	Tool     string
	Field    string
	Msg      string
}

func (e *InvalidCallError) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("call %s of %s: %s: %s", e.ActionID, e.Tool, e.Field, e.Msg)
	}
	return fmt.Sprintf("call %s of %s: %s", e.ActionID, e.Tool, e.Msg)
}
