package httpapi

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/policystore"
	"github.com/openprogram/lifecycle/shared/replay"
	"github.com/openprogram/lifecycle/shared/store"
)

// PolicyBody is the body of PUT /v1/sessions/{session_id}/policy.
type PolicyBody struct {
	// ExpectedVersion is the version being replaced (0 for the first write).
	ExpectedVersion *int64 `json:"expected_version"`
	// Policy is the permission document (rules, mode), as package permission parses it.
	Policy json.RawMessage `json:"policy"`
	// RestartWindowSeconds: -1 unlimited, 0 disabled, > 0 seconds; absent:
	// the session sets none and the service's default applies.
	RestartWindowSeconds *int64 `json:"restart_window_seconds,omitempty"`
	// IterationLimit: the limit of executions that start without one (0:
	// none, 1..1000); absent: the service's default.
	IterationLimit *int `json:"iteration_limit,omitempty"`
	// IdleTimeoutSeconds: 0 off, 60..2592000; absent: the service's default.
	IdleTimeoutSeconds *int64 `json:"idle_timeout_seconds,omitempty"`
}

// PolicyView is a session's policy as the API answers it: the document,
// whether a change requires a replay first (require_replay, set by an
// admin), and, on a change that required one, the replay it used.
type PolicyView struct {
	policystore.Document
	RequireReplay bool           `json:"require_replay"`
	Replay        *replay.Latest `json:"replay,omitempty"`
}

func (h *api) getPolicy(w http.ResponseWriter, r *http.Request, c *call) error {
	d, err := h.cfg.Policies.Get(r.Context(), c.t.Session)
	if err != nil {
		return err
	}
	req, err := h.requireReplayOf(r, c.t.Session)
	if err != nil {
		return err
	}
	w.Header().Set("ETag", strconv.Quote(strconv.FormatInt(d.Version, 10)))
	writeJSON(w, http.StatusOK, PolicyView{Document: d, RequireReplay: req})
	return nil
}

func (h *api) putPolicy(w http.ResponseWriter, r *http.Request, c *call) error {
	var b PolicyBody
	if err := decodeBody(r, h.cfg.MaxBodyBytes, &b); err != nil {
		return err
	}
	if b.ExpectedVersion == nil {
		return badRequest("missing_field", "expected_version", "expected_version is required (0 for the first policy)")
	}
	if len(b.Policy) == 0 || string(b.Policy) == "null" {
		return badRequest("missing_field", "policy", "policy is required (a JSON object)")
	}
	// A session that requires a replay takes only a document replayed
	// within the last hour; the answer names that replay.
	used, err := h.requiredReplay(r, c.t.Session, b.Policy)
	if err != nil {
		return err
	}
	// An absent setting (restart_window_seconds, iteration_limit,
	// idle_timeout_seconds): the session sets none, and the service's
	// default (lifecycle serve --restart-window, ...) applies to it.
	// The change and its policy.updated event are one transaction: an entry
	// of the session's decision log (who, from which origin, which document
	// by its RFC 8785 digest), or no change at all.
	record := func(ctx context.Context, cas store.Write, d policystore.Document) error {
		_, err := h.svc.TransactWithEvent(ctx, []store.Write{cas}, actionflow.Event{Type: "policy.updated", SessionID: c.t.Session},
			map[string]any{"version": d.Version, "policy_version": d.PolicyVersion, "policy_digest": hex.EncodeToString(store.ChainDigest(d.Policy)),
				"restart_window_seconds": d.RestartWindowSeconds, "restart_window_source": d.RestartWindowSource,
				"iteration_limit": d.IterationLimit, "iteration_limit_source": d.IterationLimitSource,
				"idle_timeout_seconds": d.IdleTimeoutSeconds, "idle_timeout_source": d.IdleTimeoutSource, "by": c.p})
		return err
	}
	d, err := h.cfg.Policies.PutRecorded(r.Context(), c.t.Session, *b.ExpectedVersion, b.Policy,
		policystore.Settings{RestartWindowSeconds: b.RestartWindowSeconds, IterationLimit: b.IterationLimit, IdleTimeoutSeconds: b.IdleTimeoutSeconds}, c.p, record)
	if err != nil {
		return err
	}
	w.Header().Set("ETag", strconv.Quote(strconv.FormatInt(d.Version, 10)))
	writeJSON(w, http.StatusOK, PolicyView{Document: d, RequireReplay: used != nil, Replay: used})
	return nil
}
