package apiclient

import (
	"context"
	"net/http"
	"net/url"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/httpapi"
	"github.com/openprogram/lifecycle/shared/ids"
)

// Questions lists a session's questions: pending when status is "", else
// those of that status (answered, declined, cancelled, expired, all).
func (c *Client) Questions(ctx context.Context, session ids.SessionID, status string) ([]actionflow.Question, error) {
	var out httpapi.QuestionList
	p := "/v1/sessions/" + esc(string(session)) + "/questions"
	if status != "" {
		p += "?status=" + url.QueryEscape(status)
	}
	_, err := c.do(ctx, "GET", p, nil, nil, &out)
	return out.Questions, err
}

// Question reads one question.
func (c *Client) Question(ctx context.Context, id string) (q actionflow.Question, err error) {
	_, err = c.do(ctx, "GET", "/v1/questions/"+esc(id), nil, nil, &q)
	return q, err
}

// Answer sends an answer command (answers, or Skip). delivered is false on
// 202: the answer is applied and saved, and recovery completes the wait.
// Another answer applied first is a *actionflow.ConflictError
// "already_answered" carrying it; send a retry with the same CommandID
// and answer.
func (c *Client) Answer(ctx context.Context, id string, body actionflow.AnswerBody) (q actionflow.Question, delivered bool, err error) {
	res, err := c.do(ctx, "POST", "/v1/questions/"+esc(id)+"/answer", nil, body, &q)
	if err != nil {
		return q, false, err
	}
	return q, res.StatusCode == http.StatusOK, nil
}
