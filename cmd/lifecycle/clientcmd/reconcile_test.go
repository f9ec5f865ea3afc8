package clientcmd_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/apiclient"
	"github.com/openprogram/lifecycle/shared/auth"
	"github.com/openprogram/lifecycle/shared/embedded"
	"github.com/openprogram/lifecycle/shared/executor"
	"github.com/openprogram/lifecycle/shared/httpapi"
	"github.com/openprogram/lifecycle/shared/lifecycle"
)

type allowAll struct{}

func (allowAll) Decide(context.Context, actionflow.Action) (actionflow.Decision, error) {
	return actionflow.Decision{Permission: lifecycle.PermissionAllow, PolicyVersion: "v1", Reason: actionflow.Reason{Source: "allow_rule", Code: "allow"}}, nil
}
func (allowAll) Revalidate(context.Context, actionflow.Action, actionflow.Decision, actionflow.Approval) (actionflow.Decision, error) {
	return actionflow.Decision{Permission: lifecycle.PermissionAllow}, nil
}
func (allowAll) ApprovalCompleted(context.Context, actionflow.Action, actionflow.Approval) error {
	return nil
}

// droppedConnection is an executor whose call may or may not have taken
// effect: the connection dropped mid-call.
type droppedConnection struct{}

func (droppedConnection) Execute(context.Context, actionflow.Task) (actionflow.ToolResult, error) {
	return actionflow.ToolResult{Outcome: lifecycle.OutcomeUnknown, ErrorCode: "connection_reset", Error: "the connection dropped mid-call"}, nil
}

// TestReconcileCommand: `lifecycle reconcile` on the embedded stack. An
// agent is refused; a person reconciles; the same again says "already
// reconciled"; a different one is refused with the first; show prints it.
func TestReconcileCommand(t *testing.T) {
	dir := t.TempDir()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	es, err := embedded.Start(context.Background(), embedded.Config{StateDir: dir, NoHostWorker: true, Decider: allowAll{}, Logger: quiet,
		Routes: executor.Routes{"charge": "flaky"}, Executors: map[string]actionflow.Executor{"flaky": droppedConnection{}}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		es.Close(ctx)
	}()
	iss, err := auth.NewIssuer(auth.Keys{Agent: []byte("agent-key-agent-key-agent-key-agent"), Human: []byte("test-key-test-key-test-key-test-key")})
	if err != nil {
		t.Fatal(err)
	}
	h, err := httpapi.New(httpapi.Config{Service: es.Service, Auth: iss, Logger: quiet, NoUI: true})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	agent, _ := iss.Issue("agent", "ses_cli", time.Hour)
	human, _ := iss.Issue("human", "ses_cli", time.Hour)

	interactive := true
	c := &apiclient.Client{BaseURL: srv.URL, Token: agent, HTTP: srv.Client()}
	v, _, err := c.Submit(context.Background(), apiclient.SubmitRequest{SessionID: "ses_cli", IdempotencyKey: "k1",
		Body: httpapi.SubmitBody{Tool: "charge", Arguments: json.RawMessage(`{"amount":5}`), ToolCallID: "c1", Interactive: &interactive}})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for v.States.Delivery != lifecycle.DeliveryProjected {
		if time.Now().After(deadline) {
			t.Fatalf("not projected: %+v", v.States)
		}
		if v, err = c.Action(context.Background(), v.ActionID, 2*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	if v.States.Outcome != lifecycle.OutcomeUnknown {
		t.Fatalf("outcome %s, want unknown", v.States.Outcome)
	}
	id := string(v.ActionID)
	steps := []struct {
		name    string
		token   string
		args    []string
		wantErr string
		wantOut string
	}{
		{"an agent is refused", agent, []string{"reconcile", id, "--outcome", "failed", "--note", "no charge in the ledger"}, "forbidden", ""},
		{"a note is required", human, []string{"reconcile", id, "--outcome", "failed"}, `"note" not set`, ""},
		{"a person reconciles", human, []string{"reconcile", id, "--outcome", "failed", "--note", "no charge in the ledger"}, "", id + " reconciled as failed"},
		{"the same again is harmless", human, []string{"reconcile", id, "--outcome", "failed", "--note", "no charge in the ledger"}, "", id + " already reconciled as failed"},
		{"a different one is refused", human, []string{"reconcile", id, "--outcome", "succeeded", "--note", "it went through"}, "already_reconciled", ""},
		{"show prints it", human, []string{"show", id}, "", "reconciled  failed by "},
	}
	for _, st := range steps {
		out, err := run(t, append([]string{"--api", srv.URL, "--token", st.token}, st.args...)...)
		switch {
		case st.wantErr != "" && (err == nil || !strings.Contains(err.Error(), st.wantErr)):
			t.Fatalf("%s: err %v, want %q\n%s", st.name, err, st.wantErr, out)
		case st.wantErr == "" && err != nil:
			t.Fatalf("%s: %v\n%s", st.name, err, out)
		case !strings.Contains(out, st.wantOut):
			t.Fatalf("%s: output %q, want %q", st.name, out, st.wantOut)
		}
	}
	if got, err := c.Action(context.Background(), v.ActionID, 0); err != nil || got.States.Outcome != lifecycle.OutcomeFailed || !got.States.Reconciled {
		t.Fatalf("after: %+v %v", got.States, err)
	}
}
