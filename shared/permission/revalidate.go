package permission

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"github.com/openprogram/lifecycle/shared/lifecycle"
)

// FS is the engine's read-only view of the file system the tools run
// against: file contents for preconditions, Lstat and Readlink to resolve
// paths through symbolic links (Physical), ReadDir to expand globs. Names are absolute.
// The permission package reads the file system only through an FS and
// never executes anything. os-backed: OSFS; tests may use an in-memory
// implementation.
type FS interface {
	ReadFile(name string) ([]byte, error)
	// Lstat describes name without following a final symbolic link.
	Lstat(name string) (fs.FileInfo, error)
	// Readlink returns the target of the symbolic link name.
	Readlink(name string) (string, error)
	// ReadDir lists a directory (to expand the globs of Bash paths).
	ReadDir(name string) ([]fs.DirEntry, error)
}

// OSFS reads the local file system.
type OSFS struct{}

// ReadFile reads a file with os.ReadFile.
func (OSFS) ReadFile(name string) ([]byte, error) { return os.ReadFile(name) }

// Lstat calls os.Lstat.
func (OSFS) Lstat(name string) (fs.FileInfo, error) { return os.Lstat(name) }

// Readlink calls os.Readlink.
func (OSFS) Readlink(name string) (string, error) { return os.Readlink(name) }

// ReadDir calls os.ReadDir.
func (OSFS) ReadDir(name string) ([]fs.DirEntry, error) { return os.ReadDir(name) }

// isNotDir: a component of the path is not a directory (lookup of
// "file/x"); like a missing component, the rest cannot exist yet.
func isNotDir(err error) bool { return errors.Is(err, syscall.ENOTDIR) }

// Absent is the digest of a file that does not exist.
const Absent = "absent"

// FileDigest is "sha256:<hex>" of a file's content, or Absent.
func FileDigest(fsys FS, name string) (string, error) {
	b, err := fsys.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return Absent, nil
	}
	if err != nil {
		return "", fmt.Errorf("read %s for its precondition: %w", name, err)
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// PreconditionError: a file is no longer in the state a decision assumed.
type PreconditionError struct {
	Path           string
	Want, Observed string
}

func (e *PreconditionError) Error() string {
	return fmt.Sprintf("%s changed since the decision (was %s, now %s)", e.Path, e.Want, e.Observed)
}

// CheckPreconditions verifies that every file is still as captured. The
// host can call it immediately before running an edit.
func CheckPreconditions(fsys FS, pre []FilePrecondition) error {
	for _, p := range pre {
		got, err := FileDigest(fsys, p.Path)
		if err != nil {
			return err
		}
		if got != p.Digest {
			return &PreconditionError{Path: p.Path, Want: p.Digest, Observed: got}
		}
	}
	return nil
}

// withPreconditions captures the state of the files a file edit touches,
// and records where every path the decision judged led (Resolutions).
// Decide calls it for every allow and ask.
func (e *Engine) withPreconditions(x *evalCtx, d Decision) (Decision, error) {
	if e.cfg.FS == nil {
		return d, nil
	}
	x.resolveAll()
	if rs := x.scope.Resolutions(); len(rs) > MaxResolutions {
		// Unbindable: an approval or an allow would cover paths nobody
		// can check again before dispatch.
		d.Permission = lifecycle.PermissionDeny
		d.Reason = Reason{Source: SourceAnalysis, Code: CodeTooManyPaths,
			Detail: fmt.Sprintf("the call names %d paths, more than the %d a decision can bind to where they lead; split it into smaller calls", len(rs), MaxResolutions)}
		d.Fallback = false
		return d, nil
	}
	if x.view.fam != famEdit {
		d.Resolutions = x.scope.Resolutions()
		return d, nil
	}
	for _, p := range x.view.paths {
		abs, ok := x.scope.Resolve(p)
		if !ok {
			continue
		}
		dg, err := FileDigest(e.cfg.FS, abs)
		if err != nil {
			return Decision{}, fmt.Errorf("decide action %s: %w", d.ActionID, err)
		}
		d.Preconditions = append(d.Preconditions, FilePrecondition{Path: abs, Digest: dg})
	}
	d.Resolutions = x.scope.Resolutions()
	return d, nil
}

// resolveAll resolves every path the call names, including those no rule
// needed to look at, so that the decision (and an approval of it) is
// bound to the files they led to: a human who approved "touch sub/x"
// approved it for the directory sub was then.
func (x *evalCtx) resolveAll() {
	for _, p := range x.view.paths {
		x.scope.Names(p)
	}
	if x.bash == nil || x.bash.err != nil {
		return
	}
	for _, ref := range x.bash.prog.PathRefs() {
		x.scope.BashPath(x.bash.prog, ref.Path)
	}
}

// Revalidate re-checks a decision immediately before dispatch, against the
// live policy and trusted context in req:
//
//   - the policy version and fingerprint are unchanged (a mode or rule
//     change during review or approval invalidates the decision);
//   - the trusted context is unchanged;
//   - the arguments have exactly the decided digest (a grant or approval for
//     one action never authorizes a modified command);
//   - for an ask, the approval is approved, by a named principal, for this
//     action id, digest and policy version;
//   - the live rules still do not deny it (a revocation takes effect);
//   - every path the decision judged still resolves (symbolic links, "..")
//     to where it did (Decision.Resolutions);
//   - the files a file edit touches are unchanged.
//
// It returns allow (possibly with SourceApproval) or a deny whose reason
// names what failed; it never returns ask and never calls the classifier
// or counts a refusal. For an approved fallback it records the completed
// approval in the refusal counters (ApprovalCompleted).
func (e *Engine) Revalidate(ctx context.Context, prior Decision, approval ApprovalEvidence, req Request) (Decision, error) {
	x, err := e.prepare(req)
	if err != nil {
		return Decision{}, err
	}
	d := e.decision(x, result{out: outDeny})
	d.Fallback = prior.Fallback
	deny := func(code Code, format string, a ...any) (Decision, error) {
		d.Permission = lifecycle.PermissionDeny
		d.Reason = Reason{Source: SourceRevalidation, Code: code, Detail: fmt.Sprintf(format, a...)}
		return d, nil
	}
	switch {
	case prior.ActionID != req.Call.ActionID || prior.Tool != req.Call.Tool:
		return deny(CodeArgsChanged, "the decision is for action %s (%s), not %s (%s)", prior.ActionID, prior.Tool, req.Call.ActionID, req.Call.Tool)
	case prior.Permission != lifecycle.PermissionAllow && prior.Permission != lifecycle.PermissionAsk:
		return deny(CodeNotAllowed, "the decision was %q; only allow and approved ask decisions can be dispatched", prior.Permission)
	case prior.ArgsDigest != x.digest:
		return deny(CodeArgsChanged, "the arguments changed since the decision (%s, now %s)", prior.ArgsDigest, x.digest)
	case prior.PolicyVersion != x.pol.Version:
		return deny(CodePolicyVersionChanged, "the policy changed from version %s to %s; the call must be decided again", prior.PolicyVersion, x.pol.Version)
	case prior.PolicyDigest != d.PolicyDigest:
		return deny(CodePolicyChanged, "the policy (mode, rules or grants) changed under version %s; the call must be decided again", x.pol.Version)
	case prior.ContextDigest != d.ContextDigest:
		return deny(CodeContextChanged, "the trusted context (directories, restrictions) changed since the decision")
	}
	approved := false
	if prior.Permission == lifecycle.PermissionAsk {
		switch {
		case approval.ActionID != prior.ActionID || approval.ArgsDigest != prior.ArgsDigest || approval.PolicyVersion != prior.PolicyVersion:
			return deny(CodeApprovalMismatch, "approval %s is for action %s (%s, policy %s), not this operation", approval.ApprovalID, approval.ActionID, approval.ArgsDigest, approval.PolicyVersion)
		case approval.ApprovalID == "" || approval.DecidedBy == "":
			return deny(CodeApprovalMismatch, "the approval names no approval id or no deciding principal")
		}
		if err := e.ApprovalCompleted(ctx, prior, approval); err != nil {
			return Decision{}, err
		}
		if approval.Status != ApprovalApproved {
			return deny(CodeNotApproved, "approval %s is %s, not approved", approval.ApprovalID, approval.Status)
		}
		approved = true
	}
	if len(prior.Resolutions) > 0 {
		// The decision (and any approval) was for the files its paths led
		// to then: a link created, removed or swapped since is a new call.
		// Without a file system, a decision with preconditions is denied
		// below for those (the older, more specific reason).
		switch {
		case e.cfg.FS == nil && len(prior.Preconditions) == 0:
			return deny(CodeResolutionUnverified, "the decision resolved its paths through the file system and no file system is configured to resolve them again")
		case e.cfg.FS != nil:
			if err := CheckResolutions(e.cfg.FS, prior.Resolutions); err != nil {
				return deny(CodeResolutionChanged, "%v; the call must be decided again", err)
			}
		}
	}
	res := e.evaluate(x)
	switch {
	case res.out == outDeny:
		d.Reason = res.reason
		d.Reason.Detail = "revalidation: " + d.Reason.Detail
		return d, nil
	case res.out == outAllow:
		d.Reason = res.reason
	case approved:
		d.Reason = Reason{Source: SourceApproval, Code: CodeApproved,
			Detail: fmt.Sprintf("approved by %s (approval %s)", approval.DecidedBy, approval.ApprovalID)}
	case res.out == outReview && prior.Reason.Source == SourceClassifier && prior.Reason.Code == CodeClassifierAllow:
		// The classifier's verdict is bound to this digest, policy and
		// context, all verified unchanged above.
		d.Reason = prior.Reason
	default:
		return deny(CodeNotAllowed, "the call is no longer allowed without an approval: %s", res.reason.Detail)
	}
	// The profile is chosen again from the live policy (its digest is
	// unchanged, so it is the one decided), approved relaxation included.
	d.Sandbox = x.profile(res)
	if len(prior.Preconditions) > 0 {
		if e.cfg.FS == nil {
			return deny(CodePreconditionUnverified, "the decision has file preconditions and no file system is configured to check them")
		}
		if err := CheckPreconditions(e.cfg.FS, prior.Preconditions); err != nil {
			var pe *PreconditionError
			if errors.As(err, &pe) {
				return deny(CodePreconditionChanged, "%v", pe)
			}
			return Decision{}, fmt.Errorf("revalidate action %s: %w", prior.ActionID, err)
		}
	}
	d.Permission = lifecycle.PermissionAllow
	d.Preconditions = prior.Preconditions
	d.Resolutions = prior.Resolutions
	return d, nil
}
