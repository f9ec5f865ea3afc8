package flowtest

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/ids"
)

// Revisions is a deployment's revisions for tests: which one is live, what
// each can resume, which are gone, and on which one each machine started
// (the engine's own record). It survives a process crash (it is the
// World's).
type Revisions struct {
	mu sync.Mutex
	// live is the live revision (SetLive).
	live ids.RevisionID
	// resumes: revision -> the revisions it can resume (itself always).
	resumes map[ids.RevisionID][]ids.RevisionID
	// gone: revisions no longer loadable; unknown: revisions the registry
	// lost (what they declare is unknown).
	gone, unknown map[ids.RevisionID]bool
	// started: action -> the revisions its machine was started on, in order.
	started map[ids.ActionID][]ids.RevisionID
	starter actionflow.Starter
}

var _ actionflow.Revisions = (*Revisions)(nil)

// NewRevisions makes a deployment whose live revision is live.
func NewRevisions(live ids.RevisionID) *Revisions {
	return &Revisions{live: live, resumes: map[ids.RevisionID][]ids.RevisionID{}, gone: map[ids.RevisionID]bool{}, unknown: map[ids.RevisionID]bool{}, started: map[ids.ActionID][]ids.RevisionID{}}
}

// SetLive deploys rev, which can resume the revisions listed.
func (r *Revisions) SetLive(rev ids.RevisionID, resumes ...ids.RevisionID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.live, r.resumes[rev] = rev, resumes
}

// Remove makes rev unloadable (its version deleted).
func (r *Revisions) Remove(rev ids.RevisionID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.gone[rev] = true
}

// Forget makes the registry lose rev: it is unloadable, and what it
// declares is unknown.
func (r *Revisions) Forget(rev ids.RevisionID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.gone[rev], r.unknown[rev] = true, true
}

// StartedOn lists the revisions a's machine was started on.
func (r *Revisions) StartedOn(a ids.ActionID) []ids.RevisionID {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.started[a])
}

func (r *Revisions) Live(context.Context) (ids.RevisionID, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.live, nil
}

func (r *Revisions) CanResume(_ context.Context, candidate, active ids.RevisionID) (bool, []string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.unknown[active] {
		return false, nil, fmt.Errorf("revision %s is not in the registry: %w", active, actionflow.ErrRevisionUnavailable)
	}
	if candidate == active || slices.Contains(r.resumes[candidate], active) {
		return true, nil, nil
	}
	return false, []string{fmt.Sprintf("%s does not resume %s", candidate, active)}, nil
}

// Stop stops a machine (the fake engine's Stop).
func (r *Revisions) Stop(ctx context.Context, machine, cause string) error {
	r.mu.Lock()
	st := r.starter
	r.mu.Unlock()
	if eng, ok := st.(*Engine); ok {
		return eng.Stop(ctx, ids.ActionID(machine), cause)
	}
	return nil
}

func (r *Revisions) StartOn(ctx context.Context, machine string, rev ids.RevisionID, input []byte) error {
	a := ids.ActionID(machine)
	r.mu.Lock()
	if r.gone[rev] {
		r.mu.Unlock()
		return fmt.Errorf("version of %s: %w", rev, actionflow.ErrRevisionUnavailable)
	}
	if n := len(r.started[a]); n == 0 || r.started[a][n-1] != rev {
		r.started[a] = append(r.started[a], rev)
	}
	st := r.starter
	r.mu.Unlock()
	return st.StartAction(ctx, a, input)
}
