package httpapi

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/revision"
	"github.com/openprogram/lifecycle/shared/store"
)

// RevisionSource is the deployment's registry of published revisions
// (*revision.Registry).
type RevisionSource interface {
	List(ctx context.Context) ([]revision.Published, error)
	Live(ctx context.Context) (revision.Published, error)
}

// RevisionsResponse is GET /v1/revisions: every published revision, the
// live one marked, each with the open executions of the session that are
// pinned to it (they keep its state machine version loadable).
type RevisionsResponse struct {
	SessionID    ids.SessionID  `json:"session_id"`
	LiveRevision string         `json:"live_revision"`
	Revisions    []RevisionView `json:"revisions"`
}

// RevisionView is one published revision.
type RevisionView struct {
	RevisionID     string              `json:"revision_id"`
	ASLDigest      string              `json:"asl_digest"`
	Contract       int                 `json:"contract"`
	Resumes        []int               `json:"resumes"`
	VersionARN     string              `json:"version_arn"`
	PublishedAt    time.Time           `json:"published_at"`
	Live           bool                `json:"live"`
	OpenExecutions []actionflow.Pinned `json:"open_executions"`
}

func (h *api) revisions(w http.ResponseWriter, r *http.Request, c *call) error {
	if h.cfg.Revisions == nil {
		return &requestError{Status: http.StatusNotImplemented, Code: "not_implemented", Msg: "no revision registry is configured"}
	}
	pubs, err := h.cfg.Revisions.List(r.Context())
	if err != nil {
		return err
	}
	out := RevisionsResponse{SessionID: c.t.Session, Revisions: make([]RevisionView, 0, len(pubs))}
	if live, err := h.cfg.Revisions.Live(r.Context()); err == nil {
		out.LiveRevision = live.Revision.ID
	} else if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	pinned, err := h.svc.OpenOnRevisions(r.Context())
	if err != nil {
		return err
	}
	for _, p := range pubs {
		v := RevisionView{RevisionID: p.Revision.ID, ASLDigest: p.Revision.ASLDigest, Contract: p.Revision.Contract,
			Resumes: p.Revision.Resumes, VersionARN: p.VersionARN, PublishedAt: p.PublishedAt,
			Live: p.Revision.ID == out.LiveRevision, OpenExecutions: []actionflow.Pinned{}}
		for _, e := range pinned[ids.RevisionID(p.Revision.ID)] {
			if e.SessionID == c.t.Session { // another session's are not visible
				v.OpenExecutions = append(v.OpenExecutions, e)
			}
		}
		out.Revisions = append(out.Revisions, v)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
