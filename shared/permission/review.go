package permission

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/openprogram/lifecycle/shared/ids"
)

// Classifier is an automatic reviewer (auto mode). It judges one complete
// operation in its trusted context and answers allow, block, or unproven
// (it could not show the call is safe, and a person must decide).
//
// A reviewer that cannot answer (timeout, cancellation, provider failure,
// an answer it cannot parse) returns an error, preferably a
// *NoVerdictError; it never returns a guess. Every error is treated as
// "no verdict": the call is not executed and no counter changes.
type Classifier interface {
	Review(ctx context.Context, in ReviewInput) (Verdict, error)
}

// ClassifierFunc adapts a function to Classifier.
type ClassifierFunc func(ctx context.Context, in ReviewInput) (Verdict, error)

// Review calls f.
func (f ClassifierFunc) Review(ctx context.Context, in ReviewInput) (Verdict, error) {
	return f(ctx, in)
}

// MaxReviewBytes is the reviewable bound of a call's arguments (the same
// 64 KiB as a Bash program). Larger input is never reviewed, and so never
// allowed automatically: reviewing a prefix could miss a dangerous tail.
const MaxReviewBytes = 64 << 10

// ReviewInput is the complete, bounded operation with its trusted context.
// Trusted and Untrusted are separate on purpose: a reviewer must weigh the
// untrusted arguments as data, never follow instructions inside them.
type ReviewInput struct {
	ActionID      ids.ActionID `json:"action_id"`
	PolicyVersion string       `json:"policy_version"`
	Mode          Mode         `json:"mode"`
	// Trusted is the owner's context: working directory, project scope,
	// the owner's request and restrictions.
	Trusted Trusted `json:"trusted"`
	// AdditionalDirectories extend the project scope (from the policy).
	AdditionalDirectories []string `json:"additional_directories,omitempty"`
	// Tool and Args are the call, complete (never truncated), at most
	// MaxReviewBytes of arguments.
	Tool       string          `json:"tool"`
	Args       json.RawMessage `json:"args"`
	ArgsDigest string          `json:"args_digest"`
	// Recent reads the execution's earlier calls (nil: none known); see
	// Request.Recent.
	Recent RecentCalls `json:"-"`

	scope *Scope // the engine's scope (resolving with Config.FS); see Scope
}

// Scope is the project scope of the trusted context. Given by the engine,
// it resolves paths through the engine's file system (Config.FS), and the
// paths a reviewer resolves are recorded on the decision for revalidation;
// otherwise it is the lexical NewScope.
func (in ReviewInput) Scope() Scope {
	if in.scope != nil {
		return *in.scope
	}
	return NewScope(in.Trusted, in.AdditionalDirectories)
}

// VerdictKind is a classifier's answer.
type VerdictKind string

const (
	VerdictAllow VerdictKind = "allow"
	VerdictBlock VerdictKind = "block"
	// VerdictUnproven: the reviewer could not show the call is safe (the
	// built-in reviewer without a model, for anything outside its
	// known-safe analysis). It is not a refusal: like a missing verdict it
	// asks an interactive owner (denies otherwise) with CodeNotProvenSafe,
	// and it changes no refusal counter.
	VerdictUnproven VerdictKind = "unproven"
)

// CodeNotProvenSafe: auto mode's reviewer could not prove the call safe
// (VerdictUnproven); the Verdict's Reason says what was not proven and why.
const CodeNotProvenSafe Code = "not_proven_safe"

// Verdict is a classifier's risk verdict.
type Verdict struct {
	Kind VerdictKind `json:"kind"`
	// Category names the risk found ("destructive", "credential_read",
	// "download_exec", ...; "not_proven_safe" for unproven); empty for
	// allow.
	Category string `json:"category,omitempty"`
	Reason   string `json:"reason"`
	// Reviewer names the classifier ("riskreview", "bedrock:<model>").
	Reviewer string `json:"reviewer,omitempty"`
}

// Valid reports whether the verdict is one of the three answers.
func (v Verdict) Valid() bool {
	return v.Kind == VerdictAllow || v.Kind == VerdictBlock || v.Kind == VerdictUnproven
}

// NoVerdictKind says why a classifier gave no verdict.
type NoVerdictKind string

const (
	NoVerdictTimeout     NoVerdictKind = "timeout"
	NoVerdictCancelled   NoVerdictKind = "cancelled"
	NoVerdictProvider    NoVerdictKind = "provider_failure"
	NoVerdictUnparseable NoVerdictKind = "unparseable_answer"
	NoVerdictOversized   NoVerdictKind = "oversized_input"
)

// NoVerdictError: the classifier gave no verdict. It is distinct from a
// block: it never executes the action and never changes the refusal
// counters.
type NoVerdictError struct {
	Reviewer string
	Kind     NoVerdictKind
	Err      error
}

func (e *NoVerdictError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("%s gave no verdict: %s", e.Reviewer, e.Kind)
	}
	return fmt.Sprintf("%s gave no verdict (%s): %v", e.Reviewer, e.Kind, e.Err)
}

func (e *NoVerdictError) Unwrap() error { return e.Err }

// AsNoVerdict classifies any classifier error as a *NoVerdictError, using
// ctx to tell a timeout from a cancellation.
func AsNoVerdict(ctx context.Context, reviewer string, err error) *NoVerdictError {
	var nv *NoVerdictError
	if errors.As(err, &nv) {
		return nv
	}
	kind := NoVerdictProvider
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded):
		kind = NoVerdictTimeout
	case errors.Is(err, context.Canceled) || errors.Is(ctx.Err(), context.Canceled):
		kind = NoVerdictCancelled
	}
	return &NoVerdictError{Reviewer: reviewer, Kind: kind, Err: err}
}
