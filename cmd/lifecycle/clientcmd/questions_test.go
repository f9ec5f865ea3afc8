package clientcmd_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/auth"
	"github.com/openprogram/lifecycle/shared/executor"
	"github.com/openprogram/lifecycle/shared/httpapi"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/store/sqlitestore"
)

type allowQuestions struct{ askAll }

func (allowQuestions) Decide(context.Context, actionflow.Action) (actionflow.Decision, error) {
	return actionflow.Decision{Permission: lifecycle.PermissionAllow, PolicyVersion: "v1", Reason: actionflow.Reason{Source: "mode", Code: "question_to_user"}}, nil
}

// `lifecycle questions` lists what waits, `lifecycle answer` answers it
// (the wait is completed), a second different answer is refused, and
// --status answered shows the answer.
func TestQuestionCommands(t *testing.T) {
	dir := t.TempDir()
	st, err := sqlitestore.Open(filepath.Join(dir, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	tk := &tasks{done: map[string]bool{}}
	svc, err := actionflow.New(actionflow.Config{Store: st, Decider: allowQuestions{}, Router: executor.DefaultRoutes, Starter: noStart{}, Tasks: tk, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	keys, err := auth.LoadOrCreateKeys(dir)
	if err != nil {
		t.Fatal(err)
	}
	iss, _ := auth.NewIssuer(keys)
	h, err := httpapi.New(httpapi.Config{Service: svc, Auth: iss, Logger: quiet, NoUI: true})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	human, _ := iss.Issue("human", "ses_cli", time.Hour)
	agent, _ := iss.Issue("agent", "ses_cli", time.Hour)
	api := []string{"--api", srv.URL, "--token", human}

	out, err := run(t, "--api", srv.URL, "--token", agent, "submit", "--tool", "AskUserQuestion", "--json", "--args",
		`{"questions":[{"question":"Which environment?","options":[{"label":"Staging","description":"safe"},{"label":"Production"}]},{"question":"Why?","kind":"text"}]}`)
	if err != nil {
		t.Fatal(err, out)
	}
	var v httpapi.ActionView
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatal(err, out)
	}
	ctx := context.Background()
	si := actionflow.StepInput{ActionID: v.ActionID, ExecutionID: v.ExecutionID}
	if _, err := svc.Authorize(ctx, si); err != nil {
		t.Fatal(err)
	}
	si.Mode, si.TaskToken = "ask", "tok-q"
	if _, err := svc.Dispatch(ctx, si); err != nil {
		t.Fatal(err)
	}
	id := string(v.ActionID) + ".q1"
	out, err = run(t, append(api, "questions")...)
	if err != nil || !strings.Contains(out, id) || !strings.Contains(out, "q1 [single] Which environment?") || !strings.Contains(out, "- Staging: safe") {
		t.Fatalf("questions: %v\n%s", err, out)
	}
	if _, err := run(t, append(api, "answer", id)...); err == nil {
		t.Fatal("answer without --answers or --skip")
	}
	out, err = run(t, append(api, "answer", id, "--answers", `{"q1":"Nowhere","q2":"x"}`)...)
	if err == nil || !strings.Contains(err.Error(), "answers.q1") {
		t.Fatalf("invalid answer: %v\n%s", err, out)
	}
	out, err = run(t, append(api, "answer", id, "--id", "cmd-1", "--answers", `{"q1":"Staging","q2":"safer"}`)...)
	if err != nil || !strings.Contains(out, "answered by command cmd-1") || !tk.done["tok-q"] {
		t.Fatalf("answer: %v\n%s", err, out)
	}
	// The same command again is the stored answer; a skip after it is refused.
	if out, err = run(t, append(api, "answer", id, "--id", "cmd-1", "--answers", `{"q2":"safer","q1":"Staging"}`)...); err != nil {
		t.Fatalf("retry: %v\n%s", err, out)
	}
	if out, err = run(t, append(api, "answer", id, "--skip")...); err == nil || !strings.Contains(err.Error(), "already") {
		t.Fatalf("skip after an answer: %v\n%s", err, out)
	}
	out, err = run(t, append(api, "questions", "--status", "answered")...)
	if err != nil || !strings.Contains(out, `answers {"q1":"Staging","q2":"safer"}`) {
		t.Fatalf("answered: %v\n%s", err, out)
	}
	if out, err = run(t, "--api", srv.URL, "--token", agent, "answer", id, "--skip"); err == nil {
		t.Fatalf("an agent answered: %s", out)
	}
}
