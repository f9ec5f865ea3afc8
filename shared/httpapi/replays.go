package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/auth"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/replay"
)

// ReplayBody is the body of POST /v1/sessions/{session_id}/policy/replays
// and POST /v1/policy/replays.
type ReplayBody struct {
	// Policy is the candidate permission document.
	Policy json.RawMessage `json:"policy"`
	// Since and Until bound the replayed actions' creation times
	// [since, until); until defaults to now.
	Since *time.Time `json:"since"`
	Until *time.Time `json:"until,omitempty"`
	// Sessions (POST /v1/policy/replays only): the sessions to replay. A
	// human may name only the token's session (the default); an admin
	// names the sessions (the store keeps no list of every session).
	Sessions []ids.SessionID `json:"sessions,omitempty"`
}

// ReplayOptionsBody is the body of PUT /v1/sessions/{session_id}/policy/options.
type ReplayOptionsBody struct {
	RequireReplay *bool `json:"require_replay"`
}

func (h *api) replays() (*replay.Replayer, error) {
	if h.cfg.Replays == nil {
		return nil, &requestError{Status: http.StatusNotImplemented, Code: "not_implemented", Msg: "policy replay is not configured"}
	}
	return h.cfg.Replays, nil
}

// sessionReplay: POST /v1/sessions/{session_id}/policy/replays.
func (h *api) sessionReplay(w http.ResponseWriter, r *http.Request, c *call) error {
	return h.runReplay(w, r, c, false)
}

// replayAll: POST /v1/policy/replays.
func (h *api) replayAll(w http.ResponseWriter, r *http.Request, c *call) error {
	return h.runReplay(w, r, c, true)
}

func (h *api) runReplay(w http.ResponseWriter, r *http.Request, c *call, many bool) error {
	var b ReplayBody
	if err := decodeBody(r, h.cfg.MaxBodyBytes, &b); err != nil {
		return err
	}
	if len(b.Policy) == 0 || string(b.Policy) == "null" {
		return badRequest("missing_field", "policy", "policy is required (the candidate document)")
	}
	if _, err := ValidatePermissionPolicy(b.Policy); err != nil {
		return err
	}
	if b.Since == nil {
		return badRequest("missing_field", "since", "since is required (RFC 3339): the start of the window of recorded actions")
	}
	until := h.cfg.Clock()
	if b.Until != nil {
		until = *b.Until
	}
	sessions := []ids.SessionID{c.t.Session}
	switch {
	case !many && len(b.Sessions) > 0:
		return badRequest("unknown_field", "sessions", "this route replays its path's session; use POST /v1/policy/replays to name sessions")
	case many && len(b.Sessions) > 0:
		sessions = b.Sessions
	case many && c.p.Role == auth.RoleAdmin:
		return badRequest("missing_field", "sessions", "an admin names the sessions to replay (the service keeps no list of every session)")
	}
	for _, s := range sessions {
		if err := ids.Validate("session_id", string(s)); err != nil {
			return badRequest("invalid_field", "sessions", err.Error())
		}
		if err := auth.Authorize(c.p, auth.CapPolicy, s); err != nil {
			h.audit(r, route{pattern: r.Pattern, need: auth.CapPolicy}, c.p, target{Session: s}, err)
			return err
		}
	}
	// Authorized first: a refused request learns nothing, configured or not.
	rp, err := h.replays()
	if err != nil {
		return err
	}
	rep, err := rp.Run(r.Context(), replay.Request{Candidate: b.Policy, Sessions: sessions, Since: *b.Since, Until: until, By: c.p})
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/v1/policy/replays/"+rep.ReplayID)
	writeJSON(w, http.StatusCreated, rep)
	return nil
}

// replayScope reads the replay a path names: its session when it covers
// one, none (admins only) when it covers several.
func (h *api) replayScope(r *http.Request, _ actionflow.Principal) (target, error) {
	rp, err := h.replays()
	if err != nil {
		return target{}, err
	}
	rep, err := rp.Get(r.Context(), r.PathValue("replay_id"))
	if err != nil {
		return target{}, err
	}
	if len(rep.Sessions) == 1 {
		return target{Session: rep.Sessions[0]}, nil
	}
	return target{}, nil
}

// getReplay: GET /v1/policy/replays/{replay_id}.
func (h *api) getReplay(w http.ResponseWriter, r *http.Request, _ *call) error {
	rp, err := h.replays()
	if err != nil {
		return err
	}
	rep, err := rp.Get(r.Context(), r.PathValue("replay_id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, rep)
	return nil
}

// putPolicyOptions: PUT /v1/sessions/{session_id}/policy/options. Only an
// admin sets them: require_replay binds the session's humans.
func (h *api) putPolicyOptions(w http.ResponseWriter, r *http.Request, c *call) error {
	rp, err := h.replays()
	if err != nil {
		return err
	}
	if c.p.Role != auth.RoleAdmin {
		err := &auth.DeniedError{Capability: auth.CapPolicy, Session: string(c.t.Session), Reason: "only an admin sets a session's policy options"}
		h.audit(r, route{pattern: r.Pattern, need: auth.CapPolicy}, c.p, c.t, err)
		return err
	}
	var b ReplayOptionsBody
	if err := decodeBody(r, h.cfg.MaxBodyBytes, &b); err != nil {
		return err
	}
	if b.RequireReplay == nil {
		return badRequest("missing_field", "require_replay", "require_replay is required (true or false)")
	}
	o, err := rp.SetOptions(r.Context(), c.t.Session, replay.Options{RequireReplay: *b.RequireReplay}, c.p)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, o)
	return nil
}

// requiredReplay is the replay a policy change of the session to doc
// needs (nil when the session requires none), or the refusal.
func (h *api) requiredReplay(r *http.Request, session ids.SessionID, doc json.RawMessage) (*replay.Latest, error) {
	if h.cfg.Replays == nil {
		return nil, nil
	}
	l, required, err := h.cfg.Replays.Required(r.Context(), session, doc)
	var re *replay.RequiredError
	if errors.As(err, &re) {
		return nil, &requestError{Status: http.StatusConflict, Code: "replay_required", Field: "policy", Msg: re.Error()}
	}
	if err != nil || !required {
		return nil, err
	}
	return &l, nil
}

// requireReplayOf reads the session's require_replay option for the
// policy view (false when replay is not configured).
func (h *api) requireReplayOf(r *http.Request, session ids.SessionID) (bool, error) {
	if h.cfg.Replays == nil {
		return false, nil
	}
	o, err := h.cfg.Replays.Options(r.Context(), session)
	return o.RequireReplay, err
}
