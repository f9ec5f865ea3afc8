package policystore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/store"
)

// SK is the sort key of the policy item under the session's partition.
const SK = "POLICY"

// Restart window values (seconds). A positive value is a duration.
const (
	// RestartUnlimited is the default: automatic continuation without a time limit.
	RestartUnlimited int64 = -1
	// RestartDisabled turns automatic continuation off.
	RestartDisabled int64 = 0
)

// MaxPolicyBytes bounds the permission document.
const MaxPolicyBytes = 128 << 10

// Document is a session's policy at one version.
type Document struct {
	SessionID ids.SessionID `json:"session_id"`
	// Version is 0 for a session whose policy was never written (defaults apply).
	Version int64 `json:"version"`
	// Policy is the permission document (rules, mode, ...) as package
	// permission defines it; the default document when never written.
	Policy json.RawMessage `json:"policy"`
	// PolicyVersion is the document's own version label (as the Validator
	// reads it), which decisions, grants and approvals are bound to. Every
	// change of the document must change it.
	PolicyVersion string `json:"policy_version,omitempty"`
	// RestartWindowSeconds is the window that applies to the session's
	// executions: -1 unlimited, 0 disabled, > 0 a duration. It is the
	// session's own when RestartWindowSource is "session", and the
	// service's default (lifecycle serve --restart-window) when "default".
	RestartWindowSeconds int64 `json:"restart_window_seconds"`
	// RestartWindowSource says whose window it is: "session" (set with the
	// policy) or "default" (the session set none).
	RestartWindowSource string `json:"restart_window_source"`
	// IterationLimit is the iteration limit of the session's executions
	// that start without one of their own (0: none); the submission's own
	// limit wins. An execution keeps the limit it started with: a later
	// change applies to executions started after it.
	IterationLimit int `json:"iteration_limit"`
	// IterationLimitSource: "session" (set with the policy) or "default"
	// (the session set none; the service's default applies).
	IterationLimitSource string `json:"iteration_limit_source"`
	// IdleTimeoutSeconds (0: off, else MinIdleTimeoutSeconds..
	// MaxIdleTimeoutSeconds) ends a running execution of the session that
	// was idle that long as failed with reason abandoned (package
	// recovery). Fixed when the execution starts, like the iteration limit.
	IdleTimeoutSeconds int64 `json:"idle_timeout_seconds"`
	// IdleTimeoutSource: "session" or "default", as IterationLimitSource.
	IdleTimeoutSource string                `json:"idle_timeout_source"`
	UpdatedAt         *time.Time            `json:"updated_at,omitempty"`
	UpdatedBy         *actionflow.Principal `json:"updated_by,omitempty"`
}

// Sources of a document's restart window (and of its other settings).
const (
	WindowFromSession = "session"
	WindowFromDefault = "default"
)

// Bounds of a session's idle timeout. A minute is the shortest: an agent
// thinking between tool calls (a long model request) is not a vanished
// client, and the sweeper runs about once a minute anyway.
const (
	MinIdleTimeoutSeconds int64 = 60
	MaxIdleTimeoutSeconds int64 = 30 * 24 * 3600
)

// Settings are the execution settings a PUT sets beside the permission
// document. A nil field is "the session sets none": the service's default
// applies and the document says so (source "default").
type Settings struct {
	// RestartWindowSeconds: -1 unlimited, 0 disabled, > 0 seconds.
	RestartWindowSeconds *int64
	// IterationLimit: 0 no limit, 1..actionflow.MaxIterationLimit.
	IterationLimit *int
	// IdleTimeoutSeconds: 0 off, MinIdleTimeoutSeconds..MaxIdleTimeoutSeconds.
	IdleTimeoutSeconds *int64
}

func (st Settings) validate() error {
	if w := st.RestartWindowSeconds; w != nil && *w < RestartUnlimited {
		return &actionflow.ValidationError{Field: "restart_window_seconds", Msg: fmt.Sprintf("%d: use -1 (unlimited), 0 (disabled) or a positive number of seconds", *w)}
	}
	if l := st.IterationLimit; l != nil && (*l < 0 || *l > actionflow.MaxIterationLimit) {
		return &actionflow.ValidationError{Field: "iteration_limit", Msg: fmt.Sprintf("%d: use 1..%d, or 0 for no limit (omit it for the service's default)", *l, actionflow.MaxIterationLimit)}
	}
	if t := st.IdleTimeoutSeconds; t != nil && *t != 0 && (*t < MinIdleTimeoutSeconds || *t > MaxIdleTimeoutSeconds) {
		return &actionflow.ValidationError{Field: "idle_timeout_seconds", Msg: fmt.Sprintf("%d: use 0 (off) or %d..%d seconds (omit it for the service's default)", *t, MinIdleTimeoutSeconds, MaxIdleTimeoutSeconds)}
	}
	return nil
}

// RestartWindow is the window as a duration; ok is false when unlimited.
func (d Document) RestartWindow() (window time.Duration, limited bool) {
	if d.RestartWindowSeconds < 0 {
		return 0, false
	}
	return time.Duration(d.RestartWindowSeconds) * time.Second, true
}

// Validator checks a permission document and returns its own version
// label; a wrong document is a *actionflow.ValidationError naming the line
// or rule that is wrong.
type Validator func(policy json.RawMessage) (version string, err error)

// Store reads and writes session policies.
type Store struct {
	st       store.Store
	validate Validator
	def      json.RawMessage
	// window is the restart window shown for sessions that set none.
	window int64
	// iterations and idle are the iteration limit and idle timeout of
	// sessions that set none (default 0: none, off).
	iterations int
	idle       int64
	now        func() time.Time
}

// Option configures a Store.
type Option func(*Store)

// WithDefault sets the document a session without a policy has (shown by
// Get at version 0; the decider applies the same default).
func WithDefault(doc json.RawMessage) Option { return func(s *Store) { s.def = doc } }

// WithRestartDefault sets the restart window (seconds: -1, 0 or > 0) that
// Get reports for sessions that set none: the service's default, which
// restart recovery applies to them (default -1, unlimited).
func WithRestartDefault(seconds int64) Option { return func(s *Store) { s.window = seconds } }

// WithExecutionDefaults sets the iteration limit (0: none) and idle
// timeout (seconds, 0: off) of sessions that set none: the service's
// defaults, which Get reports with source "default" and ExecutionDefaults
// gives executions that start.
func WithExecutionDefaults(iterationLimit int, idleTimeoutSeconds int64) Option {
	return func(s *Store) { s.iterations, s.idle = iterationLimit, idleTimeoutSeconds }
}

// New returns a Store over st. validate may be nil until the permission
// engine is wired: the document must then only be a JSON object.
func New(st store.Store, validate Validator, opts ...Option) *Store {
	s := &Store{st: st, validate: validate, def: json.RawMessage(`{}`), window: RestartUnlimited, now: time.Now}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Key is the policy item of a session.
func Key(session ids.SessionID) store.Key {
	return store.Key{PK: store.SessionPK(string(session)), SK: SK}
}

// Get reads a session's policy; never written is version 0 with defaults.
// A session that set no restart window shows the store's default
// (WithRestartDefault) with source "default".
func (s *Store) Get(ctx context.Context, session ids.SessionID) (Document, error) {
	d, err := s.stored(ctx, session)
	if err == nil {
		s.applyDefaults(&d)
	}
	return d, err
}

// applyDefaults fills in the service's defaults where the session set none.
func (s *Store) applyDefaults(d *Document) {
	if d.RestartWindowSource == WindowFromDefault {
		d.RestartWindowSeconds = s.window
	}
	if d.IterationLimitSource == WindowFromDefault {
		d.IterationLimit = s.iterations
	}
	if d.IdleTimeoutSource == WindowFromDefault {
		d.IdleTimeoutSeconds = s.idle
	}
}

// ExecutionDefaults is what an execution of the session that starts now
// runs under (actionflow.Config.Defaults): the session's iteration limit
// and idle timeout, or the service's defaults where it set none.
func (s *Store) ExecutionDefaults(ctx context.Context, session ids.SessionID) (actionflow.ExecutionDefaults, error) {
	d, err := s.Get(ctx, session)
	if err != nil {
		return actionflow.ExecutionDefaults{}, err
	}
	return actionflow.ExecutionDefaults{IterationLimit: d.IterationLimit, IdleTimeoutSeconds: d.IdleTimeoutSeconds}, nil
}

// SessionRestartWindow is the restart window the session set itself
// (seconds: -1, 0 or > 0); set is false when it set none, and the
// caller's default applies (restart recovery's Config.Windows).
func (s *Store) SessionRestartWindow(ctx context.Context, session ids.SessionID) (seconds int64, set bool, err error) {
	d, err := s.stored(ctx, session)
	if err != nil || d.RestartWindowSource != WindowFromSession {
		return 0, false, err
	}
	return d.RestartWindowSeconds, true, nil
}

// stored is the document as written (the window as the session set it).
func (s *Store) stored(ctx context.Context, session ids.SessionID) (Document, error) {
	it, err := s.st.Get(ctx, Key(session))
	if errors.Is(err, store.ErrNotFound) {
		return Document{SessionID: session, Policy: s.def, RestartWindowSeconds: RestartUnlimited, RestartWindowSource: WindowFromDefault,
			IterationLimitSource: WindowFromDefault, IdleTimeoutSource: WindowFromDefault}, nil
	}
	if err != nil {
		return Document{}, fmt.Errorf("get policy of %s: %w", session, err)
	}
	var d Document
	if err := json.Unmarshal(it.Body, &d); err != nil {
		return Document{}, fmt.Errorf("decode policy of %s: %w", session, err)
	}
	d.Version = it.Version
	if d.RestartWindowSource == "" {
		// Written before the source was kept: a window other than -1 was
		// set by the session; -1 was also what an omitted window stored,
		// so it counts as none set (the default then applies).
		d.RestartWindowSource = WindowFromSession
		if d.RestartWindowSeconds == RestartUnlimited {
			d.RestartWindowSource = WindowFromDefault
		}
	}
	// Written before these settings existed: none set.
	if d.IterationLimitSource == "" {
		d.IterationLimitSource = WindowFromDefault
	}
	if d.IdleTimeoutSource == "" {
		d.IdleTimeoutSource = WindowFromDefault
	}
	return d, nil
}

// Put replaces the policy at version expected (0: never written) with
// policy and settings (a nil setting: the session sets none and the
// service's default applies), returning the new document (version
// expected+1). A stale expected is a *actionflow.ConflictError whose
// Current is the stored document; an invalid document or setting is a
// *actionflow.ValidationError naming the field, and nothing is written.
func (s *Store) Put(ctx context.Context, session ids.SessionID, expected int64, policy json.RawMessage, settings Settings, by actionflow.Principal) (Document, error) {
	return s.PutRecorded(ctx, session, expected, policy, settings, by, nil)
}

// Recorder writes a policy change: w is the compare-and-swap of the policy
// item and d the document it stores. A caller makes it one transaction with
// the event that records the change (policy.updated, an entry of the
// session's decision log), so a policy never changes without its entry.
type Recorder func(ctx context.Context, w store.Write, d Document) error

// PutRecorded is Put whose write goes through record (nil: the plain
// compare-and-swap). A lost compare-and-swap inside record's transaction
// is still the *actionflow.ConflictError of a stale expected version.
func (s *Store) PutRecorded(ctx context.Context, session ids.SessionID, expected int64, policy json.RawMessage, settings Settings, by actionflow.Principal, record Recorder) (Document, error) {
	if err := ids.Validate("session_id", string(session)); err != nil {
		return Document{}, &actionflow.ValidationError{Field: "session_id", Msg: err.Error()}
	}
	if expected < 0 {
		return Document{}, &actionflow.ValidationError{Field: "expected_version", Msg: "must be 0 (first write) or the current version"}
	}
	if err := settings.validate(); err != nil {
		return Document{}, err
	}
	window, source := RestartUnlimited, WindowFromDefault
	if settings.RestartWindowSeconds != nil {
		window, source = *settings.RestartWindowSeconds, WindowFromSession
	}
	limit, limitSource := 0, WindowFromDefault
	if settings.IterationLimit != nil {
		limit, limitSource = *settings.IterationLimit, WindowFromSession
	}
	idle, idleSource := int64(0), WindowFromDefault
	if settings.IdleTimeoutSeconds != nil {
		idle, idleSource = *settings.IdleTimeoutSeconds, WindowFromSession
	}
	policy = bytes.TrimSpace(policy)
	if len(policy) == 0 || policy[0] != '{' || !json.Valid(policy) {
		return Document{}, &actionflow.ValidationError{Field: "policy", Msg: "must be a JSON object"}
	}
	if len(policy) > MaxPolicyBytes {
		return Document{}, &actionflow.ValidationError{Field: "policy", Msg: fmt.Sprintf("%d bytes, more than the %d byte limit", len(policy), MaxPolicyBytes)}
	}
	label := ""
	if s.validate != nil {
		var err error
		if label, err = s.validate(policy); err != nil {
			var ve *actionflow.ValidationError
			if errors.As(err, &ve) {
				return Document{}, ve
			}
			return Document{}, &actionflow.ValidationError{Field: "policy", Msg: err.Error()}
		}
	}
	if label != "" && expected > 0 {
		// A changed document under an unchanged label would let decisions,
		// grants and approvals of the old rules pass as current.
		cur, err := s.Get(ctx, session)
		if err != nil {
			return Document{}, err
		}
		if cur.Version == expected && cur.PolicyVersion == label && !bytes.Equal(cur.Policy, policy) {
			return Document{}, &actionflow.ValidationError{Field: "policy.version",
				Msg: fmt.Sprintf("the document changed but its version %q did not; give the new policy a new version", label)}
		}
	}
	now := s.now().UTC()
	d := Document{SessionID: session, Version: expected + 1, Policy: policy, PolicyVersion: label, RestartWindowSeconds: window,
		RestartWindowSource: source, IterationLimit: limit, IterationLimitSource: limitSource,
		IdleTimeoutSeconds: idle, IdleTimeoutSource: idleSource, UpdatedAt: &now, UpdatedBy: &by}
	body, err := json.Marshal(d)
	if err != nil {
		return Document{}, fmt.Errorf("encode policy of %s: %w", session, err)
	}
	k := Key(session)
	item := store.Item{PK: k.PK, SK: k.SK, Version: d.Version, Body: body}
	if record != nil {
		err = record(ctx, store.CASOf(item, expected, 0), d)
	} else {
		err = s.st.CompareAndSwap(ctx, item, expected, 0)
	}
	var vc *store.VersionConflictError
	if errors.As(err, &vc) {
		cur, gerr := s.Get(ctx, session)
		if gerr != nil {
			return Document{}, gerr
		}
		return Document{}, &actionflow.ConflictError{Code: "stale_policy_version",
			Msg: fmt.Sprintf("expected version %d, the policy is at version %d", expected, cur.Version), Current: cur}
	}
	if err != nil {
		return Document{}, fmt.Errorf("put policy of %s: %w", session, err)
	}
	s.applyDefaults(&d)
	return d, nil
}

// Parsed adapts the store to a consumer that wants the parsed live policy
// (decider.Policies with T = *permission.Policy): Policy returns the zero T
// and no error for a session that has none, so the consumer applies its
// default.
type Parsed[T any] struct {
	Store *Store
	Parse func(doc []byte) (T, error)
}

// Policy reads and parses a session's policy.
func (p Parsed[T]) Policy(ctx context.Context, session ids.SessionID) (T, error) {
	var zero T
	d, err := p.Store.Get(ctx, session)
	if err != nil || d.Version == 0 {
		return zero, err
	}
	v, err := p.Parse(d.Policy)
	if err != nil {
		return zero, fmt.Errorf("parse stored policy of %s (version %d): %w", session, d.Version, err)
	}
	return v, nil
}
