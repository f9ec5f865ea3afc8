package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/auth"
	"github.com/openprogram/lifecycle/shared/httpapi"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/store"
)

// askArgs is a two-question request: a single choice and a multiple one.
const askArgs = `{"questions":[
 {"question":"Which environment?","header":"Env","options":[{"label":"Staging","description":"safe"},{"label":"Production"}],"multiSelect":false},
 {"question":"Which suites?","header":"Tests","options":[{"label":"Unit"},{"label":"Integration"},{"label":"E2E"}],"multiSelect":true}]}`

// newQuestionStack is the embedded stack with AskUserQuestion allowed
// (the test decider refuses tools it does not name).
func newQuestionStack(t *testing.T) *stack {
	t.Helper()
	return newStackWith(t, func(store.Store) (actionflow.Decider, func(*httpapi.Config)) {
		return ruleDecider{"AskUserQuestion": lifecycle.PermissionAllow, "noop": lifecycle.PermissionAllow}, func(*httpapi.Config) {}
	})
}

// pendingQuestion waits until the action's question is pending and listed.
func (s *stack) pendingQuestion(token string, session ids.SessionID, action ids.ActionID) actionflow.Question {
	s.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		r := s.do(req{method: "GET", path: "/v1/sessions/" + string(session) + "/questions", token: token})
		if r.status != http.StatusOK {
			s.t.Fatalf("list questions: %d %s", r.status, r.body)
		}
		var l httpapi.QuestionList
		r.decode(s.t, &l)
		for _, q := range l.Questions {
			if q.ActionID == action {
				return q
			}
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("no pending question for %s", action)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (s *stack) answer(token, id string, body any) resp {
	s.t.Helper()
	return s.do(req{method: "POST", path: "/v1/questions/" + id + "/answer", token: token, body: body})
}

func TestQuestionAnsweredBecomesTheToolResult(t *testing.T) {
	s := newQuestionStack(t)
	agent := s.token(auth.RoleAgent, "ses_1")
	human := s.token(auth.RoleHuman, "ses_1")
	v := s.submit(agent, "ses_1", "k", submitBody("AskUserQuestion", askArgs, "c1"))
	q := s.pendingQuestion(human, "ses_1", v.ActionID)
	if q.Status != actionflow.QuestionPending || q.Generation != 1 || len(q.Questions) != 2 ||
		q.Questions[0].ID != "q1" || q.Questions[1].Kind != "multiple" || q.TaskToken != "" {
		t.Fatalf("question %+v", q)
	}
	body := map[string]any{"command_id": "cmd-1", "answers": map[string]any{"q1": "Staging", "q2": []string{"Unit", "E2E"}}}
	r := s.answer(human, q.QuestionID, body)
	if r.status != http.StatusOK {
		t.Fatalf("answer: %d %s", r.status, r.body)
	}
	var got actionflow.Question
	r.decode(t, &got)
	if got.Status != actionflow.QuestionAnswered || got.CommandID != "cmd-1" || got.AnsweredBy == nil || got.AnsweredBy.Role != auth.RoleHuman {
		t.Fatalf("answered %+v", got)
	}
	done := s.waitAction(agent, v.ActionID)
	if done.States.Outcome != lifecycle.OutcomeSucceeded || done.Receipt == nil || done.Start == nil {
		t.Fatalf("after the answer: %+v receipt %+v", done.States, done.Receipt)
	}
	var out struct {
		Answers map[string]json.RawMessage `json:"answers"`
	}
	if err := json.Unmarshal([]byte(done.Receipt.Output), &out); err != nil || string(out.Answers["q1"]) != `"Staging"` || string(out.Answers["q2"]) != `["Unit","E2E"]` {
		t.Fatalf("receipt output %q (%v)", done.Receipt.Output, err)
	}
	// No longer pending; listed as answered.
	r = s.do(req{method: "GET", path: "/v1/sessions/ses_1/questions", token: human})
	var l httpapi.QuestionList
	r.decode(t, &l)
	if len(l.Questions) != 0 {
		t.Fatalf("still pending: %+v", l.Questions)
	}
	r = s.do(req{method: "GET", path: "/v1/sessions/ses_1/questions?status=answered", token: agent})
	r.decode(t, &l)
	if len(l.Questions) != 1 || l.Questions[0].QuestionID != q.QuestionID {
		t.Fatalf("answered list %s", r.body)
	}
	if s.exec.calls.Load() != 0 {
		t.Fatal("a question called an executor")
	}
	if !strings.HasPrefix(q.QuestionID, string(v.ActionID)+".q") {
		t.Fatalf("question id %s", q.QuestionID)
	}
}
