package actionflow

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/question"
	"github.com/openprogram/lifecycle/shared/store"
)

// ExecutorQuestion is the kind of tools the human answers
// (AskUserQuestion): the action's state machine waits in AwaitAnswer, and
// dispatch turns the stored answer into the tool result. Built in: it
// needs no configured executor, only the TaskCompleter.
const ExecutorQuestion = "question"

// QuestionStatus is where a question wait is.
type QuestionStatus string

// Statuses of a question wait. Only answered carries answers: a declined,
// cancelled or expired question never reads as answered.
const (
	QuestionPending   QuestionStatus = "pending"
	QuestionAnswered  QuestionStatus = "answered"
	QuestionDeclined  QuestionStatus = "declined"
	QuestionCancelled QuestionStatus = "cancelled"
	QuestionExpired   QuestionStatus = "expired"
)

// QuestionDeclinedCode is the error code of the failed receipt of a
// skipped question request.
const QuestionDeclinedCode = "declined"

// Question is the durable wait of one AskUserQuestion action: one item
// per action (ACTION#<id>/QUESTION) holding the current wait. A new wait
// (a new task token) replaces it with the next generation, so an answer to
// an earlier wait names a question id that no longer resolves anything.
type Question struct {
	QuestionID  string          `json:"question_id"`
	ActionID    ids.ActionID    `json:"action_id"`
	ExecutionID ids.ExecutionID `json:"execution_id"`
	SessionID   ids.SessionID   `json:"session_id"`
	ToolCallID  ids.ToolCallID  `json:"tool_call_id,omitempty"`
	// Generation counts the waits of the action (1 for the first).
	Generation int64               `json:"generation"`
	Questions  []question.Question `json:"questions"`
	Status     QuestionStatus      `json:"status"`
	// Answers (question id → value) of an answered request.
	Answers json.RawMessage `json:"answers,omitempty"`
	// CommandID is the answering (or skipping) command's id: the same
	// command with the same answer returns this record.
	CommandID  string     `json:"command_id,omitempty"`
	AnsweredBy *Principal `json:"answered_by,omitempty"`
	AnsweredAt *time.Time `json:"answered_at,omitempty"`
	// Reason says why a question was cancelled or expired.
	Reason    string    `json:"reason,omitempty"`
	TaskToken string    `json:"task_token,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
	UpdatedAt time.Time `json:"updated_at"`
	Version   int64     `json:"-"`
}

const pendingQuestionsPK = "PENDINGQ#"

func questionKey(id ids.ActionID) store.Key {
	return store.Key{PK: "ACTION#" + string(id), SK: "QUESTION"}
}

// QuestionIDFor is the id of an action's wait of generation gen: the
// action id, ".q", the generation. Decodable to its action.
func QuestionIDFor(action ids.ActionID, gen int64) string {
	return string(action) + ".q" + strconv.FormatInt(gen, 10)
}

// ActionOfQuestion decodes the action id and generation of a question id.
func ActionOfQuestion(id string) (ids.ActionID, int64, bool) {
	i := strings.LastIndex(id, ".q")
	if i <= 0 {
		return "", 0, false
	}
	gen, err := strconv.ParseInt(id[i+2:], 10, 64)
	if err != nil || gen < 1 {
		return "", 0, false
	}
	return ids.ActionID(id[:i]), gen, true
}

func (s *Service) questionItem(q Question) store.Item {
	k := questionKey(q.ActionID)
	it := store.Item{PK: k.PK, SK: k.SK, Version: q.Version,
		GSI1PK: sessionPK(q.SessionID), GSI1SK: "QUESTION#" + q.QuestionID, Body: encode(q)}
	if q.Status == QuestionPending {
		it.GSI2PK, it.GSI2SK = pendingQuestionsPK+string(q.SessionID), q.QuestionID
	}
	return it
}

func (s *Service) getQuestion(ctx context.Context, action ids.ActionID) (Question, error) {
	it, err := s.cfg.Store.Get(ctx, questionKey(action))
	if err != nil {
		return Question{}, err
	}
	q, err := decode[Question](it, "question")
	q.Version = it.Version
	return q, err
}

// QuestionView is a question as clients see it (no task token).
func QuestionView(q Question) Question {
	q.TaskToken = ""
	return q
}

// askQuestion is dispatch mode "ask" (the AwaitAnswer waitForTaskToken
// state): it stores the task token on a fresh pending question of the
// next generation and publishes question.asked. Nothing starts: an
// unanswered question has no start evidence, so a cancelled or expired one
// is recorded not_started. Re-invoked with the same token it is the same
// wait. Retry class: a failure before the item is stored is a
// *NotStartedError; a closed action is a *PermanentError.
func (s *Service) askQuestion(ctx context.Context, in StepInput) (ToolResult, error) {
	if in.TaskToken == "" {
		return ToolResult{}, &PermanentError{Code: "no_task_token", Msg: "ask needs $$.Task.Token"}
	}
	a, err := s.getAction(ctx, in.ActionID)
	if err != nil {
		return ToolResult{}, &NotStartedError{Code: "load", Msg: err.Error()}
	}
	if a.States.Permission != lifecycle.PermissionAllow {
		return ToolResult{}, &PermanentError{Code: "not_allowed", Msg: "permission is " + string(a.States.Permission)}
	}
	if a.Closed != nil {
		return ToolResult{}, &PermanentError{Code: "closed", Msg: "the action was closed (" + a.Closed.Reason + "); the question is never asked"}
	}
	req, probs := question.Parse(a.Arguments)
	if len(probs) > 0 {
		return ToolResult{}, &PermanentError{Code: "invalid_arguments", Msg: probs[0].Error()}
	}
	prev, err := s.getQuestion(ctx, a.ActionID)
	expected, gen := int64(0), int64(1)
	switch {
	case err == nil:
		if prev.TaskToken == in.TaskToken {
			return ToolResult{}, nil // re-invoked: the same wait
		}
		expected, gen = prev.Version, prev.Generation+1
	case !errors.Is(err, store.ErrNotFound):
		return ToolResult{}, &NotStartedError{Code: "load", Msg: err.Error()}
	}
	now := s.now()
	q := Question{QuestionID: QuestionIDFor(a.ActionID, gen), ActionID: a.ActionID, ExecutionID: a.ExecutionID,
		SessionID: a.SessionID, ToolCallID: a.ToolCallID, Generation: gen, Questions: req.Questions,
		Status: QuestionPending, TaskToken: in.TaskToken, CreatedAt: now, ExpiresAt: now.Add(s.cfg.ApprovalTimeout),
		UpdatedAt: now, Version: expected + 1}
	// One item holds the current wait: replacing it supersedes the earlier
	// one, whose id (and any answer stored on it) then resolves nothing.
	if err := s.cfg.Store.CompareAndSwap(ctx, s.questionItem(q), expected, 0); err != nil {
		return ToolResult{}, &NotStartedError{Code: "store", Msg: "store question wait: " + err.Error()}
	}
	s.logFor(&a).Info("question asked", "question_id", q.QuestionID, "generation", gen)
	if _, err := s.appendEvent(ctx, Event{Type: "question.asked", SessionID: a.SessionID, ExecutionID: a.ExecutionID, ActionID: a.ActionID},
		QuestionView(q)); err != nil {
		return ToolResult{}, err
	}
	// The same handshake as approvals: CancelAction closes, then settles
	// the wait it finds; this step stores the wait, then looks for the
	// closure. One of the two sees the other.
	if cur, err := s.getAction(ctx, a.ActionID); err == nil && cur.Closed != nil {
		if err := s.settleQuestion(ctx, q, cur.Closed.Reason); err != nil {
			return ToolResult{}, err
		}
	}
	return ToolResult{}, nil
}

// expireQuestion is dispatch mode "expire_question" (AwaitAnswer timed
// out): a pending question becomes expired. An answer that raced the
// timeout never reached the state machine, so it is expired too.
func (s *Service) expireQuestion(ctx context.Context, in StepInput) (ToolResult, error) {
	q, err := s.getQuestion(ctx, in.ActionID)
	if errors.Is(err, store.ErrNotFound) {
		return ToolResult{}, nil
	}
	if err != nil {
		return ToolResult{}, err
	}
	if q.Status == QuestionPending || q.Status == QuestionAnswered || q.Status == QuestionDeclined {
		if _, err := s.setQuestionStatus(ctx, q, QuestionExpired, "the question was not answered within "+s.cfg.ApprovalTimeout.String()); err != nil {
			return ToolResult{}, err
		}
	}
	return ToolResult{}, nil
}

// setQuestionStatus moves a question to a terminal status without an
// answer (cancelled, expired), with its event.
func (s *Service) setQuestionStatus(ctx context.Context, q Question, st QuestionStatus, reason string) (Question, error) {
	expected := q.Version
	q.Status, q.Reason, q.UpdatedAt, q.Version = st, reason, s.now(), q.Version+1
	if st == QuestionExpired || st == QuestionCancelled {
		q.Answers = nil // never reads as answered
	}
	if _, err := s.casWithEvent(ctx, s.questionItem(q), expected,
		Event{Type: "question." + string(st), SessionID: q.SessionID, ExecutionID: q.ExecutionID, ActionID: q.ActionID}, QuestionView(q)); err != nil {
		return q, fmt.Errorf("set question %s %s: %w", q.QuestionID, st, err)
	}
	return q, nil
}

// settleQuestion invalidates a pending question of a closed action
// (cancelled when the execution was cancelled, expired when it ended or
// its owner was lost) and fails its wait, so the state machine records
// not_started. An answer that was applied first stands; the closed action
// is then refused at dispatch and recorded not_started all the same.
func (s *Service) settleQuestion(ctx context.Context, q Question, reason string) error {
	if q.Status == QuestionPending {
		st := QuestionExpired
		if reason == "execution_cancelled" || strings.Contains(reason, "cancel") {
			st = QuestionCancelled
		}
		_, err := s.setQuestionStatus(ctx, q, st, reason)
		var vc *store.VersionConflictError
		if errors.As(err, &vc) {
			cur, gerr := s.getQuestion(ctx, q.ActionID)
			if gerr != nil {
				return gerr
			}
			if cur.QuestionID != q.QuestionID || cur.Status == QuestionPending {
				return err // a newer wait, or still pending: not ours to settle
			}
		} else if err != nil {
			return err
		}
	}
	return s.failTask(ctx, q.TaskToken, reason)
}

// AnswerBody is an answer command: answers by question id, or skip.
type AnswerBody struct {
	CommandID string                     `json:"command_id"`
	Answers   map[string]json.RawMessage `json:"answers,omitempty"`
	Skip      bool                       `json:"skip,omitempty"`
}

// AnswerQuestion applies a human answer (or skip) to a pending question
// exactly once (compare-and-swap pending → answered|declined), then
// completes the AwaitAnswer wait. The same command_id with the same
// answer returns the stored record (and completes the wait again, for a
// delivery that was lost); any other answer after one was applied is a
// *ConflictError carrying the first. Only a human (or admin) of the
// owning session answers.
func (s *Service) AnswerQuestion(ctx context.Context, id string, b AnswerBody, by Principal) (Question, error) {
	if by.Role != "human" && by.Role != "admin" {
		return Question{}, &ForbiddenError{Msg: "only a human of the session answers questions"}
	}
	if strings.TrimSpace(b.CommandID) == "" {
		return Question{}, &ValidationError{Field: "command_id", Msg: "required: an id you choose, kept for a retry of the same answer"}
	}
	if b.Skip && len(b.Answers) > 0 {
		return Question{}, &ValidationError{Field: "skip", Msg: "skip declines the whole request; send answers or skip, not both"}
	}
	if !b.Skip && len(b.Answers) == 0 {
		return Question{}, &ValidationError{Field: "answers", Msg: "required: answers by question id, or skip: true"}
	}
	actionID, gen, ok := ActionOfQuestion(id)
	if !ok {
		return Question{}, &NotFoundError{What: "question " + id}
	}
	q, err := s.getQuestion(ctx, actionID)
	if errors.Is(err, store.ErrNotFound) {
		return Question{}, &NotFoundError{What: "question " + id}
	}
	if err != nil {
		return Question{}, err
	}
	if by.Role != "admin" && by.Session != q.SessionID {
		return Question{}, &NotFoundError{What: "question " + id} // another session's: not visible
	}
	if q.QuestionID != id {
		if gen < q.Generation {
			return Question{}, &ConflictError{Code: "question_superseded", Msg: "this wait was replaced by a newer one; answer " + q.QuestionID, Current: QuestionView(q)}
		}
		return Question{}, &NotFoundError{What: "question " + id}
	}
	answers := canonicalAnswers(b.Answers)
	if q.Status != QuestionPending {
		return s.repeatedAnswer(ctx, q, b, answers)
	}
	if !b.Skip {
		if probs := (question.Request{Questions: q.Questions}).CheckAnswers(b.Answers); len(probs) > 0 {
			msgs := make([]string, len(probs))
			for i, p := range probs {
				msgs[i] = p.Error()
			}
			return Question{}, &ValidationError{Field: probs[0].Field, Msg: probs[0].Problem + " (all problems: " + strings.Join(msgs, "; ") + ")"}
		}
	}
	now := s.now()
	next := q
	next.Status, next.CommandID, next.AnsweredBy, next.AnsweredAt, next.UpdatedAt, next.Version = QuestionAnswered, b.CommandID, &by, &now, now, q.Version+1
	if b.Skip {
		next.Status = QuestionDeclined
	} else {
		next.Answers = answers
	}
	// The answer and its event (who, from which origin: AnsweredBy) are
	// one transaction: an entry of the session's decision log.
	if _, err := s.casWithEvent(ctx, s.questionItem(next), q.Version,
		Event{Type: "question." + string(next.Status), SessionID: next.SessionID, ExecutionID: next.ExecutionID, ActionID: next.ActionID}, QuestionView(next)); err != nil {
		var vc *store.VersionConflictError
		if !errors.As(err, &vc) {
			return Question{}, fmt.Errorf("answer question %s: %w", id, err)
		}
		cur, gerr := s.getQuestion(ctx, actionID)
		if gerr != nil {
			return Question{}, gerr
		}
		if cur.QuestionID != id {
			return Question{}, &ConflictError{Code: "question_superseded", Msg: "this wait was replaced by a newer one", Current: QuestionView(cur)}
		}
		return s.repeatedAnswer(ctx, cur, b, answers)
	}
	return s.deliverAnswer(ctx, next)
}

// repeatedAnswer answers a command against a question that is no longer
// pending: the same command with the same answer gets the stored record
// (and its wait completed again); anything else is a conflict with it.
func (s *Service) repeatedAnswer(ctx context.Context, q Question, b AnswerBody, answers json.RawMessage) (Question, error) {
	switch q.Status {
	case QuestionCancelled:
		return Question{}, &ConflictError{Code: "question_cancelled", Msg: "the question was cancelled (" + q.Reason + ")", Current: QuestionView(q)}
	case QuestionExpired:
		return Question{}, &ConflictError{Code: "question_expired", Msg: "the question expired (" + q.Reason + ")", Current: QuestionView(q)}
	}
	same := q.CommandID == b.CommandID && b.Skip == (q.Status == QuestionDeclined) && (b.Skip || bytes.Equal(q.Answers, answers))
	if !same {
		return Question{}, &ConflictError{Code: "already_answered", Msg: "the question is already " + string(q.Status) + " by command " + q.CommandID, Current: QuestionView(q)}
	}
	return s.deliverAnswer(ctx, q)
}

// deliverAnswer completes the AwaitAnswer wait of an applied answer. A
// wait that already ended without timing out (resent by recovery, or the
// machine stopped) is no error: the answer is durable. A wait that timed
// out makes the question expired: the answer never took effect. Any other
// failure returns the applied record with the error (the caller answers
// 202; recovery resends).
func (s *Service) deliverAnswer(ctx context.Context, q Question) (Question, error) {
	if s.cfg.Tasks == nil {
		return QuestionView(q), errors.New("actionflow: no TaskCompleter configured")
	}
	if a, err := s.getAction(ctx, q.ActionID); err == nil && a.Start != nil {
		return QuestionView(q), nil // already past the wait
	}
	// A closed action (cancelled after the answer was applied) still gets
	// the completion: dispatch then refuses the closed action and the
	// tool call is recorded not_started, instead of the wait hanging.
	err := s.cfg.Tasks.SendTaskSuccess(ctx, q.TaskToken, encode(map[string]any{"question_id": q.QuestionID, "status": q.Status}))
	switch {
	case errors.Is(err, ErrTaskTimedOut):
		expired, xerr := s.setQuestionStatus(ctx, q, QuestionExpired, "the wait ended before the answer arrived")
		if xerr != nil {
			return QuestionView(q), xerr
		}
		return Question{}, &ConflictError{Code: "question_expired", Msg: "the wait ended before the answer arrived", Current: QuestionView(expired)}
	case errors.Is(err, ErrTaskGone):
		s.log.Info("question wait already completed", "question_id", q.QuestionID, "error", err)
		return QuestionView(q), nil
	case err != nil:
		return QuestionView(q), fmt.Errorf("complete question wait %s: %w", q.QuestionID, err)
	}
	return QuestionView(q), nil
}

func canonicalAnswers(m map[string]json.RawMessage) json.RawMessage {
	if len(m) == 0 {
		return nil
	}
	cm := make(map[string]any, len(m))
	for k, v := range m {
		var x any
		if json.Unmarshal(v, &x) != nil {
			x = string(v)
		}
		cm[k] = x
	}
	b, _ := json.Marshal(cm) // map keys sorted: one spelling per answer
	return b
}

// questionResult is the tool result of an answered or declined question:
// the result dispatch stores after its start evidence. Derived from the
// stored question only, so computing it again gives the same result.
func questionResult(q Question) (ToolResult, error) {
	switch q.Status {
	case QuestionAnswered:
		var m map[string]json.RawMessage
		if err := json.Unmarshal(q.Answers, &m); err != nil {
			return ToolResult{}, fmt.Errorf("decode answers of %s: %w", q.QuestionID, err)
		}
		return ToolResult{Outcome: lifecycle.OutcomeSucceeded, Output: question.Request{Questions: q.Questions}.Output(m)}, nil
	case QuestionDeclined:
		return ToolResult{Outcome: lifecycle.OutcomeFailed, ErrorCode: QuestionDeclinedCode,
			Error: "The user declined to answer these questions (skipped). Do not assume any answer; continue without it or ask differently."}, nil
	}
	return ToolResult{}, fmt.Errorf("question %s is %s, not answered", q.QuestionID, q.Status)
}

// dispatchQuestion is dispatch "sync" for the question executor, reached
// only after AwaitAnswer completed: it writes start evidence, then stores
// the result computed from the stored answer. Unlike other executors it is
// safe to run again after start evidence (a crash between the two): the
// result is a pure function of the stored answer, so it never becomes
// unknown.
func (s *Service) dispatchQuestion(ctx context.Context, a Action) (ToolResult, error) {
	q, err := s.getQuestion(ctx, a.ActionID)
	if err != nil {
		return ToolResult{}, &NotStartedError{Code: "load_question", Msg: err.Error()}
	}
	res, rerr := questionResult(q)
	if a.Start == nil {
		if rerr != nil {
			return ToolResult{}, &PermanentError{Code: "question_" + string(q.Status), Msg: rerr.Error()}
		}
		if a, _, err = s.claim(ctx, a, ids.NewAttemptID(), ExecutorQuestion, "", s.cfg.LeaseTTL); err != nil {
			return ToolResult{}, err
		}
	} else if rerr != nil {
		return alreadyDispatched(a), nil
	}
	stored, err := s.storeResult(ctx, a.ActionID, a.Start.AttemptID, a.Start.Fence, res)
	if err != nil {
		s.logFor(&a).Warn("question result not stored on the action; it reaches record through the state machine only", "error", err)
		return res, nil
	}
	return *stored.Result, nil
}

// ResendAnswer completes a question wait again from the stored answer (a
// lost SendTaskSuccess), or fails it for a cancelled question. It acts
// only on the action's current wait (a superseded wait's record is gone),
// only while the action has not started and has no receipt; repeated, it
// is harmless (an ended wait is not an error).
func (s *Service) ResendAnswer(ctx context.Context, id ids.ActionID) (sent bool, err error) {
	a, err := s.getAction(ctx, id)
	if err != nil {
		return false, err
	}
	if a.Start != nil || a.Decision == nil || a.Decision.Executor != ExecutorQuestion {
		return false, nil
	}
	if _, err := s.getReceipt(ctx, id); err == nil {
		return false, nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return false, err
	}
	q, err := s.getQuestion(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if s.cfg.Tasks == nil {
		return false, errors.New("actionflow: no TaskCompleter configured")
	}
	switch q.Status {
	case QuestionAnswered, QuestionDeclined:
		err = s.cfg.Tasks.SendTaskSuccess(ctx, q.TaskToken, encode(map[string]any{"question_id": q.QuestionID, "status": q.Status}))
	case QuestionCancelled:
		err = s.cfg.Tasks.SendTaskFailure(ctx, q.TaskToken, ExecutionCancelled, q.Reason)
	default:
		return false, nil // pending: only a human answers; expired: the machine moved on
	}
	if errors.Is(err, ErrTaskGone) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("resend answer of %s: %w", q.QuestionID, err)
	}
	return true, nil
}

// GetQuestion reads a question by id for a principal of its session (or an
// admin). A superseded id is not found.
func (s *Service) GetQuestion(ctx context.Context, id string, by Principal) (Question, error) {
	actionID, _, ok := ActionOfQuestion(id)
	if !ok {
		return Question{}, &NotFoundError{What: "question " + id}
	}
	q, err := s.getQuestion(ctx, actionID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && (q.QuestionID != id || (by.Role != "admin" && by.Session != q.SessionID))) {
		return Question{}, &NotFoundError{What: "question " + id}
	}
	if err != nil {
		return Question{}, err
	}
	return QuestionView(q), nil
}

// QuestionOfAction reads an action's current question wait.
func (s *Service) QuestionOfAction(ctx context.Context, action ids.ActionID) (Question, error) {
	q, err := s.getQuestion(ctx, action)
	return QuestionView(q), err
}

// SessionQuestions lists a session's questions, oldest first: the pending
// ones (status "" or pending, from the sparse pending index) or those of
// one status, or all ("all").
func (s *Service) SessionQuestions(ctx context.Context, session ids.SessionID, status string) ([]Question, error) {
	index, pk, opts := store.IndexSession, sessionPK(session), store.QueryOptions{SKPrefix: "QUESTION#", Limit: 200}
	if status == "" || status == string(QuestionPending) {
		status = string(QuestionPending)
		index, pk, opts = store.IndexOpen, pendingQuestionsPK+string(session), store.QueryOptions{Limit: 200}
	}
	out := []Question{}
	for {
		page, err := s.cfg.Store.QueryIndex(ctx, index, pk, opts)
		if err != nil {
			return nil, fmt.Errorf("list questions of %s: %w", session, err)
		}
		for _, it := range page.Items {
			q, err := decode[Question](it, "question")
			if err != nil {
				return nil, err
			}
			if status == "all" || string(q.Status) == status { // the index is eventually consistent in DynamoDB
				out = append(out, QuestionView(q))
			}
		}
		if page.Next == "" {
			return out, nil
		}
		opts.After = page.Next
	}
}
