package awsmode_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/apiclient"
	"github.com/openprogram/lifecycle/shared/httpapi"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
)

const session = ids.SessionID("ses_awsmode")

// The policy of the session: noop and the tool Lambda are allowed, rm is
// denied, everything else (Write) asks a person.
const policy = `{"version":"awsmode.1","mode":"default","allow":["noop","` + toolName + `"],"deny":["Bash(rm *)"]}`

// actionTimeout bounds one action's way through cold-started functions on
// a loaded machine.
const actionTimeout = 90 * time.Second

type client struct {
	t *testing.T
	*apiclient.Client
}

func (s *stack) client(sub, role string) client {
	return client{t: s.t, Client: &apiclient.Client{BaseURL: s.gwURL, Token: s.gw.token(sub, role, string(session))}}
}

func (c client) submit(tool, args string) httpapi.ActionView {
	c.t.Helper()
	yes := true
	v, _, err := c.Submit(context.Background(), apiclient.SubmitRequest{SessionID: session, IdempotencyKey: ids.New("key"),
		Body: httpapi.SubmitBody{Tool: tool, Arguments: json.RawMessage(args), ToolCallID: ids.ToolCallID(ids.New("call")), Interactive: &yes}})
	if err != nil {
		c.t.Fatalf("submit %s %s: %v", tool, args, err)
	}
	return v
}

func (c client) waitAction(id ids.ActionID, what string, cond func(httpapi.ActionView) bool) httpapi.ActionView {
	c.t.Helper()
	var v httpapi.ActionView
	poll(c.t, actionTimeout, fmt.Sprintf("action %s %s", id, what), func() (bool, string) {
		var err error
		v, err = c.Action(context.Background(), id, 0)
		if err != nil {
			return false, err.Error()
		}
		return cond(v), fmt.Sprintf("%+v", v.States)
	})
	return v
}

func terminal(v httpapi.ActionView) bool { return v.States.Terminal() }

func (c client) pendingApproval(id ids.ActionID) httpapi.ApprovalView {
	c.t.Helper()
	var found httpapi.ApprovalView
	poll(c.t, actionTimeout, "a pending approval for "+string(id), func() (bool, string) {
		list, err := c.Approvals(context.Background(), session)
		if err != nil {
			return false, err.Error()
		}
		for _, ap := range list {
			if ap.ActionID == id && ap.Status == actionflow.ApprovalPending {
				found = ap
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d approvals", len(list))
	})
	return found
}

// wantStates compares the three states (and start evidence) of an action
// with its receipt and with what the projection bus delivered for it.
func (s *stack) wantStates(t *testing.T, v httpapi.ActionView, want lifecycle.States) {
	t.Helper()
	if v.States != want {
		d, _ := json.Marshal(v.Decision)
		t.Fatalf("action %s (%s): states %+v, want %+v (decision %s, receipt %+v)", v.ActionID, v.Tool, v.States, want, d, v.Receipt)
	}
	if v.Receipt == nil {
		t.Fatalf("action %s: no receipt", v.ActionID)
	}
	if v.Receipt.Outcome != want.Outcome {
		t.Fatalf("action %s: receipt outcome %s, want %s", v.ActionID, v.Receipt.Outcome, want.Outcome)
	}
	s.wantProjected(t, v.ActionID, want)
}

// wantProjected: the bus carried the action's projection, with its final
// states, at least once (EventBridge delivery is at least once).
func (s *stack) wantProjected(t *testing.T, id ids.ActionID, want lifecycle.States) {
	t.Helper()
	var last string
	poll(t, 30*time.Second, "the projection of "+string(id)+" on the bus", func() (bool, string) {
		evs := s.busEvents(string(id))
		var types []string
		for _, e := range evs {
			types = append(types, e.Type)
			var d struct {
				States lifecycle.States `json:"states"`
			}
			if json.Unmarshal(e.Data, &d) == nil && e.Type == "action.projected" && d.States == want {
				return true, ""
			}
		}
		last = strings.Join(types, ",")
		return false, "events: " + last
	})
}

// TestAWSMode runs the deployed artifacts together on this machine: every
// function's bootstrap under the Lambda Runtime Interface Emulator, the
// ASL file on the embedded engine invoking them through the Lambda Invoke
// API, DynamoDB (minidyn), EventBridge, S3 and SQS (moto), and the api
// function behind API Gateway's stand-in, driven by the HTTP API and by
// `lifecycle host`.
func TestAWSMode(t *testing.T) {
	start := time.Now()
	s := newStack(t)
	t.Logf("stack up in %s", time.Since(start).Round(time.Millisecond))
	agent := s.client("agent-1", "agent")
	human := s.client("alice", "human")
	ctx := context.Background()

	t.Run("gateway", func(t *testing.T) {
		cases := []struct {
			name, path, token string
			want              int
		}{
			{"healthz needs no token", "/healthz", "", http.StatusOK},
			{"the API refuses a request without a token", "/v1/tools?session_id=" + string(session), "", http.StatusUnauthorized},
			{"the API refuses a token of another issuer", "/v1/tools?session_id=" + string(session), forged(), http.StatusUnauthorized},
			{"the API answers a verified agent", "/v1/tools?session_id=" + string(session), agent.Token, http.StatusOK},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				req, _ := http.NewRequest(http.MethodGet, s.gwURL+tc.path, nil)
				if tc.token != "" {
					req.Header.Set("Authorization", "Bearer "+tc.token)
				}
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(res.Body)
				res.Body.Close()
				if res.StatusCode != tc.want {
					t.Fatalf("GET %s: %d %s, want %d", tc.path, res.StatusCode, b, tc.want)
				}
			})
		}
		first := int64(0)
		if _, err := human.PutPolicy(ctx, session, httpapi.PolicyBody{ExpectedVersion: &first, Policy: json.RawMessage(policy)}); err != nil {
			t.Fatalf("put the session policy: %v", err)
		}
	})

	ws := filepath.Join(s.dir, "workspace")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	s.hostWorker(t, ws, agent.Token)

	t.Run("allow deny ask", func(t *testing.T) {
		noop := agent.submit("noop", `{}`)
		tool := agent.submit(toolName, `{"size":20000}`)
		denied := agent.submit("Bash", `{"command":"rm -rf notes"}`)
		asked := agent.submit("Write", `{"file_path":"notes/hello.txt","content":"hi"}`)
		declined := agent.submit("Write", `{"file_path":"notes/never.txt","content":"no"}`)
		allowed := lifecycle.States{Permission: lifecycle.PermissionAllow, Outcome: lifecycle.OutcomeSucceeded, Delivery: lifecycle.DeliveryProjected, Started: true}

		t.Run("allow", func(t *testing.T) {
			v := agent.waitAction(noop.ActionID, "ends", terminal)
			s.wantStates(t, v, allowed)
			// The api function registered this deployment's revision at its
			// cold start and started the action on its version (issue 15).
			d, err := s.sfn.DescribeExecution(context.Background(), &sfn.DescribeExecutionInput{ExecutionArn: aws.String(s.engine.ExecutionArn(string(noop.ActionID)))})
			if err != nil {
				t.Fatal(err)
			}
			if got, want := aws.ToString(d.StateMachineVersionArn), s.engine.StateMachineArn()+":1"; got != want || v.Revision == "" {
				t.Fatalf("the action ran on %q (revision %q), want the deployment's version %s", got, v.Revision, want)
			}
		})
		t.Run("allow a tool Lambda, its large result in S3", func(t *testing.T) {
			v := agent.waitAction(tool.ActionID, "ends", terminal)
			s.wantStates(t, v, allowed)
			if n := s.toolInvocations(string(tool.ActionID)); n != 1 {
				t.Fatalf("the tool function ran %d times, want 1", n)
			}
			key := "results/" + string(v.ExecutionID) + "/" + string(v.ActionID)
			obj, err := s.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
			if err != nil {
				t.Fatalf("the result blob s3://%s/%s: %v (receipt %+v)", bucket, key, err, v.Receipt)
			}
			b, _ := io.ReadAll(obj.Body)
			obj.Body.Close()
			if len(b) != 20000 || !strings.HasPrefix(string(b), "ran "+string(v.ActionID)) {
				t.Fatalf("the result blob holds %d bytes %.40q..., want the tool's 20000", len(b), b)
			}
		})
		t.Run("deny", func(t *testing.T) {
			s.wantStates(t, agent.waitAction(denied.ActionID, "ends", terminal),
				lifecycle.States{Permission: lifecycle.PermissionDeny, Outcome: lifecycle.OutcomeNotStarted, Delivery: lifecycle.DeliveryProjected})
		})
		t.Run("ask then approve, run by lifecycle host", func(t *testing.T) {
			ap := human.pendingApproval(asked.ActionID)
			if _, err := human.Decide(ctx, ids.ApprovalID(ap.ApprovalID), "approve", ap.ArgsDigest); err != nil {
				t.Fatalf("approve: %v", err)
			}
			v := agent.waitAction(asked.ActionID, "ends", terminal)
			s.wantStates(t, v, lifecycle.States{Permission: lifecycle.PermissionAllow, Outcome: lifecycle.OutcomeSucceeded, Delivery: lifecycle.DeliveryProjected, Started: true})
			if b, err := os.ReadFile(filepath.Join(ws, "notes", "hello.txt")); err != nil || string(b) != "hi" {
				t.Fatalf("the host worker did not write the file: %q %v", b, err)
			}
		})
		t.Run("ask then decline", func(t *testing.T) {
			ap := human.pendingApproval(declined.ActionID)
			if _, err := human.Decide(ctx, ids.ApprovalID(ap.ApprovalID), "decline", ap.ArgsDigest); err != nil {
				t.Fatalf("decline: %v", err)
			}
			v := agent.waitAction(declined.ActionID, "ends", terminal)
			if v.States.Outcome != lifecycle.OutcomeNotStarted || v.States.Started || v.Receipt == nil {
				t.Fatalf("declined: %+v receipt %v", v.States, v.Receipt)
			}
			s.wantProjected(t, v.ActionID, v.States)
			if _, err := os.Stat(filepath.Join(ws, "notes", "never.txt")); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("a declined Write was dispatched: %v", err)
			}
		})
	})

	t.Run("recover on a status-change event", func(t *testing.T) {
		a := agent.submit("Write", `{"file_path":"notes/stopped.txt","content":"no"}`)
		human.pendingApproval(a.ActionID)
		before := len(s.recoverCalls("status_change"))
		if _, err := s.sfn.StopExecution(ctx, &sfn.StopExecutionInput{ExecutionArn: aws.String(s.engine.ExecutionArn(string(a.ActionID))),
			Error: aws.String("Test.Stop"), Cause: aws.String("stopped by the AWS-mode test")}); err != nil {
			t.Fatalf("stop the execution: %v", err)
		}
		var call recoverCall
		poll(t, actionTimeout, "the recover invocation for the ABORTED execution", func() (bool, string) {
			calls := s.recoverCalls("status_change")
			if len(calls) > before {
				call = calls[len(calls)-1]
				return true, ""
			}
			return false, fmt.Sprintf("%d calls", len(calls))
		})
		if call.err != nil {
			t.Fatalf("recover: %v", call.err)
		}
		var out struct {
			Trigger  string `json:"trigger"`
			ActionID string `json:"action_id"`
			Changed  int    `json:"changed"`
		}
		if err := json.Unmarshal(call.out, &out); err != nil || out.Trigger != "status_change" || out.ActionID != string(a.ActionID) || out.Changed != 1 {
			t.Fatalf("recover answered %s (%v), want the status change of %s handled", call.out, err, a.ActionID)
		}
		v := agent.waitAction(a.ActionID, "ends", terminal)
		if v.States.Outcome != lifecycle.OutcomeNotStarted || v.States.Started || v.Receipt == nil || v.States.Delivery != lifecycle.DeliveryProjected {
			t.Fatalf("after the stopped wait: %+v receipt %v", v.States, v.Receipt)
		}
		s.wantProjected(t, v.ActionID, v.States)
	})

	t.Run("recover on the schedule", func(t *testing.T) {
		// Step Functions is down while the agent submits: the action is
		// stored, its machine never started, the agent got an error.
		s.sfnDown.Store(true)
		call := ids.ToolCallID(ids.New("call"))
		yes := true
		_, _, err := agent.Submit(ctx, apiclient.SubmitRequest{SessionID: session, IdempotencyKey: ids.New("key"),
			Body: httpapi.SubmitBody{Tool: "noop", Arguments: json.RawMessage(`{}`), ToolCallID: call, Interactive: &yes}})
		s.sfnDown.Store(false)
		if err == nil {
			t.Fatal("the submission succeeded while Step Functions was down")
		}
		id := agent.submittedAction(call)
		if _, err := s.sfn.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(s.engine.ExecutionArn(string(id)))}); err == nil {
			t.Fatal("the machine of the failed submission exists")
		}
		c := s.invokeRecover("schedule", map[string]any{"version": "0", "id": ids.New("evt"), "detail-type": "Scheduled Event",
			"source": "aws.events", "account": account, "time": time.Now().UTC().Format(time.RFC3339), "region": region,
			"resources": []string{"arn:aws:events:" + region + ":" + account + ":rule/lifecycle-recover-schedule"}, "detail": map[string]any{}})
		if c.err != nil {
			t.Fatalf("scheduled recover: %v", c.err)
		}
		var out struct {
			Trigger string `json:"trigger"`
			Changed int    `json:"changed"`
			Errors  int    `json:"errors"`
		}
		if err := json.Unmarshal(c.out, &out); err != nil || out.Trigger != "schedule" || out.Changed < 1 || out.Errors != 0 {
			t.Fatalf("recover answered %s (%v), want a sweep that changed the stranded action", c.out, err)
		}
		s.wantStates(t, agent.waitAction(id, "ends", terminal),
			lifecycle.States{Permission: lifecycle.PermissionAllow, Outcome: lifecycle.OutcomeSucceeded, Delivery: lifecycle.DeliveryProjected, Started: true})
	})

	// A crash mid-dispatch, two ways: the whole environment dies (the
	// emulator and the function; the front door answers for Lambda), or
	// the function process dies and the emulator answers. Either way the
	// action ends unknown and the tool never runs again.
	crashes := []struct {
		name string
		kill func(*function) int
		// environmentLost: the front door saw the environment die.
		environmentLost bool
	}{
		{"dispatch environment killed while the tool runs", (*function).killBusy, true},
		{"dispatch function process killed while the tool runs", (*function).killBusyFunction, false},
	}
	for _, tc := range crashes {
		t.Run(tc.name, func(t *testing.T) {
			dispatch := s.lambda.function("dispatch")
			lost := dispatch.crashes.Load()
			a := agent.submit(toolName, `{"block":true}`)
			started := filepath.Join(s.toolDir, "started-"+string(a.ActionID))
			poll(t, actionTimeout, "the tool function to start", func() (bool, string) {
				_, err := os.Stat(started)
				return err == nil, "not started"
			})
			if n := tc.kill(dispatch); n != 1 {
				t.Fatalf("killed %d, want the 1 dispatch process running the call", n)
			}
			v := agent.waitAction(a.ActionID, "ends", terminal)
			s.wantStates(t, v, lifecycle.States{Permission: lifecycle.PermissionAllow, Outcome: lifecycle.OutcomeUnknown, Delivery: lifecycle.DeliveryProjected, Started: true})
			// The tool finishes on its own; nothing runs it again, not even
			// a sweep after it.
			if err := os.WriteFile(filepath.Join(s.toolDir, "release-"+string(a.ActionID)), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if c := s.invokeRecover("schedule", map[string]any{"version": "0", "id": ids.New("evt"), "detail-type": "Scheduled Event",
				"source": "aws.events", "account": account, "time": time.Now().UTC().Format(time.RFC3339), "region": region,
				"resources": []string{}, "detail": map[string]any{}}); c.err != nil {
				t.Fatalf("scheduled recover: %v", c.err)
			}
			v = agent.waitAction(a.ActionID, "ends", terminal)
			if v.States.Outcome != lifecycle.OutcomeUnknown || v.Receipt == nil || v.Receipt.Outcome != lifecycle.OutcomeUnknown {
				t.Fatalf("after the sweep: %+v receipt %+v", v.States, v.Receipt)
			}
			if n := s.toolInvocations(string(a.ActionID)); n != 1 {
				t.Fatalf("the tool function ran %d times, want exactly 1 (never re-run)", n)
			}
			if got := dispatch.crashes.Load() - lost; got != map[bool]int64{true: 1, false: 0}[tc.environmentLost] {
				t.Fatalf("%d environments lost, want environment lost = %v", got, tc.environmentLost)
			}
		})
	}
	// localstack/smoke.sh is the LocalStack kit's check; its HTTP half runs
	// here against the same API, so the kit cannot drift from the API
	// without a failure on a machine without Docker.
	t.Run("the LocalStack smoke script against this API", func(t *testing.T) {
		for _, tool := range []string{"bash", "curl", "jq"} {
			if _, err := exec.LookPath(tool); err != nil {
				t.Skipf("%s is not installed", tool)
			}
		}
		smoke := "ses_smoke"
		cmd := exec.Command("bash", filepath.Join(s.root, "localstack", "smoke.sh"))
		cmd.Env = append(os.Environ(), "LIFECYCLE_API_URL="+s.gwURL,
			"LIFECYCLE_AGENT_TOKEN="+s.gw.token("smoke-agent", "agent", smoke), "LIFECYCLE_HUMAN_TOKEN="+s.gw.token("smoke-human", "human", smoke),
			`LIFECYCLE_E2E_POLICY={"version":"smoke.1","mode":"default","ask":["noop"]}`, "LIFECYCLE_E2E_TIMEOUT=90",
			"LIFECYCLE_LOCALSTACK_STATE="+filepath.Join(s.dir, "localstack-state"))
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "smoke: ok") {
			t.Fatalf("localstack/smoke.sh: %v\n%s", err, out)
		}
	})
	t.Logf("AWS mode: %s in all", time.Since(start).Round(time.Millisecond))
}

// submittedAction finds the action a tool call created, from the session's
// event log (action.submitted is written with the action).
func (c client) submittedAction(call ids.ToolCallID) ids.ActionID {
	c.t.Helper()
	batch, err := c.Events(context.Background(), session, 0, 0)
	if err != nil {
		c.t.Fatalf("events: %v", err)
	}
	for _, e := range batch.Events {
		var d struct {
			ToolCallID ids.ToolCallID `json:"tool_call_id"`
		}
		if e.Type == "action.submitted" && json.Unmarshal(e.Data, &d) == nil && d.ToolCallID == call {
			return e.ActionID
		}
	}
	c.t.Fatalf("no action.submitted event for %s among %d events", call, len(batch.Events))
	return ""
}

// hostWorker runs the real CLI, `lifecycle host`, against the gateway with
// the agent's token, in its own process group, killed when the test ends.
func (s *stack) hostWorker(t *testing.T, ws, token string) {
	t.Helper()
	logPath := filepath.Join(s.dir, "logs", "host.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(s.bins, "lifecycle"), "host", "--api", s.gwURL, "--workspace", ws, "--poll", "5s")
	cmd.Env = append(os.Environ(), "LIFECYCLE_TOKEN="+token)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	logf.Close()
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("--- lifecycle host\n%s", b)
		}
	})
}

// forged is a well-formed token from an issuer the gateway does not trust.
func forged() string {
	g := &gateway{key: []byte("another-key-entirely-0123456789abc"), issuer: "https://evil.example/", audience: audience}
	return g.token("mallory", "admin", "")
}
