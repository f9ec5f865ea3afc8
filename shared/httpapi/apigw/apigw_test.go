package apigw_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/auth"
	"github.com/openprogram/lifecycle/shared/control"
	"github.com/openprogram/lifecycle/shared/httpapi"
	"github.com/openprogram/lifecycle/shared/httpapi/apigw"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/modelreq"
	"github.com/openprogram/lifecycle/shared/policystore"
	"github.com/openprogram/lifecycle/shared/store/sqlitestore"
)

type allow struct{}

func (allow) Decide(context.Context, actionflow.Action) (actionflow.Decision, error) {
	return actionflow.Decision{Permission: lifecycle.PermissionAllow, PolicyVersion: "v1", Reason: actionflow.Reason{Source: "test", Code: "allow"}}, nil
}
func (allow) Revalidate(context.Context, actionflow.Action, actionflow.Decision, actionflow.Approval) (actionflow.Decision, error) {
	return actionflow.Decision{Permission: lifecycle.PermissionAllow}, nil
}
func (allow) ApprovalCompleted(context.Context, actionflow.Action, actionflow.Approval) error {
	return nil
}

type started []ids.ActionID

func (s *started) StartAction(_ context.Context, id ids.ActionID, _ []byte) error {
	*s = append(*s, id)
	return nil
}

func gateway(t *testing.T) (apigw.Handler, *started) {
	t.Helper()
	st, err := sqlitestore.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	starts := &started{}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	svc, err := actionflow.New(actionflow.Config{Store: st, Decider: allow{}, Starter: starts, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ctl, err := control.New(control.Config{Flow: svc, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	h, err := httpapi.New(httpapi.Config{Service: svc, Auth: auth.GatewayClaims{}, Control: httpapi.ControlService{Service: ctl},
		DisableStreaming: true, NoUI: true, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	return apigw.Handler{H: h}, starts
}

func event(t *testing.T, name string) events.APIGatewayV2HTTPRequest {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "events", "apigateway", name))
	if err != nil {
		t.Fatal(err)
	}
	var ev events.APIGatewayV2HTTPRequest
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ev); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return ev
}

func TestGatewayEvents(t *testing.T) {
	h, starts := gateway(t)
	ctx := context.Background()
	var submitted httpapi.ActionView
	atSubmitted := func(ev *events.APIGatewayV2HTTPRequest) {
		id := string(submitted.ExecutionID)
		ev.RawPath = strings.Replace(ev.RawPath, "exe_demo", id, 1)
		ev.RequestContext.HTTP.Path = ev.RawPath
		ev.PathParameters["execution_id"] = id
	}
	cases := []struct {
		name   string
		event  string
		edit   func(*events.APIGatewayV2HTTPRequest)
		status int
		check  func(t *testing.T, body string)
	}{
		{name: "health without a token", event: "healthz.json", status: 200},
		{name: "an agent submits with verified claims", event: "submit-action.json", status: 202, check: func(t *testing.T, body string) {
			var v httpapi.ActionView
			json.Unmarshal([]byte(body), &v)
			if v.SessionID != "ses_demo" || v.Origin != "agent-7" || len(*starts) != 1 {
				t.Fatalf("submitted %s", body)
			}
			submitted = v
		}},
		{name: "the same submission with a base64 body replays", event: "submit-action.json", status: 202,
			edit: func(ev *events.APIGatewayV2HTTPRequest) {
				ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString([]byte(ev.Body)), true
			}},
		{name: "a human of another session is refused", event: "approvals-other-session.json", status: 403},
		{name: "events answer a JSON batch", event: "events-batch.json", status: 200, check: func(t *testing.T, body string) {
			var b httpapi.EventBatch
			json.Unmarshal([]byte(body), &b)
			if len(b.Events) != 1 || b.Events[0].Type != "action.submitted" {
				t.Fatalf("batch %s", body)
			}
		}},
		{name: "a bearer header without verified claims is not enough", event: "events-batch.json", status: 401,
			edit: func(ev *events.APIGatewayV2HTTPRequest) { ev.RequestContext.Authorizer = nil }},
		{name: "claims in headers are ignored", event: "events-batch.json", status: 401,
			edit: func(ev *events.APIGatewayV2HTTPRequest) {
				ev.RequestContext.Authorizer = nil
				ev.Headers["role"], ev.Headers["sid"], ev.Headers["sub"] = "admin", "ses_demo", "x"
			}},
		{name: "the agent reports a model request started", event: "start-model-request.json", status: 201, edit: atSubmitted, check: func(t *testing.T, body string) {
			var m modelreq.Record
			json.Unmarshal([]byte(body), &m)
			if m.RequestID != "req_demo_1" || m.Status != modelreq.Open || m.ExecutionID != submitted.ExecutionID || m.SessionID != "ses_demo" {
				t.Fatalf("started %s", body)
			}
		}},
		{name: "the same report again is the stored record", event: "start-model-request.json", status: 200, edit: atSubmitted},
		{name: "an agent of another session may not report one", event: "start-model-request.json", status: 403,
			edit: func(ev *events.APIGatewayV2HTTPRequest) {
				atSubmitted(ev)
				ev.RequestContext.Authorizer.JWT.Claims["sid"] = "ses_other"
			}},
		{name: "the agent reports its completion", event: "complete-model-request.json", status: 200, edit: atSubmitted, check: func(t *testing.T, body string) {
			var m modelreq.Record
			json.Unmarshal([]byte(body), &m)
			if m.Status != modelreq.Completed || m.Usage.InputTokens != 1200 || m.Usage.OutputTokens != 345 {
				t.Fatalf("completed %s", body)
			}
		}},
		{name: "the agent lists its execution's managed processes", event: "list-execution-processes.json", status: 200, edit: atSubmitted, check: func(t *testing.T, body string) {
			if strings.TrimSpace(body) != `{"processes":[]}` {
				t.Fatalf("processes %s", body)
			}
		}},
		{name: "a stop of a process nobody started answers like another session's", event: "stop-process.json", status: 403},
		{name: "the agent ends its execution", event: "end-execution.json", status: 202, edit: atSubmitted, check: func(t *testing.T, body string) {
			var r httpapi.CommandResult
			json.Unmarshal([]byte(body), &r)
			if r.Type != "end" || r.Status != "applied" || r.ExecutionID != submitted.ExecutionID {
				t.Fatalf("end %s", body)
			}
		}},
		{name: "a person sets the session's execution settings with its policy", event: "put-policy.json", status: 200, check: func(t *testing.T, body string) {
			var d policystore.Document
			json.Unmarshal([]byte(body), &d)
			if d.Version != 1 || d.IterationLimit != 25 || d.IterationLimitSource != "session" || d.IdleTimeoutSeconds != 3600 || d.IdleTimeoutSource != "session" {
				t.Fatalf("policy %s", body)
			}
		}},
		{name: "an idle timeout under a minute is a 400 naming it", event: "put-policy.json", status: 400,
			edit: func(ev *events.APIGatewayV2HTTPRequest) {
				ev.Body = `{"expected_version":1,"policy":{},"idle_timeout_seconds":30}`
			},
			check: func(t *testing.T, body string) {
				if !strings.Contains(body, `"field":"idle_timeout_seconds"`) {
					t.Fatalf("error %s", body)
				}
			}},
		{name: "an agent of another session may not end it", event: "end-execution.json", status: 403,
			edit: func(ev *events.APIGatewayV2HTTPRequest) {
				atSubmitted(ev)
				ev.RequestContext.Authorizer.JWT.Claims["sid"] = "ses_other"
			}},
		{name: "a human forks the ended execution from a saved point", event: "fork-execution.json", status: 202, edit: atSubmitted, check: func(t *testing.T, body string) {
			var r httpapi.CommandResult
			json.Unmarshal([]byte(body), &r)
			if r.Type != "fork" || r.Status != "applied" || r.ChildExecutionID == "" {
				t.Fatalf("fork %s", body)
			}
		}},
		{name: "a fork from a saved point the execution does not have", event: "fork-execution.json", status: 409,
			edit: func(ev *events.APIGatewayV2HTTPRequest) {
				atSubmitted(ev)
				ev.Body = `{"command_id":"cmd_fork_2","type":"fork","expected_version":2,"payload":{"checkpoint_version":1}}`
			}, check: func(t *testing.T, body string) {
				if !strings.Contains(body, `"saved_point_unavailable"`) {
					t.Fatalf("fork from 1: %s", body)
				}
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := event(t, c.event)
			if c.edit != nil {
				c.edit(&ev)
			}
			res, err := h.Handle(ctx, ev)
			if err != nil {
				t.Fatal(err)
			}
			if res.StatusCode != c.status || res.IsBase64Encoded || !strings.HasPrefix(res.Headers["Content-Type"], "application/json") {
				t.Fatalf("%d %v %s", res.StatusCode, res.Headers, res.Body)
			}
			if c.check != nil {
				c.check(t, res.Body)
			}
		})
	}
	if len(*starts) != 2 || (*starts)[0] != (*starts)[1] {
		t.Fatalf("starts %v: the replay must start the same action", *starts)
	}
}

type hostRouter struct{}

func (hostRouter) Route(string) (string, bool) { return "lost", true }

// lostConnection cannot tell whether its call took effect.
type lostConnection struct{}

func (lostConnection) Execute(context.Context, actionflow.Task) (actionflow.ToolResult, error) {
	return actionflow.ToolResult{Outcome: lifecycle.OutcomeUnknown, ErrorCode: "connection_reset"}, nil
}

// TestGatewayReconciliation (issue 12): the sample event of a person's
// reconciliation reaches the service through the Lambda adapter with the
// verified claims; the same event with an agent's claims is refused.
func TestGatewayReconciliation(t *testing.T) {
	ctx := context.Background()
	st, err := sqlitestore.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	svc, err := actionflow.New(actionflow.Config{Store: st, Decider: allow{}, Starter: &started{}, Logger: quiet,
		Router: hostRouter{}, Executors: map[string]actionflow.Executor{"lost": lostConnection{}}})
	if err != nil {
		t.Fatal(err)
	}
	a, _, err := svc.Submit(ctx, actionflow.SubmitRequest{SessionID: "ses_demo", ToolCallID: "call_1", Tool: "upload",
		Arguments: json.RawMessage(`{"key":"report.pdf"}`), Interactive: true, Principal: actionflow.Principal{Subject: "agent-7", Role: "agent", Session: "ses_demo"}})
	if err != nil {
		t.Fatal(err)
	}
	si := actionflow.StepInput{ActionID: a.ActionID, ExecutionID: a.ExecutionID}
	if _, err := svc.Authorize(ctx, si); err != nil {
		t.Fatal(err)
	}
	si.Mode = "sync"
	res, err := svc.Dispatch(ctx, si)
	if err != nil {
		t.Fatal(err)
	}
	si.Mode, si.Result = "", &res
	if _, err := svc.Record(ctx, si); err != nil { // which projects
		t.Fatal(err)
	}
	h, err := httpapi.New(httpapi.Config{Service: svc, Auth: auth.GatewayClaims{}, DisableStreaming: true, NoUI: true, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	gw := apigw.Handler{H: h}
	for _, c := range []struct {
		name   string
		role   string
		status int
	}{{"an agent's claims are refused", "agent", 403}, {"a person reconciles", "human", 201}, {"the same again is the stored record", "human", 200}} {
		t.Run(c.name, func(t *testing.T) {
			ev := event(t, "reconcile-action.json")
			ev.RawPath = strings.ReplaceAll(ev.RawPath, "act_01jn0000000000000000000000", string(a.ActionID))
			ev.RequestContext.HTTP.Path = ev.RawPath
			ev.PathParameters["action_id"] = string(a.ActionID)
			ev.RequestContext.Authorizer.JWT.Claims["role"] = c.role
			res, err := gw.Handle(ctx, ev)
			if err != nil || res.StatusCode != c.status {
				t.Fatalf("%d %s %v", res.StatusCode, res.Body, err)
			}
		})
	}
	got, _ := svc.GetAction(ctx, a.ActionID)
	if got.States.Outcome != lifecycle.OutcomeFailed || !got.States.Reconciled || got.ReconciledBy.Subject != "owner-1" {
		t.Fatalf("after: %+v by %+v", got.States, got.ReconciledBy)
	}
}
