package httpapi

import (
	"errors"
	"net/http"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/store"
)

// QuestionList answers GET /v1/sessions/{session_id}/questions.
type QuestionList struct {
	Questions []actionflow.Question `json:"questions"`
}

// questionStatuses are the values of ?status= (default pending).
var questionStatuses = map[string]bool{"": true, "pending": true, "answered": true, "declined": true,
	"cancelled": true, "expired": true, "all": true}

func (h *api) listQuestions(w http.ResponseWriter, r *http.Request, c *call) error {
	st := r.URL.Query().Get("status")
	if !questionStatuses[st] {
		return badRequest("invalid_field", "status", "status must be pending, answered, declined, cancelled, expired or all")
	}
	qs, err := h.svc.SessionQuestions(r.Context(), c.t.Session, st)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, QuestionList{Questions: qs})
	return nil
}

func (h *api) getQuestion(w http.ResponseWriter, r *http.Request, c *call) error {
	if id := r.PathValue("question_id"); c.t.Question.QuestionID != id {
		return &actionflow.NotFoundError{What: "question " + id + " (replaced by " + c.t.Question.QuestionID + ")"}
	}
	writeJSON(w, http.StatusOK, *c.t.Question)
	return nil
}

// answerQuestion applies an answer command. 200: applied (or the same
// command repeated) and the wait completed; 202: applied (durable) but the
// workflow has not heard it yet, recovery completes the wait from the
// stored answer; 409: answered otherwise before (the first in
// error.current), superseded, cancelled or expired.
func (h *api) answerQuestion(w http.ResponseWriter, r *http.Request, c *call) error {
	var b actionflow.AnswerBody
	if err := decodeBody(r, h.cfg.MaxBodyBytes, &b); err != nil {
		return err
	}
	id := r.PathValue("question_id")
	q, err := h.svc.AnswerQuestion(r.Context(), id, b, c.p)
	if err != nil {
		if q.QuestionID == "" || isTyped(err) {
			return err
		}
		h.log.ErrorContext(r.Context(), "api: answer saved, wait not completed", "question_id", id, "error", err)
		writeJSON(w, http.StatusAccepted, q)
		return nil
	}
	writeJSON(w, http.StatusOK, q)
	return nil
}

func (h *api) questionScope(r *http.Request, p actionflow.Principal) (target, error) {
	id := r.PathValue("question_id")
	if err := ids.Validate("question_id", id); err != nil {
		return target{}, badRequest("invalid_field", "question_id", err.Error())
	}
	// The session is the action's, whatever the generation: an id of a
	// wait that a newer one replaced is then answered 409
	// question_superseded (or read 404), not hidden like a foreign id.
	action, _, ok := actionflow.ActionOfQuestion(id)
	if !ok {
		return target{}, &actionflow.NotFoundError{What: "question " + id}
	}
	q, err := h.svc.QuestionOfAction(r.Context(), action)
	if errors.Is(err, store.ErrNotFound) {
		return target{}, &actionflow.NotFoundError{What: "question " + id}
	}
	if err != nil {
		return target{}, err
	}
	return target{Session: q.SessionID, Question: &q}, nil
}
