package httpapi_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/apiclient"
	"github.com/openprogram/lifecycle/shared/auth"
	"github.com/openprogram/lifecycle/shared/hosttools"
	"github.com/openprogram/lifecycle/shared/hostworker"
	"github.com/openprogram/lifecycle/shared/httpapi"
	"github.com/openprogram/lifecycle/shared/lifecycle"
)

// TestRemoteHostWorker runs the real host worker over the HTTP client:
// list (long poll), claim (start evidence), run Bash in a workspace, post.
func TestRemoteHostWorker(t *testing.T) {
	s := newStack(t)
	agent := s.token(auth.RoleAgent, "ses_1")
	ctx, cancel := context.WithCancel(context.Background())
	w := &hostworker.Worker{
		Host:   apiclient.Host{Client: &apiclient.Client{BaseURL: s.url, Token: agent, HTTP: s.client}},
		Runner: hosttools.Runner{Workspace: t.TempDir()},
		Log:    quiet, Poll: 2 * time.Second,
	}
	stopped := make(chan error, 1)
	go func() { stopped <- w.Run(ctx) }()
	defer func() {
		cancel()
		<-stopped
	}()
	v := s.submit(agent, "ses_1", "k1", submitBody("Bash", `{"command":"echo hello from the host"}`, "c1"))
	done := s.waitAction(agent, v.ActionID)
	if done.States.Outcome != lifecycle.OutcomeSucceeded || done.Receipt.Output != "hello from the host\n" || done.Start.Executor != "host" {
		t.Fatalf("host action: %+v receipt %+v", done.States, done.Receipt)
	}
}

// TestHostTaskOwnershipOverHTTP: a second claim is 409 (the worker skips
// it), a result from a non-owner is 409, the owner's result is accepted.
func TestHostTaskOwnershipOverHTTP(t *testing.T) {
	s := newStack(t)
	v := seedVictim(t, s)
	agent := s.token(auth.RoleAgent, "ses_1")
	host := apiclient.Host{Client: &apiclient.Client{BaseURL: s.url, Token: agent, HTTP: s.client}}
	ctx := context.Background()

	tasks, err := host.Tasks(ctx, time.Second)
	if err != nil || len(tasks) != 1 || tasks[0] != v.hostTask.ActionID {
		t.Fatalf("tasks %v %v", tasks, err)
	}
	task, err := host.Start(ctx, v.hostTask.ActionID, "att_1")
	if err != nil || task.Fence < 1 || string(task.Arguments) != `{"command":"echo hi"}` || task.Tool != "Bash" {
		t.Fatalf("start: %+v %v", task, err)
	}
	var ce *actionflow.ConflictError
	if _, err := host.Start(ctx, v.hostTask.ActionID, "att_2"); !errors.As(err, &ce) || ce.Code != "already_started" {
		t.Fatalf("second claim: %v", err)
	}
	// The owner heartbeats while the tool runs; another attempt cannot.
	if err := host.Heartbeat(ctx, v.hostTask.ActionID, "att_1", task.Fence); err != nil {
		t.Fatalf("owner heartbeat: %v", err)
	}
	if err := host.Heartbeat(ctx, v.hostTask.ActionID, "att_2", task.Fence); !errors.As(err, &ce) || ce.Code != "stale_attempt" {
		t.Fatalf("non-owner heartbeat: %v", err)
	}
	ok := actionflow.ToolResult{Outcome: lifecycle.OutcomeSucceeded, Output: "hi\n"}
	if err := host.Result(ctx, v.hostTask.ActionID, "att_2", task.Fence, ok); !errors.As(err, &ce) || ce.Code != "stale_attempt" {
		t.Fatalf("non-owner result: %v", err)
	}
	if err := host.Result(ctx, v.hostTask.ActionID, "att_1", task.Fence, ok); err != nil {
		t.Fatal(err)
	}
	done := s.waitAction(agent, v.hostTask.ActionID)
	if done.States.Outcome != lifecycle.OutcomeSucceeded {
		t.Fatalf("%+v", done.States)
	}
	// Once started the task is no longer listed; a short wait returns empty.
	r := s.do(req{method: "GET", path: "/v1/hosts/tasks?wait=0.2", token: agent})
	var l httpapi.HostTaskList
	r.decode(t, &l)
	if r.status != http.StatusOK || len(l.Tasks) != 0 {
		t.Fatalf("tasks after start: %s", r.body)
	}
	// The view never exposes the task token.
	r = s.do(req{method: "GET", path: "/v1/actions/" + string(v.hostTask.ActionID), token: agent})
	if strings.Contains(string(r.body), "tok-") || strings.Contains(string(r.body), "task_token") {
		t.Fatalf("task token exposed: %s", r.body)
	}
}
