package apiclient

import (
	"context"
	"net/url"

	"github.com/openprogram/lifecycle/shared/httpapi"
	"github.com/openprogram/lifecycle/shared/ids"
)

// Revisions lists the published revisions with the session's open
// executions pinned to each (GET /v1/revisions).
func (c *Client) Revisions(ctx context.Context, session ids.SessionID) (v httpapi.RevisionsResponse, err error) {
	_, err = c.do(ctx, "GET", "/v1/revisions?session_id="+url.QueryEscape(string(session)), nil, nil, &v)
	return v, err
}
