package apiclient

import (
	"context"

	"github.com/openprogram/lifecycle/shared/httpapi"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/replay"
)

// ReplayPolicy replays a candidate policy over one session's recorded
// actions (POST /v1/sessions/{id}/policy/replays).
func (c *Client) ReplayPolicy(ctx context.Context, session ids.SessionID, body httpapi.ReplayBody) (rep replay.Report, err error) {
	_, err = c.do(ctx, "POST", "/v1/sessions/"+esc(string(session))+"/policy/replays", nil, body, &rep)
	return rep, err
}

// ReplayPolicyAll replays a candidate over the sessions body names (a
// human's default: the token's session) (POST /v1/policy/replays).
func (c *Client) ReplayPolicyAll(ctx context.Context, body httpapi.ReplayBody) (rep replay.Report, err error) {
	_, err = c.do(ctx, "POST", "/v1/policy/replays", nil, body, &rep)
	return rep, err
}

// Replay reads a stored replay.
func (c *Client) Replay(ctx context.Context, id string) (rep replay.Report, err error) {
	_, err = c.do(ctx, "GET", "/v1/policy/replays/"+esc(id), nil, nil, &rep)
	return rep, err
}
