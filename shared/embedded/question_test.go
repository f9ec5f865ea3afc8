package embedded_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/apiclient"
	"github.com/openprogram/lifecycle/shared/auth"
	"github.com/openprogram/lifecycle/shared/decider"
	"github.com/openprogram/lifecycle/shared/embedded"
	"github.com/openprogram/lifecycle/shared/hosttools"
	"github.com/openprogram/lifecycle/shared/httpapi"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/permission"
	"github.com/openprogram/lifecycle/shared/permission/riskreview"
	"github.com/openprogram/lifecycle/shared/policystore"
	"github.com/openprogram/lifecycle/shared/sfnlocal"
	"github.com/openprogram/lifecycle/shared/store"
)

const (
	qSession = "ses_q"
	qArgs    = `{"questions":[{"question":"Which environment?","header":"Env","options":[{"label":"Staging"},{"label":"Production"}]},
	 {"question":"Port?","kind":"form","fields":[{"name":"port","type":"integer","required":true}]}]}`
)

// qProcess is one `lifecycle serve` over dir: the embedded stack, the real
// permission engine under the default policy (which allows
// AskUserQuestion) and the HTTP API.
type qProcess struct {
	stack        *embedded.Stack
	srv          *httptest.Server
	agent, human *apiclient.Client
}

var qIssuer = func() *auth.Issuer {
	i, err := auth.NewIssuer(auth.Keys{Agent: []byte("test-key-test-key-test-key-test-key"), Human: []byte("human-key-human-key-human-key-human")})
	if err != nil {
		panic(err)
	}
	return i
}()

func serveQuestions(t *testing.T, dir, ws string, opts ...func(*embedded.Config)) *qProcess {
	t.Helper()
	var policies *policystore.Store
	var live policystore.Parsed[*permission.Policy]
	cfg := embedded.Config{StateDir: dir, Workspace: ws, NoHostWorker: true,
		NewDecider: func(st store.Store) (actionflow.Decider, error) {
			policies = policystore.New(st, httpapi.ValidatePermissionPolicy, policystore.WithDefault(json.RawMessage(decider.DefaultPolicyDoc)))
			live = policystore.Parsed[*permission.Policy]{Store: policies, Parse: permission.ParsePolicy}
			eng, err := permission.NewEngine(permission.Config{Classifier: riskreview.New(), Counters: st, FS: permission.OSFS{}})
			if err != nil {
				return nil, err
			}
			return &decider.Decider{Engine: eng, Policies: live, ProjectRoot: ws, WorkingDir: ws}, nil
		}}
	for _, o := range opts {
		o(&cfg)
	}
	s, err := embedded.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctl := httpapi.ControlService{Service: s.Control}
	h, err := httpapi.New(httpapi.Config{Service: s.Service, Auth: qIssuer, Policies: policies, Control: ctl, Facts: ctl, Wake: s.Bus, NoUI: true,
		Tools: httpapi.PermissionTools{Policies: live, Default: decider.DefaultPolicy(), Catalog: hosttools.Specs}})
	if err != nil {
		t.Fatal(err)
	}
	p := &qProcess{stack: s, srv: httptest.NewServer(h)}
	token := func(role string) string {
		tok, err := qIssuer.Issue(role, qSession, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	p.agent = &apiclient.Client{BaseURL: p.srv.URL, Token: token(auth.RoleAgent)}
	p.human = &apiclient.Client{BaseURL: p.srv.URL, Token: token(auth.RoleHuman)}
	t.Cleanup(p.stop)
	return p
}

func (p *qProcess) stop() {
	p.srv.Close()
	p.stack.Close(context.Background())
}

func (p *qProcess) ask(t *testing.T, call string) httpapi.ActionView {
	t.Helper()
	yes := true
	v, _, err := p.agent.Submit(context.Background(), apiclient.SubmitRequest{SessionID: qSession, IdempotencyKey: "k-" + call,
		Body: httpapi.SubmitBody{Tool: "AskUserQuestion", Arguments: json.RawMessage(qArgs), ToolCallID: ids.ToolCallID(call), Interactive: &yes}})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// pendingGen waits until the action's listed pending question has generation gen.
func (p *qProcess) pendingGen(t *testing.T, action ids.ActionID, gen int64) actionflow.Question {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		qs, err := p.human.Questions(context.Background(), qSession, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range qs {
			if q.ActionID == action && q.Generation == gen {
				return q
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pending question of generation %d for %s (%+v)", gen, action, qs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (p *qProcess) finished(t *testing.T, action ids.ActionID) httpapi.ActionView {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		v, err := p.agent.Action(context.Background(), action, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if v.Receipt != nil && v.States.Delivery == lifecycle.DeliveryProjected {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("action %s did not finish: %+v", action, v.States)
		}
	}
}

// eventCount counts the session's events of each type.
func (p *qProcess) eventCount(t *testing.T, action ids.ActionID) map[string]int {
	t.Helper()
	out := map[string]int{}
	var after int64
	for {
		b, err := p.agent.Events(context.Background(), qSession, after, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range b.Events {
			if ev.ActionID == action {
				out[ev.Type]++
			}
		}
		if len(b.Events) == 0 || b.Next == after {
			return out
		}
		after = b.Next
	}
}

var qAnswers = map[string]json.RawMessage{"q1": json.RawMessage(`"Staging"`), "q2": json.RawMessage(`{"port":8080}`)}

// The process stops while the question waits; the next process on the same
// state takes the answer and the tool call completes exactly once with it.
func TestQuestionSurvivesRestart(t *testing.T) {
	dir, ws := t.TempDir(), t.TempDir()
	p1 := serveQuestions(t, dir, ws)
	v := p1.ask(t, "call_1")
	q := p1.pendingGen(t, v.ActionID, 1)
	if v.Decision != nil && v.Decision.Reason.Code != "question_to_user" {
		t.Fatalf("decided %+v", v.Decision)
	}
	p1.stop()

	p2 := serveQuestions(t, dir, ws)
	// Recovery, repeated, leaves the waiting question as it is.
	for i := 0; i < 2; i++ {
		if rep, err := p2.stack.Recovery.SweepAction(context.Background(), v.ActionID); err != nil {
			t.Fatalf("sweep: %+v %v", rep, err)
		}
	}
	if got := p2.pendingGen(t, v.ActionID, 1); got.QuestionID != q.QuestionID {
		t.Fatalf("after restart the question is %s, was %s", got.QuestionID, q.QuestionID)
	}
	got, delivered, err := p2.human.Answer(context.Background(), q.QuestionID, actionflow.AnswerBody{CommandID: "cmd-1", Answers: qAnswers})
	if err != nil || !delivered || got.Status != actionflow.QuestionAnswered {
		t.Fatalf("answer after restart: %+v delivered %v: %v", got, delivered, err)
	}
	done := p2.finished(t, v.ActionID)
	if done.States.Outcome != lifecycle.OutcomeSucceeded || !strings.Contains(done.Receipt.Output, `"q1":"Staging"`) ||
		!strings.Contains(done.Receipt.Output, `"port":8080`) || done.Decision.Reason.Code != "question_to_user" {
		t.Fatalf("after restart: %+v %+v", done.States, done.Receipt)
	}
	counts := p2.eventCount(t, v.ActionID)
	if counts["question.asked"] != 1 || counts["question.answered"] != 1 || counts["action.projected"] != 1 {
		t.Fatalf("events %v", counts)
	}
	// A further restart repeats nothing.
	p2.stop()
	p3 := serveQuestions(t, dir, ws)
	if rep, err := p3.stack.Recovery.SweepAction(context.Background(), v.ActionID); err != nil {
		t.Fatalf("sweep: %+v %v", rep, err)
	}
	if again := p3.finished(t, v.ActionID); again.Receipt.Digest != done.Receipt.Digest {
		t.Fatal("the receipt changed after another restart")
	}
	if counts := p3.eventCount(t, v.ActionID); counts["action.projected"] != 1 || counts["question.answered"] != 1 {
		t.Fatalf("events after another restart %v", counts)
	}
}

// The first wait of a question is answered (durably), but its invocation
// fails before the state machine heard of it, and the state machine waits
// again: a newer generation. Neither recovery (repeated) nor the earlier
// question id may resolve, fail or cancel the newer wait; only its own
// answer does.
func TestAnEarlierAnswerNeverResolvesANewerWait(t *testing.T) {
	dir, ws := t.TempDir(), t.TempDir()
	var asks atomic.Int64
	var p *qProcess
	wrap := func(name string, f sfnlocal.LambdaFunc) sfnlocal.LambdaFunc {
		if name != "dispatch" {
			return f
		}
		return func(ctx context.Context, payload []byte) ([]byte, error) {
			var in actionflow.StepInput
			_ = json.Unmarshal(payload, &in)
			out, err := f(ctx, payload)
			if in.Mode != "ask" || err != nil || asks.Add(1) != 1 {
				return out, err
			}
			// The first wait is stored; its answer is applied (durable, as
			// AnswerQuestion writes it) but never delivered, and the
			// invocation then fails: Retry makes a new wait.
			if aerr := answerWithoutDelivery(ctx, p.stack.Store, in.ActionID, "early", `{"q1":"Production","q2":{"port":1}}`); aerr != nil {
				return nil, aerr
			}
			return nil, &actionflow.NotStartedError{Code: "test", Msg: "the invocation failed after the wait was stored"}
		}
	}
	p = serveQuestions(t, dir, ws, func(c *embedded.Config) { c.WrapFunction = wrap })
	v := p.ask(t, "call_1")
	q2 := p.pendingGen(t, v.ActionID, 2)
	first := string(v.ActionID) + ".q1"

	// Recovery, repeated, leaves the newer wait pending.
	for i := 0; i < 3; i++ {
		if _, err := p.stack.Recovery.SweepAction(context.Background(), v.ActionID); err != nil {
			t.Fatal(err)
		}
		if sent, err := p.stack.Service.ResendAnswer(context.Background(), v.ActionID); err != nil || sent {
			t.Fatalf("resend sent %v: %v", sent, err)
		}
	}
	if got := p.pendingGen(t, v.ActionID, 2); got.Status != actionflow.QuestionPending || len(got.Answers) != 0 {
		t.Fatalf("newer wait after recovery: %+v", got)
	}
	a, err := p.agent.Action(context.Background(), v.ActionID, 0)
	if err != nil || a.Receipt != nil || a.Start != nil {
		t.Fatalf("the action moved: %+v %v", a, err)
	}
	// The earlier id, with its answer or another, resolves nothing.
	_, _, err = p.human.Answer(context.Background(), first, actionflow.AnswerBody{CommandID: "early", Answers: map[string]json.RawMessage{
		"q1": json.RawMessage(`"Production"`), "q2": json.RawMessage(`{"port":1}`)}})
	var ce *actionflow.ConflictError
	if !errors.As(err, &ce) || ce.Code != "question_superseded" {
		t.Fatalf("answer to the earlier wait: %v", err)
	}
	if _, _, err := p.human.Answer(context.Background(), first, actionflow.AnswerBody{CommandID: "skip-old", Skip: true}); !errors.As(err, &ce) || ce.Code != "question_superseded" {
		t.Fatalf("skip of the earlier wait: %v", err)
	}
	if got := p.pendingGen(t, v.ActionID, 2); got.Status != actionflow.QuestionPending {
		t.Fatalf("newer wait: %+v", got)
	}
	// Its own answer resolves it, with its own answer.
	if _, delivered, err := p.human.Answer(context.Background(), q2.QuestionID, actionflow.AnswerBody{CommandID: "cmd-2", Answers: qAnswers}); err != nil || !delivered {
		t.Fatalf("answer to the newer wait: delivered %v: %v", delivered, err)
	}
	done := p.finished(t, v.ActionID)
	if done.States.Outcome != lifecycle.OutcomeSucceeded || !strings.Contains(done.Receipt.Output, `"q1":"Staging"`) || strings.Contains(done.Receipt.Output, "Production") {
		t.Fatalf("result %+v", done.Receipt)
	}
}

// Nobody answers for 24 hours: AwaitAnswer times out, the question is
// expired (never answered), the tool call is not_started question_expired,
// and a late answer is refused.
func TestUnansweredQuestionExpires(t *testing.T) {
	clock := sfnlocal.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	p := serveQuestions(t, t.TempDir(), t.TempDir(), func(c *embedded.Config) {
		c.EngineClock, c.Clock, c.SweepInterval = clock, clock.Now, -1
	})
	v := p.ask(t, "call_1")
	q := p.pendingGen(t, v.ActionID, 1)
	if want := clock.Now().Add(24 * time.Hour); !q.ExpiresAt.Equal(want) {
		t.Fatalf("expires at %s, want %s", q.ExpiresAt, want)
	}
	clock.Advance(24*time.Hour + time.Second)
	poll(t, clock, 0, func() bool { return terminalNow(p.stack, v.ActionID) })
	done := p.finished(t, v.ActionID)
	if done.States.Outcome != lifecycle.OutcomeNotStarted || done.Receipt.ErrorCode != "question_expired" || done.Start != nil {
		t.Fatalf("expired: %+v %+v", done.States, done.Receipt)
	}
	got, err := p.human.Question(context.Background(), q.QuestionID)
	if err != nil || got.Status != actionflow.QuestionExpired || len(got.Answers) != 0 {
		t.Fatalf("question %+v: %v", got, err)
	}
	_, _, err = p.human.Answer(context.Background(), q.QuestionID, actionflow.AnswerBody{CommandID: "late", Answers: qAnswers})
	var ce *actionflow.ConflictError
	if !errors.As(err, &ce) || ce.Code != "question_expired" {
		t.Fatalf("late answer: %v", err)
	}
}

// answerWithoutDelivery stores an answer on the action's current question
// exactly as AnswerQuestion applies it, without completing the wait: an
// answer whose SendTaskSuccess was lost (a crash right after the write).
func answerWithoutDelivery(ctx context.Context, st store.Store, action ids.ActionID, commandID, answers string) error {
	it, err := st.Get(ctx, store.Key{PK: "ACTION#" + string(action), SK: "QUESTION"})
	if err != nil {
		return err
	}
	var q actionflow.Question
	if err := json.Unmarshal(it.Body, &q); err != nil {
		return err
	}
	now := time.Now()
	q.Status, q.CommandID, q.AnsweredAt = actionflow.QuestionAnswered, commandID, &now
	q.AnsweredBy = &actionflow.Principal{Subject: "alice", Role: "human", Session: qSession}
	q.Answers = json.RawMessage(answers)
	expected := it.Version
	it.Body, _ = json.Marshal(q)
	it.Version, it.GSI2PK, it.GSI2SK = expected+1, "", ""
	return st.CompareAndSwap(ctx, it, expected, 0)
}

// An answer that is durable but never reached the state machine is
// delivered by recovery (ResendAnswer), once, even when recovery runs
// again; the tool call completes with that answer.
func TestRecoveryDeliversAStoredAnswer(t *testing.T) {
	dir, ws := t.TempDir(), t.TempDir()
	p := serveQuestions(t, dir, ws, func(c *embedded.Config) { c.SweepInterval = -1 })
	v := p.ask(t, "call_1")
	p.pendingGen(t, v.ActionID, 1)
	if err := answerWithoutDelivery(context.Background(), p.stack.Store, v.ActionID, "cmd-lost", `{"q1":"Staging","q2":{"port":8080}}`); err != nil {
		t.Fatal(err)
	}
	p.stop()
	p2 := serveQuestions(t, dir, ws, func(c *embedded.Config) { c.SweepInterval = -1 })
	sweep := func() {
		if _, err := p2.stack.Recovery.SweepAction(context.Background(), v.ActionID); err != nil {
			t.Fatal(err)
		}
	}
	sweep() // delivers the stored answer
	p2.finished(t, v.ActionID)
	// Recovery running again once the call completed repeats nothing. (A
	// sweep racing the state machine's own projection may re-project, which
	// the count below would mistake for a second delivery.)
	sweep()
	sweep()
	done := p2.finished(t, v.ActionID)
	if done.States.Outcome != lifecycle.OutcomeSucceeded || !strings.Contains(done.Receipt.Output, `"q1":"Staging"`) {
		t.Fatalf("after recovery: %+v %+v", done.States, done.Receipt)
	}
	if counts := p2.eventCount(t, v.ActionID); counts["action.projected"] != 1 {
		t.Fatalf("events %v", counts)
	}
	// The person's retry of the same command reads the stored answer.
	got, _, err := p2.human.Answer(context.Background(), string(v.ActionID)+".q1", actionflow.AnswerBody{CommandID: "cmd-lost",
		Answers: map[string]json.RawMessage{"q2": json.RawMessage(`{"port":8080}`), "q1": json.RawMessage(`"Staging"`)}})
	if err != nil || got.Status != actionflow.QuestionAnswered {
		t.Fatalf("retry: %+v %v", got, err)
	}
}

// The answer was applied but not delivered when the execution is
// cancelled: the wait is failed all the same (it never hangs), and the
// closed action is not_started, never dispatched with the answer.
func TestCancelAfterAnAnswerStillEndsTheWait(t *testing.T) {
	p := serveQuestions(t, t.TempDir(), t.TempDir(), func(c *embedded.Config) { c.SweepInterval = -1 })
	v := p.ask(t, "call_1")
	p.pendingGen(t, v.ActionID, 1)
	if err := answerWithoutDelivery(context.Background(), p.stack.Store, v.ActionID, "cmd-1", `{"q1":"Staging","q2":{"port":1}}`); err != nil {
		t.Fatal(err)
	}
	ev, err := p.human.Execution(context.Background(), v.ExecutionID)
	if err != nil {
		t.Fatal(err)
	}
	version := ev.Execution.Version
	if res, err := p.human.Command(context.Background(), v.ExecutionID, httpapi.CommandBody{CommandID: "cancel-1", Type: "cancel", ExpectedVersion: &version}); err != nil || res.Status != "applied" {
		t.Fatalf("cancel: %+v %v", res, err)
	}
	done := p.finished(t, v.ActionID)
	if done.States.Outcome != lifecycle.OutcomeNotStarted || done.Start != nil {
		t.Fatalf("after cancel: %+v %+v", done.States, done.Receipt)
	}
}
