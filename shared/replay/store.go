package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/store"
)

// reportKey is a replay's report; latestKey the last replay of a
// candidate digest that covered a session.
func reportKey(id string) store.Key { return store.Key{PK: "REPLAY#" + id, SK: "META"} }
func latestKey(session ids.SessionID, digest string) store.Key {
	return store.Key{PK: "REPLAYS#" + string(session), SK: digest}
}

// Latest is the last replay of a candidate digest over a session.
type Latest struct {
	ReplayID string    `json:"replay_id"`
	At       time.Time `json:"at"`
}

// save writes the report once, then records it as the latest replay of
// its digest for each session it covered (a compare-and-swap on each: a
// concurrent replay of the same document may win; either is a replay).
func (r *Replayer) save(ctx context.Context, rep Report) error {
	body, err := json.Marshal(rep)
	if err != nil {
		return fmt.Errorf("encode replay %s: %w", rep.ReplayID, err)
	}
	k := reportKey(rep.ReplayID)
	if err := r.cfg.Store.PutOnce(ctx, store.Item{PK: k.PK, SK: k.SK, Version: 1, Body: body}); err != nil {
		return fmt.Errorf("store replay %s: %w", rep.ReplayID, err)
	}
	lb, _ := json.Marshal(Latest{ReplayID: rep.ReplayID, At: rep.CreatedAt})
	for _, s := range rep.Sessions {
		lk := latestKey(s, rep.CandidateDigest)
		var expected int64
		cur, err := r.cfg.Store.Get(ctx, lk)
		switch {
		case err == nil:
			expected = cur.Version
		case !errors.Is(err, store.ErrNotFound):
			return fmt.Errorf("read the latest replay of %s: %w", s, err)
		}
		err = r.cfg.Store.CompareAndSwap(ctx, store.Item{PK: lk.PK, SK: lk.SK, Version: expected + 1, Body: lb}, expected, 0)
		var vc *store.VersionConflictError
		if err != nil && !errors.As(err, &vc) {
			return fmt.Errorf("record the latest replay of %s: %w", s, err)
		}
	}
	return nil
}

// Get reads a stored replay; an unknown id is a *actionflow.NotFoundError.
func (r *Replayer) Get(ctx context.Context, id string) (Report, error) {
	if err := ids.Validate("replay id", id); err != nil {
		return Report{}, &actionflow.NotFoundError{What: "replay " + id}
	}
	it, err := r.cfg.Store.Get(ctx, reportKey(id))
	if errors.Is(err, store.ErrNotFound) {
		return Report{}, &actionflow.NotFoundError{What: "replay " + id}
	}
	if err != nil {
		return Report{}, fmt.Errorf("read replay %s: %w", id, err)
	}
	var rep Report
	if err := json.Unmarshal(it.Body, &rep); err != nil {
		return Report{}, fmt.Errorf("decode replay %s: %w", id, err)
	}
	return rep, nil
}

// Latest is the last replay of the candidate digest that covered session
// (ok false when there is none).
func (r *Replayer) Latest(ctx context.Context, session ids.SessionID, digest string) (Latest, bool, error) {
	it, err := r.cfg.Store.Get(ctx, latestKey(session, digest))
	if errors.Is(err, store.ErrNotFound) {
		return Latest{}, false, nil
	}
	if err != nil {
		return Latest{}, false, fmt.Errorf("read the latest replay of %s: %w", session, err)
	}
	var l Latest
	if err := json.Unmarshal(it.Body, &l); err != nil {
		return Latest{}, false, fmt.Errorf("decode the latest replay of %s: %w", session, err)
	}
	return l, true, nil
}

// Options are a session's replay settings, which only an admin changes.
type Options struct {
	// RequireReplay: a policy change through the API is refused unless a
	// replay of the same document (its digest) covered the session within
	// RequiredWithin.
	RequireReplay bool                  `json:"require_replay"`
	UpdatedAt     *time.Time            `json:"updated_at,omitempty"`
	UpdatedBy     *actionflow.Principal `json:"updated_by,omitempty"`
}

// RequiredWithin is how recent the replay a policy change requires must be.
const RequiredWithin = time.Hour

func optionsKey(session ids.SessionID) store.Key {
	return store.Key{PK: "REPLAYS#" + string(session), SK: "OPTIONS"}
}

// Options reads a session's replay options (none set: all off).
func (r *Replayer) Options(ctx context.Context, session ids.SessionID) (Options, error) {
	it, err := r.cfg.Store.Get(ctx, optionsKey(session))
	if errors.Is(err, store.ErrNotFound) {
		return Options{}, nil
	}
	if err != nil {
		return Options{}, fmt.Errorf("read the replay options of %s: %w", session, err)
	}
	var o Options
	if err := json.Unmarshal(it.Body, &o); err != nil {
		return Options{}, fmt.Errorf("decode the replay options of %s: %w", session, err)
	}
	return o, nil
}

// SetOptions replaces a session's replay options (last write wins: a
// compare-and-swap on what it read, retried once on a race).
func (r *Replayer) SetOptions(ctx context.Context, session ids.SessionID, o Options, by actionflow.Principal) (Options, error) {
	if err := ids.Validate("session_id", string(session)); err != nil {
		return Options{}, &actionflow.ValidationError{Field: "session_id", Msg: err.Error()}
	}
	now := r.cfg.Clock().UTC()
	o.UpdatedAt, o.UpdatedBy = &now, &by
	body, err := json.Marshal(o)
	if err != nil {
		return Options{}, fmt.Errorf("encode the replay options of %s: %w", session, err)
	}
	k := optionsKey(session)
	for attempt := 0; ; attempt++ {
		var expected int64
		cur, err := r.cfg.Store.Get(ctx, k)
		switch {
		case err == nil:
			expected = cur.Version
		case !errors.Is(err, store.ErrNotFound):
			return Options{}, fmt.Errorf("read the replay options of %s: %w", session, err)
		}
		err = r.cfg.Store.CompareAndSwap(ctx, store.Item{PK: k.PK, SK: k.SK, Version: expected + 1, Body: body}, expected, 0)
		var vc *store.VersionConflictError
		if errors.As(err, &vc) && attempt == 0 {
			continue
		}
		if err != nil {
			return Options{}, fmt.Errorf("write the replay options of %s: %w", session, err)
		}
		return o, nil
	}
}

// RequiredError: the session requires a replay of the document before a
// policy change, and none ran recently enough.
type RequiredError struct {
	Session ids.SessionID
	Digest  string
	// Last is the last replay of the document, if one ran (too long ago).
	Last *Latest
}

func (e *RequiredError) Error() string {
	msg := fmt.Sprintf("session %s requires a replay of the policy before it changes: no replay of this document (%s) ran in the last %s",
		e.Session, e.Digest, RequiredWithin)
	if e.Last != nil {
		msg += fmt.Sprintf(" (the last one, %s, ran at %s)", e.Last.ReplayID, e.Last.At.Format(time.RFC3339))
	}
	return msg + fmt.Sprintf("; replay it first (POST /v1/sessions/%s/policy/replays with this policy, or lifecycle policy replay --file FILE --since 24h), then send the change again", e.Session)
}

// Required checks a policy change of session to doc: when the session
// requires a replay, the replay of the same document (digest) that covered
// it within RequiredWithin, or a *RequiredError. ok is false when the
// session requires none.
func (r *Replayer) Required(ctx context.Context, session ids.SessionID, doc json.RawMessage) (Latest, bool, error) {
	o, err := r.Options(ctx, session)
	if err != nil || !o.RequireReplay {
		return Latest{}, false, err
	}
	digest, err := Digest(doc)
	if err != nil {
		return Latest{}, true, &actionflow.ValidationError{Field: "policy", Msg: err.Error()}
	}
	l, ok, err := r.Latest(ctx, session, digest)
	if err != nil {
		return Latest{}, true, err
	}
	if !ok {
		return Latest{}, true, &RequiredError{Session: session, Digest: digest}
	}
	if r.cfg.Clock().Sub(l.At) > RequiredWithin {
		return Latest{}, true, &RequiredError{Session: session, Digest: digest, Last: &l}
	}
	return l, true, nil
}
