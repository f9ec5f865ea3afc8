package sfnclient

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/revision"
	"github.com/openprogram/lifecycle/shared/store"
)

// Revisions is actionflow's Revisions port over the registry of published
// revisions and Step Functions: an action's machine starts on the state
// machine version its revision was published as (never on the alias, so
// what runs is exactly the revision the execution recorded, whatever a
// deployment does to the alias meanwhile).
type Revisions struct {
	Client   *Client
	Registry *revision.Registry
}

var _ actionflow.Revisions = (*Revisions)(nil)

// Live is the revision the live alias points at (the registry's live one).
func (r *Revisions) Live(ctx context.Context) (ids.RevisionID, error) {
	p, err := r.Registry.Live(ctx)
	if err != nil {
		return "", err
	}
	return ids.RevisionID(p.Revision.ID), nil
}

// CanResume is revision.CanResume of the two published revisions. A
// revision missing from the registry is actionflow.ErrRevisionUnavailable:
// what it declares cannot be known, so nothing is decided about it.
func (r *Revisions) CanResume(ctx context.Context, candidate, active ids.RevisionID) (bool, []string, error) {
	c, err := r.published(ctx, candidate)
	if err != nil {
		return false, nil, err
	}
	a, err := r.published(ctx, active)
	if err != nil {
		return false, nil, err
	}
	ok, diffs := c.Revision.CanResume(a.Revision)
	return ok, diffs, nil
}

// StartOn starts machine on rev's version. A revision the registry does
// not have, or a version the engine does not have (deleted), is
// actionflow.ErrRevisionUnavailable.
func (r *Revisions) StartOn(ctx context.Context, machine string, rev ids.RevisionID, input []byte) error {
	p, err := r.published(ctx, rev)
	if err != nil {
		return err
	}
	err = r.Client.StartActionOn(ctx, ids.ActionID(machine), p.VersionARN, input)
	var smGone *types.StateMachineDoesNotExist
	var resGone *types.ResourceNotFound
	if errors.As(err, &smGone) || errors.As(err, &resGone) {
		return fmt.Errorf("revision %s (version %s): %w: %v", rev, p.VersionARN, actionflow.ErrRevisionUnavailable, err)
	}
	return err
}

// Stop stops the execution named machine.
func (r *Revisions) Stop(ctx context.Context, machine, cause string) error {
	return r.Client.Stop(ctx, ids.ActionID(machine), cause)
}

func (r *Revisions) published(ctx context.Context, rev ids.RevisionID) (revision.Published, error) {
	if rev == "" {
		return revision.Published{}, fmt.Errorf("no revision recorded: %w", actionflow.ErrRevisionUnavailable)
	}
	p, err := r.Registry.Get(ctx, string(rev))
	if errors.Is(err, store.ErrNotFound) {
		return p, fmt.Errorf("revision %s is not in the registry: %w", rev, actionflow.ErrRevisionUnavailable)
	}
	return p, err
}

// VersionInUse says whether a state machine version is still needed by
// the lifecycle: some open execution is pinned to a revision published as
// that version (actionflow.OpenOnRevisions). The engine refuses
// DeleteStateMachineVersion while it says true.
func VersionInUse(ctx context.Context, reg *revision.Registry, flow *actionflow.Service, versionARN string) (bool, error) {
	pubs, err := reg.List(ctx)
	if err != nil {
		return false, err
	}
	open, err := flow.OpenOnRevisions(ctx)
	if err != nil {
		return false, err
	}
	for _, p := range pubs {
		if p.VersionARN == versionARN && len(open[ids.RevisionID(p.Revision.ID)]) > 0 {
			return true, nil
		}
	}
	return false, nil
}
