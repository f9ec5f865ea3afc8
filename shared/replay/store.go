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
