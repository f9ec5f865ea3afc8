package permission

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/openprogram/lifecycle/shared/identity"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/store"
)

// Config configures an Engine.
type Config struct {
	// Classifier reviews calls in auto mode (riskreview.New() is the
	// default the service wires; riskreview.New(riskreview.WithModel(m))
	// sends what it cannot prove safe to a model such as bedrockreview).
	// Nil: auto-mode calls that need a review are asked (interactive) or
	// denied with CodeNoClassifier.
	Classifier Classifier
	// Counters holds the durable refusal counters; required with a
	// Classifier.
	Counters CounterStore
	// FS is the file system the tools run against: every path a decision
	// judges is resolved through it (symbolic links, ".."; see Scope), and
	// the preconditions of file edits are captured and checked with it.
	// Nil: paths are judged lexically and no preconditions are captured
	// (the executor's host must check links and preconditions itself).
	FS FS
	// Contracts compute argument digests; nil means identity.Builtin.
	Contracts identity.Contracts
	// Thresholds of the refusal fallback; zero means DefaultThresholds.
	Thresholds Thresholds
	// ReviewTimeout bounds one classifier review; zero means 30 seconds.
	ReviewTimeout time.Duration
	// ProtectedPaths are paths no call may read, write, delete or list,
	// through any tool or program (the service's state directory, its
	// keys): absolute, or "~/..." under the trusted context's home. A call
	// that names one (or walks a directory above it) is a hard-constraint
	// denial nothing lifts; a call that might reach one without naming it
	// (computed words, inline interpreter code, a shell reading stdin) is
	// never allowed (CodeUnverifiable). See protect.go.
	ProtectedPaths []string
	// CredentialStores are protected like ProtectedPaths. Nil means
	// DefaultCredentialStores(); an empty, non-nil slice protects none.
	CredentialStores []string
	// Risk grades every ask decision (Decision.Risk), in every mode. Nil
	// means the Classifier when it is also a RiskAssessor (riskreview is).
	Risk RiskAssessor
}

// Engine decides permissions. It keeps no cache of decisions: every
// Decide and Revalidate judges the exact call against the policy it is
// given. It is safe for concurrent use.
type Engine struct {
	cfg     Config
	protect *protector
}

// NewEngine checks cfg and builds an engine.
func NewEngine(cfg Config) (*Engine, error) {
	if cfg.Classifier != nil && cfg.Counters == nil {
		return nil, errors.New("permission engine: a classifier needs durable refusal counters (Config.Counters)")
	}
	if cfg.Contracts == nil {
		cfg.Contracts = identity.Builtin
	}
	if cfg.Thresholds == (Thresholds{}) {
		cfg.Thresholds = DefaultThresholds
	}
	if cfg.Thresholds.Consecutive <= 0 || cfg.Thresholds.Total <= 0 {
		return nil, fmt.Errorf("permission engine: thresholds must be positive, got %+v", cfg.Thresholds)
	}
	if cfg.ReviewTimeout <= 0 {
		cfg.ReviewTimeout = 30 * time.Second
	}
	if cfg.Risk == nil {
		cfg.Risk, _ = cfg.Classifier.(RiskAssessor)
	}
	creds := cfg.CredentialStores
	if creds == nil {
		creds = DefaultCredentialStores()
	}
	prot, err := newProtector(cfg.ProtectedPaths, creds)
	if err != nil {
		return nil, err
	}
	return &Engine{cfg: cfg, protect: prot}, nil
}

// evalCtx is one prepared request.
type evalCtx struct {
	req      Request
	pol      *Policy
	scope    Scope
	view     callView
	digest   string
	bash     *bashEval
	argsSize int
}

// prepare validates the request and reads the call. Problems with the
// trusted context or policy are plain errors; problems with the call are
// *InvalidCallError.
func (e *Engine) prepare(req Request) (*evalCtx, error) {
	if err := req.Policy.validate(); err != nil {
		return nil, fmt.Errorf("decide action %s: %w", req.Call.ActionID, err)
	}
	t := req.Trusted
	if err := ids.Validate("session id", string(t.SessionID)); err != nil {
		return nil, fmt.Errorf("decide action %s: trusted context: %w", req.Call.ActionID, err)
	}
	if !path.IsAbs(t.ProjectRoot) || !path.IsAbs(t.WorkingDir) {
		return nil, fmt.Errorf("decide action %s: trusted context needs absolute project_root and working_dir, got %q and %q", req.Call.ActionID, t.ProjectRoot, t.WorkingDir)
	}
	if t.HomeDir != "" && !path.IsAbs(t.HomeDir) {
		return nil, fmt.Errorf("decide action %s: trusted home_dir %q is not absolute", req.Call.ActionID, t.HomeDir)
	}
	if t.HomeDir == "" {
		if r, ok := homeRule(req.Policy); ok {
			return nil, fmt.Errorf("decide action %s: rule %q needs the trusted context's home_dir", req.Call.ActionID, r.Text)
		}
	}
	c := req.Call
	if err := ids.Validate("action id", string(c.ActionID)); err != nil {
		return nil, &InvalidCallError{ActionID: c.ActionID, Tool: c.Tool, Field: "action_id", Msg: err.Error()}
	}
	id, err := e.cfg.Contracts.Of(c.Tool, c.Args)
	if err != nil {
		return nil, &InvalidCallError{ActionID: c.ActionID, Tool: c.Tool, Field: "args", Msg: err.Error()}
	}
	if c.Digest != "" && c.Digest != id.Digest {
		return nil, &InvalidCallError{ActionID: c.ActionID, Tool: c.Tool, Field: "digest", Msg: fmt.Sprintf("digest %s does not match the arguments (%s)", c.Digest, id.Digest)}
	}
	view, err := viewCall(c)
	if err != nil {
		return nil, err
	}
	x := &evalCtx{
		req: req, pol: req.Policy, scope: NewScopeFS(t, req.Policy.AdditionalDirectories, e.cfg.FS),
		view: view, digest: id.Digest, argsSize: len(c.Args),
	}
	if view.fam == famBash {
		x.bash = newBashEval(view.command)
		x.scope = x.scope.Chdir(view.cwd) // the Bash tool's cwd argument
	}
	return x, nil
}

// homeRule finds a rule whose path is under "~".
func homeRule(p *Policy) (Rule, bool) {
	for _, list := range [][]Rule{p.HardConstraints, p.Restrictions, p.Deny, p.Ask, p.Allow} {
		for _, r := range list {
			if r.kind == kindPath && (r.path == "~" || strings.HasPrefix(r.path, "~/")) {
				return r, true
			}
		}
	}
	return Rule{}, false
}

// outcome of the rule evaluation, before classifier and interactivity.
type outcome int

const (
	outDeny   outcome = iota
	outHuman          // needs a human: ask when interactive, deny otherwise
	outAllow          // allowed by a rule, grant or mode
	outReview         // auto mode: the classifier decides
)

type result struct {
	out    outcome
	reason Reason
}

// evaluate applies the policy, in precedence order:
//
//  1. visibility: a tool hidden by a whole-tool deny is denied
//  2. hard constraints and protected paths: deny, never a prompt
//  3. the owner's restrictions: deny, never a prompt
//  4. plan mode: deny anything not read-only
//  5. deny rules
//  6. grants for exactly this operation (allow)
//  7. input that cannot be analysed (oversized, unparseable, opaque Bash):
//     needs a human; never allowed by a rule, mode or classifier
//  8. ask rules: need a human
//  9. allow rules
//  10. the mode's defaults (bypass, read-only in scope, acceptEdits,
//     auto review, dontAsk, otherwise a human)
//  11. the sandbox: an allow (other than a grant of exactly this call)
//     of a Bash call that relaxes its sandbox beyond what the policy,
//     the tool's and the allow rule's sandbox settings give needs a human
//     (SourceSandbox); a profile whose extra paths open a protected path
//     is a hard-constraint denial
//
// A rule in 2, 3 or 5 that the input might match (a computed word, an
// unparseable program) denies with CodeUnverifiable: an explicit denial
// is never turned into a question because the input hid what it does.
func (e *Engine) evaluate(x *evalCtx) result {
	res := x.relaxed(e.evaluateRules(x))
	if res.out != outDeny {
		if r, bad := e.protectedProfile(x, x.profile(res)); bad {
			return result{outDeny, r}
		}
	}
	return res
}

// evaluateRules is evaluate before the sandbox: a relaxation no rule
// allows (x.relaxed) turns its allow into a question, and a profile that
// opens a protected path into a denial.
func (e *Engine) evaluateRules(x *evalCtx) result {
	tool := x.req.Call.Tool
	pol := x.pol
	if r, src, hidden := HiddenBy(pol, tool); hidden {
		return result{outDeny, Reason{Source: SourceVisibility, Code: CodeToolHidden, Rule: r.Text,
			Detail: fmt.Sprintf("%s is not available: the whole tool is denied by %s %s", tool, src, r.Text)}}
	}
	// A rule that might match (computed or unanalysable input) is held
	// back: a definite denial found later still wins, and otherwise a person
	// decides with the rule named; such input is never allowed.
	var unverified *Reason
	denyLists := []struct {
		rules []Rule
		src   Source
		code  Code
	}{
		{pol.HardConstraints, SourceHardConstraint, CodeHardConstraint},
		{nil, SourceHardConstraint, CodeProtectedPath}, // protected paths (protect.go), in their place
		{pol.Restrictions, SourceRestriction, CodeRestriction},
		{nil, SourceMode, CodePlanMode}, // plan mode, in its place
		{pol.Deny, SourceDenyRule, CodeDenyRule},
	}
	for _, l := range denyLists {
		if l.code == CodePlanMode {
			if pol.Mode == ModePlan && !x.readOnly() {
				return result{outDeny, Reason{Source: SourceMode, Code: CodePlanMode,
					Detail: "plan mode allows only read-only operations; this call may change something"}}
			}
			continue
		}
		if l.code == CodeProtectedPath {
			if t, ok := e.protectedTouch(x); ok && !t.possible {
				return result{outDeny, protectReason(t)}
			} else if ok && unverified == nil {
				r := protectReason(t)
				unverified = &r
			}
			continue
		}
		h, ok := x.matchConservative(l.rules)
		if !ok {
			continue
		}
		r := denyReason(l.src, l.code, h)
		if !h.possible {
			return result{outDeny, r}
		}
		if unverified == nil {
			unverified = &r
		}
	}
	if unverified != nil {
		return result{outHuman, *unverified}
	}
	for _, g := range pol.Grants {
		if g.Covers(tool, x.digest, pol.Version) {
			return result{outAllow, Reason{Source: SourceGrant, Code: CodeGrant,
				Detail: "a grant allows exactly this operation under this policy version"}}
		}
	}
	if x.argsSize > MaxReviewBytes {
		return result{outHuman, Reason{Source: SourceAnalysis, Code: CodeOversized,
			Detail: fmt.Sprintf("the arguments are %d bytes, more than the reviewable %d bytes; only a person can approve them", x.argsSize, MaxReviewBytes)}}
	}
	if x.bash != nil {
		if code, why, ok := x.bash.unanalysable(); ok {
			return result{outHuman, Reason{Source: SourceAnalysis, Code: code, Detail: why}}
		}
	}
	if h, ok := x.matchConservative(pol.Ask); ok {
		return result{outHuman, Reason{Source: SourceAskRule, Code: CodeAskRule, Rule: h.rule.Text, Command: h.what,
			Detail: fmt.Sprintf("ask rule %s requires approval for %s", h.rule.Text, h.what)}}
	}
	h, ok, why := x.matchAllow(pol.Allow)
	if ok {
		return result{outAllow, Reason{Source: SourceAllowRule, Code: CodeAllowRule, Rule: h.rule.Text,
			Detail: "allowed by " + h.rule.Text}}
	}
	return e.modeDefault(x, why)
}

func denyReason(src Source, code Code, h hit) Reason {
	if h.possible {
		return Reason{Source: src, Code: CodeUnverifiable, Rule: h.rule.Text, Command: h.what,
			Detail: fmt.Sprintf("%s is computed at run time and may match %s %s; only a person can approve it (or rewrite it with literal values)", h.what, src, h.rule.Text)}
	}
	return Reason{Source: src, Code: code, Rule: h.rule.Text, Command: h.what,
		Detail: fmt.Sprintf("%s is denied by %s %s", h.what, src, h.rule.Text)}
}

func (e *Engine) modeDefault(x *evalCtx, why string) result {
	mode := x.pol.Mode
	if canonicalTool(x.req.Call.Tool) == identity.QuestionTool {
		// Asking the person a question has no effect outside the
		// conversation, and the person answering it is the approval: one
		// prompt, not two. Nobody can answer without an owner present, and
		// dontAsk asks nobody.
		if x.req.Trusted.Interactive && mode != ModeDontAsk {
			return result{outAllow, Reason{Source: SourceMode, Code: CodeQuestion, Detail: "a question to the user changes nothing; the user's answer is the decision"}}
		}
		return result{outDeny, Reason{Source: SourceMode, Code: CodeQuestion, Detail: "nobody can answer a question here (noninteractive or dontAsk)"}}
	}
	if mode == ModeBypass {
		return result{outAllow, Reason{Source: SourceMode, Code: CodeBypass, Detail: "bypassPermissions mode allows what no rule stops"}}
	}
	if x.view.fam == famRead && x.pathsInScope() {
		return result{outAllow, Reason{Source: SourceMode, Code: CodeReadOnlyInScope, Detail: "read-only file access inside the project scope"}}
	}
	if mode == ModeAcceptEdits && x.view.fam == famEdit && x.pathsInScope() {
		return result{outAllow, Reason{Source: SourceMode, Code: CodeEditInScope, Detail: "acceptEdits mode allows file edits inside the project scope"}}
	}
	if mode == ModeAuto {
		return result{outReview, Reason{Source: SourceClassifier}}
	}
	detail := "no rule allows this call"
	if why != "" {
		detail = why
	}
	return result{outHuman, Reason{Source: SourceMode, Code: CodeNoRule, Detail: detail}}
}

// readOnly: the call cannot change anything (plan mode).
func (x *evalCtx) readOnly() bool {
	if canonicalTool(x.req.Call.Tool) == identity.QuestionTool {
		return true // a question changes nothing
	}
	switch x.view.fam {
	case famRead:
		return true
	case famBash:
		return x.bash.err == nil && x.bash.prog.ReadOnly()
	}
	return false
}

func (x *evalCtx) pathsInScope() bool {
	if len(x.view.paths) == 0 {
		return false
	}
	for _, p := range x.view.paths {
		abs, ok := x.scope.Resolve(p)
		if !ok || !x.scope.Contains(abs) {
			return false
		}
	}
	return true
}

// Decide judges one call. It returns:
//
//   - deny for hard constraints, restrictions, plan mode, deny rules, a
//     hidden tool, classifier blocks below the fallback threshold, and every
//     ask when Trusted.Interactive is false (Reason.Noninteractive) or the
//     mode is dontAsk;
//   - ask only for an interactive owner: ask rules, unanalysable input, no
//     rule in default/acceptEdits/plan mode, the refusal fallback
//     (Fallback=true), or a classifier that gave no verdict;
//   - allow for grants, allow rules, mode defaults and classifier allows.
//
// Errors: *InvalidCallError for a call that cannot be judged; a wrapped
// *NoVerdictError when ctx itself is cancelled during the review (the
// caller retries; nothing was counted); a wrapped store error when a
// counter cannot be written. An error never means allow.
func (e *Engine) Decide(ctx context.Context, req Request) (Decision, error) {
	x, err := e.prepare(req)
	if err != nil {
		return Decision{}, err
	}
	d, err := e.decide(ctx, x)
	if d.Permission == lifecycle.PermissionDeny {
		d.Sandbox = nil // nothing runs
	}
	if err == nil && d.Permission == lifecycle.PermissionAsk {
		// Every ask carries its risk for the person deciding; the
		// assessment never changes the decision.
		d.Risk = e.assess(ctx, x, d)
	}
	return d, err
}

func (e *Engine) decide(ctx context.Context, x *evalCtx) (Decision, error) {
	res := e.evaluate(x)
	d := e.decision(x, res)
	switch res.out {
	case outDeny:
		return d, nil
	case outHuman:
		return e.human(x, d), nil
	case outAllow:
		if err := e.countAllow(ctx, x); err != nil {
			return Decision{}, err
		}
		return e.withPreconditions(x, d)
	}
	return e.review(ctx, x, d)
}

func (e *Engine) decision(x *evalCtx, res result) Decision {
	d := Decision{
		ActionID:      x.req.Call.ActionID,
		SessionID:     x.req.Trusted.SessionID,
		Tool:          x.req.Call.Tool,
		Reason:        res.reason,
		PolicyVersion: x.pol.Version,
		PolicyDigest:  x.pol.Digest(),
		ContextDigest: contextDigest(x.req.Trusted),
		ArgsDigest:    x.digest,
	}
	if res.out != outDeny {
		d.Sandbox = x.profile(res)
	}
	switch res.out {
	case outDeny:
		d.Permission = lifecycle.PermissionDeny
	case outAllow:
		d.Permission = lifecycle.PermissionAllow
	case outHuman:
		d.Permission = lifecycle.PermissionAsk
	}
	return d
}

// human turns "needs a human" into ask for an interactive owner, or into
// the precise denial otherwise.
func (e *Engine) human(x *evalCtx, d Decision) Decision {
	switch {
	case x.pol.Mode == ModeDontAsk:
		d.Permission = lifecycle.PermissionDeny
		d.Reason.Detail += "; dontAsk mode denies instead of asking"
		if d.Reason.Source == SourceMode {
			d.Reason.Code = CodeDontAsk
		}
		d.Fallback = false
		return d
	case !x.req.Trusted.Interactive:
		d.Permission = lifecycle.PermissionDeny
		d.Reason.Noninteractive = true
		d.Reason.Detail += "; this needs an approval and no interactive owner can give one"
		return d
	}
	d.Permission = lifecycle.PermissionAsk
	out, err := e.withPreconditions(x, d)
	if err != nil {
		// Without a precondition the approval would be checked against
		// nothing; deny rather than ask for an edit we cannot pin.
		d.Permission = lifecycle.PermissionDeny
		d.Reason = Reason{Source: SourceRevalidation, Code: CodePreconditionUnverified, Detail: err.Error()}
		return d
	}
	return out
}

// contextDigest fingerprints the trusted context a decision depends on:
// session, directories and the owner's restrictions. The owner's request
// text and interactivity are not included: a new message or a reconnect
// does not change what an approved call does.
func contextDigest(t Trusted) string {
	b, _ := json.Marshal(struct {
		S  ids.SessionID
		W  string
		P  string
		H  string
		Rs []string
	}{t.SessionID, t.WorkingDir, t.ProjectRoot, t.HomeDir, t.Restrictions})
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// review asks the classifier (auto mode) and applies the refusal fallback.
func (e *Engine) review(ctx context.Context, x *evalCtx, d Decision) (Decision, error) {
	if e.cfg.Classifier == nil {
		d.Reason = Reason{Source: SourceClassifier, Code: CodeNoClassifier, Detail: "auto mode has no automatic reviewer configured"}
		return e.human(x, d), nil
	}
	in := e.reviewInput(x)
	rctx, cancel := context.WithTimeout(ctx, e.cfg.ReviewTimeout)
	v, err := e.cfg.Classifier.Review(rctx, in)
	if err == nil && !v.Valid() {
		err = &NoVerdictError{Reviewer: v.Reviewer, Kind: NoVerdictUnparseable, Err: fmt.Errorf("verdict %q is not allow, block or unproven", v.Kind)}
	}
	var nv *NoVerdictError
	if err != nil {
		nv = AsNoVerdict(rctx, "classifier", err) // before cancel: rctx tells a timeout apart
	}
	cancel()
	if ctx.Err() != nil {
		// The request itself was cancelled: no decision at all.
		return Decision{}, fmt.Errorf("review action %s: %w", x.req.Call.ActionID, AsNoVerdict(ctx, "classifier", ctx.Err()))
	}
	if nv != nil {
		d.Reason = Reason{Source: SourceClassifier, Code: CodeNoVerdict,
			Detail: "the automatic review gave no verdict: " + nv.Error() + "; the call was not executed"}
		return e.human(x, d), nil
	}
	vv := v
	if v.Kind == VerdictUnproven {
		// Not a refusal: a person decides, and no counter changes.
		d.Reason = Reason{Source: SourceClassifier, Code: CodeNotProvenSafe, Verdict: &vv,
			Detail: "the automatic review could not prove it safe: " + v.Reason}
		return e.human(x, d), nil
	}
	if v.Kind == VerdictAllow && x.view.relax.exceeds(x.baseProfile(result{})) {
		// The reviewer never allows a relaxed sandbox on its own.
		d.Reason = x.relaxReason("", "allowed by the automatic review ("+v.Reason+")")
		d.Reason.Verdict = &vv
		return e.human(x, d), nil
	}
	if v.Kind == VerdictAllow {
		if err := e.countAllow(ctx, x); err != nil {
			return Decision{}, err
		}
		d.Permission = lifecycle.PermissionAllow
		d.Reason = Reason{Source: SourceClassifier, Code: CodeClassifierAllow, Verdict: &vv, Detail: "the automatic review allowed it: " + v.Reason}
		return e.withPreconditions(x, d)
	}
	c, err := e.count(ctx, x, store.CounterBlock)
	if err != nil {
		return Decision{}, err
	}
	code, fallback := e.cfg.Thresholds.reached(c)
	d.Permission = lifecycle.PermissionDeny
	d.Reason = Reason{Source: SourceClassifier, Code: CodeClassifierBlock, Verdict: &vv, Counter: &c,
		Detail: "the automatic review blocked it: " + v.Reason}
	if !fallback {
		return d, nil
	}
	if !x.req.Trusted.Interactive || x.pol.Mode == ModeDontAsk {
		d.Reason.Noninteractive = true
		d.Reason.Detail += fmt.Sprintf("; the refusal threshold is reached (%d consecutive, %d total) but no interactive owner can approve", c.Consecutive, c.Total)
		return d, nil
	}
	d.Permission = lifecycle.PermissionAsk
	d.Fallback = true
	d.Reason = Reason{Source: SourceCounter, Code: code, Verdict: &vv, Counter: &c,
		Detail: fmt.Sprintf("the automatic review blocked it (%s); after %d consecutive and %d total blocks a person decides", v.Reason, c.Consecutive, c.Total)}
	return e.withPreconditions(x, d)
}
