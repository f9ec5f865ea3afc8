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

// askAndWait submits an AskUserQuestion and waits for its pending question.
func (s *stack) askAndWait(agent, human string, args, call string) (httpapi.ActionView, actionflow.Question) {
	s.t.Helper()
	v := s.submit(agent, "ses_1", "k-"+call, submitBody("AskUserQuestion", args, call))
	return v, s.pendingQuestion(human, "ses_1", v.ActionID)
}

func TestQuestionSkipFailsTheToolCallDeclined(t *testing.T) {
	s := newQuestionStack(t)
	agent := s.token(auth.RoleAgent, "ses_1")
	human := s.token(auth.RoleHuman, "ses_1")
	v, q := s.askAndWait(agent, human, askArgs, "c1")
	r := s.answer(human, q.QuestionID, map[string]any{"command_id": "skip-1", "skip": true})
	var got actionflow.Question
	r.decode(t, &got)
	if r.status != http.StatusOK || got.Status != actionflow.QuestionDeclined || len(got.Answers) != 0 {
		t.Fatalf("skip: %d %s", r.status, r.body)
	}
	done := s.waitAction(agent, v.ActionID)
	if done.States.Outcome != lifecycle.OutcomeFailed || done.Receipt.ErrorCode != actionflow.QuestionDeclinedCode ||
		!strings.Contains(done.Receipt.Error, "declined") || done.Receipt.Output != "" {
		t.Fatalf("declined receipt: %+v", done.Receipt)
	}
	// The same skip again is the stored result; an answer after it is 409.
	r = s.answer(human, q.QuestionID, map[string]any{"command_id": "skip-1", "skip": true})
	if r.status != http.StatusOK {
		t.Fatalf("repeated skip: %d %s", r.status, r.body)
	}
	r = s.answer(human, q.QuestionID, map[string]any{"command_id": "late", "answers": map[string]any{"q1": "Staging", "q2": []string{"Unit"}}})
	if e := r.errorBody(t); r.status != http.StatusConflict || e.Code != "already_answered" {
		t.Fatalf("answer after skip: %d %s", r.status, r.body)
	}
}

func TestQuestionAnswerIsOneCommand(t *testing.T) {
	s := newQuestionStack(t)
	agent := s.token(auth.RoleAgent, "ses_1")
	human := s.token(auth.RoleHuman, "ses_1")
	v, q := s.askAndWait(agent, human, askArgs, "c1")
	first := map[string]any{"command_id": "cmd-a", "answers": map[string]any{"q1": "Production", "q2": []string{"Unit"}}}
	if r := s.answer(human, q.QuestionID, first); r.status != http.StatusOK {
		t.Fatalf("first: %d %s", r.status, r.body)
	}
	done := s.waitAction(agent, v.ActionID)
	cases := []struct {
		name   string
		body   map[string]any
		status int
		code   string
	}{
		{"same command, same answer: the stored result", first, http.StatusOK, ""},
		{"same command, the same answer spelled otherwise", map[string]any{"command_id": "cmd-a", "answers": map[string]any{"q2": []string{"Unit"}, "q1": "Production"}}, http.StatusOK, ""},
		{"same command, another answer", map[string]any{"command_id": "cmd-a", "answers": map[string]any{"q1": "Staging", "q2": []string{"Unit"}}}, http.StatusConflict, "already_answered"},
		{"another command, the same answer", map[string]any{"command_id": "cmd-b", "answers": map[string]any{"q1": "Production", "q2": []string{"Unit"}}}, http.StatusConflict, "already_answered"},
		{"another command skips", map[string]any{"command_id": "cmd-c", "skip": true}, http.StatusConflict, "already_answered"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := s.answer(human, q.QuestionID, tc.body)
			if r.status != tc.status {
				t.Fatalf("%d %s", r.status, r.body)
			}
			if tc.code != "" {
				e := r.errorBody(t)
				cur, _ := e.Current.(map[string]any)
				if e.Code != tc.code || cur["command_id"] != "cmd-a" || cur["status"] != "answered" || cur["task_token"] != nil {
					t.Fatalf("conflict %s", r.body)
				}
				return
			}
			var got actionflow.Question
			r.decode(t, &got)
			if got.CommandID != "cmd-a" || string(got.Answers) != `{"q1":"Production","q2":["Unit"]}` {
				t.Fatalf("stored %s", r.body)
			}
		})
	}
	after := s.waitAction(agent, v.ActionID)
	if after.Receipt.Digest != done.Receipt.Digest || after.Start.AttemptID != done.Start.AttemptID {
		t.Fatal("a repeated answer changed the receipt")
	}
}

func TestQuestionAnswerValidation(t *testing.T) {
	s := newQuestionStack(t)
	agent := s.token(auth.RoleAgent, "ses_1")
	human := s.token(auth.RoleHuman, "ses_1")
	const kinds = `{"questions":[
	 {"id":"env","question":"Where?","options":[{"label":"Staging"},{"label":"Production"}]},
	 {"id":"go","question":"Deploy now?","kind":"confirm"},
	 {"id":"note","question":"Anything else?","kind":"text"},
	 {"id":"cfg","question":"Settings","kind":"form","fields":[
	   {"name":"port","type":"integer","required":true},
	   {"name":"ratio","type":"number"},
	   {"name":"region","type":"string","enum":["eu","us"],"required":true},
	   {"name":"dry","type":"boolean"}]}]}`
	_, q := s.askAndWait(agent, human, kinds, "c1")
	good := func() map[string]any {
		return map[string]any{"env": "Staging", "go": true, "note": "be careful",
			"cfg": map[string]any{"port": 8080, "ratio": 0.5, "region": "eu", "dry": false}}
	}
	with := func(k string, v any) map[string]any {
		a := good()
		if v == nil {
			delete(a, k)
		} else {
			a[k] = v
		}
		return a
	}
	cases := []struct {
		name  string
		body  map[string]any
		field string
	}{
		{"no command id", map[string]any{"answers": good()}, "command_id"},
		{"neither answers nor skip", map[string]any{"command_id": "x"}, "answers"},
		{"answers and skip", map[string]any{"command_id": "x", "skip": true, "answers": good()}, "skip"},
		{"not an option", map[string]any{"command_id": "x", "answers": with("env", "Prod")}, "answers.env"},
		{"a question unanswered", map[string]any{"command_id": "x", "answers": with("note", nil)}, "answers.note"},
		{"an unknown question id", map[string]any{"command_id": "x", "answers": with("q9", "x")}, "answers.q9"},
		{"a confirmation that is not a boolean", map[string]any{"command_id": "x", "answers": with("go", "yes")}, "answers.go"},
		{"text that is not a string", map[string]any{"command_id": "x", "answers": with("note", 3)}, "answers.note"},
		{"a form missing a required field", map[string]any{"command_id": "x", "answers": with("cfg", map[string]any{"region": "eu"})}, "answers.cfg.port"},
		{"a form integer that is fractional", map[string]any{"command_id": "x", "answers": with("cfg", map[string]any{"port": 1.5, "region": "eu"})}, "answers.cfg.port"},
		{"a form value outside its enum", map[string]any{"command_id": "x", "answers": with("cfg", map[string]any{"port": 1, "region": "asia"})}, "answers.cfg.region"},
		{"a form field it does not have", map[string]any{"command_id": "x", "answers": with("cfg", map[string]any{"port": 1, "region": "eu", "zone": "a"})}, "answers.cfg.zone"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mark := s.st.mark()
			r := s.answer(human, q.QuestionID, tc.body)
			if e := r.errorBody(t); r.status != http.StatusBadRequest || e.Field != tc.field {
				t.Fatalf("want 400 naming %s: %d %s", tc.field, r.status, r.body)
			}
			if ws := s.st.since(mark); len(ws) != 0 {
				t.Fatalf("a refused answer wrote %+v", ws)
			}
		})
	}
	// After all of it the question is still pending, and a good answer applies.
	if r := s.answer(human, q.QuestionID, map[string]any{"command_id": "ok", "answers": good()}); r.status != http.StatusOK {
		t.Fatalf("good answer: %d %s", r.status, r.body)
	}
}

func TestQuestionOnlyAHumanOfTheSessionAnswers(t *testing.T) {
	s := newQuestionStack(t)
	agent := s.token(auth.RoleAgent, "ses_1")
	human := s.token(auth.RoleHuman, "ses_1")
	other := s.token(auth.RoleHuman, "ses_2")
	v, q := s.askAndWait(agent, human, askArgs, "c1")
	s.waiting(v.ActionID)
	body := map[string]any{"command_id": "cmd", "answers": map[string]any{"q1": "Staging", "q2": []string{"Unit"}}}
	for _, id := range []string{q.QuestionID, "act_doesnotexist.q1"} {
		mark := s.st.mark()
		r := s.do(req{method: "POST", path: "/v1/questions/" + id + "/answer", token: agent, body: body, header: map[string]string{auth.OriginHeader: "ui"}})
		if r.status != http.StatusForbidden {
			t.Fatalf("agent answer of %s: %d %s", id, r.status, r.body)
		}
		onlyAudit(t, s.st.since(mark), "ses_1") // refused before any lookup: an id existing or not reads the same
	}
	// Another session's human: the question does not exist for them.
	r := s.answer(other, q.QuestionID, body)
	if r.status != http.StatusForbidden {
		t.Fatalf("other session: %d %s", r.status, r.body)
	}
	r = s.do(req{method: "GET", path: "/v1/questions/" + q.QuestionID, token: other})
	if r.status != http.StatusForbidden {
		t.Fatalf("other session read: %d %s", r.status, r.body)
	}
	// The agent may read it (it asked).
	r = s.do(req{method: "GET", path: "/v1/questions/" + q.QuestionID, token: agent})
	if r.status != http.StatusOK {
		t.Fatalf("agent read: %d %s", r.status, r.body)
	}
	if got := s.pendingQuestion(human, "ses_1", v.ActionID); got.Status != actionflow.QuestionPending {
		t.Fatalf("after refusals: %+v", got)
	}
}

func TestQuestionOfACancelledExecutionIsCancelledNeverAnswered(t *testing.T) {
	s := newQuestionStack(t)
	agent := s.token(auth.RoleAgent, "ses_1")
	human := s.token(auth.RoleHuman, "ses_1")
	v, q := s.askAndWait(agent, human, askArgs, "c1")
	s.applied(human, v.ExecutionID, "cancel-1", "cancel", "")
	done := s.waitAction(agent, v.ActionID)
	if done.States.Outcome != lifecycle.OutcomeNotStarted || done.Start != nil || done.Receipt.Output != "" {
		t.Fatalf("cancelled question: %+v %+v", done.States, done.Receipt)
	}
	r := s.do(req{method: "GET", path: "/v1/questions/" + q.QuestionID, token: human})
	var got actionflow.Question
	r.decode(t, &got)
	if got.Status != actionflow.QuestionCancelled || got.Reason != "execution_cancelled" || len(got.Answers) != 0 {
		t.Fatalf("question after cancel: %s", r.body)
	}
	r = s.answer(human, q.QuestionID, map[string]any{"command_id": "late", "answers": map[string]any{"q1": "Staging", "q2": []string{"Unit"}}})
	if e := r.errorBody(t); r.status != http.StatusConflict || e.Code != "question_cancelled" {
		t.Fatalf("answer after cancel: %d %s", r.status, r.body)
	}
	r = s.do(req{method: "GET", path: "/v1/sessions/ses_1/questions?status=cancelled", token: human})
	var l httpapi.QuestionList
	r.decode(t, &l)
	if len(l.Questions) != 1 {
		t.Fatalf("cancelled list %s", r.body)
	}
}

func TestQuestionWithInvalidArgumentsIsNeverAsked(t *testing.T) {
	s := newQuestionStack(t)
	agent := s.token(auth.RoleAgent, "ses_1")
	cases := []struct {
		name, args string
		field      string
	}{
		{"no questions", `{}`, "questions"},
		{"one option", `{"questions":[{"question":"Which?","options":[{"label":"A"}]}]}`, "questions[0].options"},
		{"unknown kind", `{"questions":[{"question":"Which?","kind":"slider"}]}`, "questions[0].kind"},
		{"form without fields", `{"questions":[{"question":"Settings","kind":"form"}]}`, "questions[0].fields"},
		{"form field of no type", `{"questions":[{"question":"S","kind":"form","fields":[{"name":"a","type":"date"}]}]}`, "questions[0].fields[0].type"},
		{"duplicate ids", `{"questions":[{"id":"a","question":"x","kind":"text"},{"id":"a","question":"y","kind":"text"}]}`, "questions[1].id"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := s.submit(agent, "ses_1", "bad-"+tc.name, submitBody("AskUserQuestion", tc.args, "bad"+string(rune('a'+i))))
			done := s.waitAction(agent, v.ActionID)
			if done.States.Outcome != lifecycle.OutcomeNotStarted || done.Receipt.ErrorCode != "invalid_arguments" {
				t.Fatalf("receipt %+v", done.Receipt)
			}
			found := false
			for _, p := range done.Receipt.Validation {
				found = found || p.Field == tc.field
			}
			if !found {
				t.Fatalf("no problem names %s: %+v", tc.field, done.Receipt.Validation)
			}
		})
	}
	r := s.do(req{method: "GET", path: "/v1/sessions/ses_1/questions?status=all", token: agent})
	var l httpapi.QuestionList
	r.decode(t, &l)
	if len(l.Questions) != 0 {
		t.Fatalf("an invalid request was asked: %s", r.body)
	}
}
