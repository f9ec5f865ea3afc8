//go:build integration

package integration

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/openprogram/lifecycle/shared/lifecycle"
)

// Environment of the end-to-end run.
//
//	LIFECYCLE_STACK_OUTPUTS   path to `cdk deploy --outputs-file` JSON (required; the test skips without it)
//	LIFECYCLE_STACK_NAME      stack key in that file (default: the only stack in it)
//	LIFECYCLE_API_URL         overrides the ApiUrl output (LocalStack serves the API elsewhere)
//	LIFECYCLE_AGENT_TOKEN     JWT of an agent principal (submits actions)
//	LIFECYCLE_HUMAN_TOKEN     JWT of a human owner of the session (decides approvals)
//	LIFECYCLE_TOKEN           one JWT for both, when the identity provider has one user
//	LIFECYCLE_E2E_SESSION     session id (default: a fresh e2e-<random>)
//	LIFECYCLE_E2E_TOOL        tool to submit (default "noop": the no-effect executor, no host needed)
//	LIFECYCLE_E2E_ARGS        its JSON arguments (default {})
//	LIFECYCLE_E2E_POLICY      optional policy document PUT to the session first, so that the tool asks
//	LIFECYCLE_E2E_TIMEOUT     how long to wait for each step (default 3m; LocalStack is slow)
//	AWS_REGION, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_ENDPOINT_URL
//	                          when set, the execution (name = action id) is also checked in Step Functions
type e2eEnv struct {
	apiURL, stateMachineARN         string
	agentToken, humanToken          string
	session, tool                   string
	args, policy                    json.RawMessage
	timeout                         time.Duration
	region, endpoint                string
	accessKey, secret, sessionToken string
}

func loadEnv(t *testing.T) e2eEnv {
	t.Helper()
	path := os.Getenv("LIFECYCLE_STACK_OUTPUTS")
	if path == "" {
		t.Skip("LIFECYCLE_STACK_OUTPUTS is not set: no deployed stack to test against")
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read stack outputs: %v", err)
	}
	var stacks map[string]map[string]string
	if err := json.Unmarshal(raw, &stacks); err != nil {
		t.Fatalf("parse stack outputs %s: %v", path, err)
	}
	name := os.Getenv("LIFECYCLE_STACK_NAME")
	if name == "" {
		if len(stacks) != 1 {
			t.Fatalf("%s holds %d stacks: set LIFECYCLE_STACK_NAME", path, len(stacks))
		}
		for n := range stacks {
			name = n
		}
	}
	outputs, ok := stacks[name]
	if !ok {
		t.Fatalf("stack %q not in %s", name, path)
	}
	e := e2eEnv{
		apiURL:          strings.TrimRight(firstNonEmpty(os.Getenv("LIFECYCLE_API_URL"), outputs["ApiUrl"]), "/"),
		stateMachineARN: outputs["StateMachineArn"],
		agentToken:      firstNonEmpty(os.Getenv("LIFECYCLE_AGENT_TOKEN"), os.Getenv("LIFECYCLE_TOKEN")),
		humanToken:      firstNonEmpty(os.Getenv("LIFECYCLE_HUMAN_TOKEN"), os.Getenv("LIFECYCLE_TOKEN")),
		session:         firstNonEmpty(os.Getenv("LIFECYCLE_E2E_SESSION"), "e2e-"+randomHex(6)),
		tool:            firstNonEmpty(os.Getenv("LIFECYCLE_E2E_TOOL"), "noop"),
		args:            json.RawMessage(firstNonEmpty(os.Getenv("LIFECYCLE_E2E_ARGS"), "{}")),
		policy:          json.RawMessage(os.Getenv("LIFECYCLE_E2E_POLICY")),
		timeout:         3 * time.Minute,
		region:          firstNonEmpty(os.Getenv("AWS_REGION"), os.Getenv("AWS_DEFAULT_REGION")),
		endpoint:        os.Getenv("AWS_ENDPOINT_URL"),
		accessKey:       os.Getenv("AWS_ACCESS_KEY_ID"),
		secret:          os.Getenv("AWS_SECRET_ACCESS_KEY"),
		sessionToken:    os.Getenv("AWS_SESSION_TOKEN"),
	}
	if d := os.Getenv("LIFECYCLE_E2E_TIMEOUT"); d != "" {
		if e.timeout, err = time.ParseDuration(d); err != nil {
			t.Fatalf("LIFECYCLE_E2E_TIMEOUT: %v", err)
		}
	}
	if e.apiURL == "" {
		t.Fatal("no ApiUrl output and no LIFECYCLE_API_URL")
	}
	if e.agentToken == "" || e.humanToken == "" {
		t.Fatal("set LIFECYCLE_AGENT_TOKEN and LIFECYCLE_HUMAN_TOKEN (or LIFECYCLE_TOKEN): every route but /healthz requires a JWT")
	}
	if !json.Valid(e.args) {
		t.Fatal("LIFECYCLE_E2E_ARGS is not JSON")
	}
	return e
}

// TestSubmitApproveReceipt is the lifecycle end to end: an action that asks
// is approved by a human and ends with a durable receipt.
func TestSubmitApproveReceipt(t *testing.T) {
	e := loadEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*e.timeout)
	defer cancel()
	api := apiClient{base: e.apiURL, http: &http.Client{Timeout: 35 * time.Second}}

	if status, _ := api.do(ctx, t, "GET", "/healthz", "", nil); status != http.StatusOK {
		t.Fatalf("GET /healthz: %d", status)
	}
	if status, _ := api.do(ctx, t, "GET", "/v1/tools", "", nil); status != http.StatusUnauthorized {
		t.Errorf("GET /v1/tools without a token: %d, want 401 from the JWT authorizer", status)
	}
	if len(e.policy) > 0 {
		status, body := api.do(ctx, t, "PUT", "/v1/sessions/"+e.session+"/policy", e.humanToken, e.policy)
		if status/100 != 2 {
			t.Fatalf("PUT policy: %d %s", status, body)
		}
	}

	submit := map[string]any{
		"tool_call_id": "call-" + randomHex(4),
		"tool":         e.tool,
		"arguments":    e.args,
		"interactive":  true,
	}
	key := "e2e-" + randomHex(8)
	status, body := api.doKey(ctx, t, "POST", "/v1/sessions/"+e.session+"/actions", e.agentToken, key, submit)
	if status/100 != 2 {
		t.Fatalf("submit: %d %s", status, body)
	}
	actionID := stringField(body, "action_id")
	if actionID == "" {
		t.Fatalf("submit response has no action_id: %s", body)
	}
	t.Logf("session %s, action %s", e.session, actionID)

	// The same idempotency key and body names the same action.
	if status, again := api.doKey(ctx, t, "POST", "/v1/sessions/"+e.session+"/actions", e.agentToken, key, submit); status/100 != 2 || stringField(again, "action_id") != actionID {
		t.Errorf("resubmit with the same key: %d %s, want action %s", status, again, actionID)
	}

	action := api.waitAction(ctx, t, e, actionID, "a permission decision", func(s lifecycle.States) bool {
		return s.Permission != lifecycle.PermissionUndecided
	})
	if got := lifecycle.Permission(stringField(action, "permission")); got != lifecycle.PermissionAsk {
		t.Fatalf("permission %q, want ask: choose a tool that asks (LIFECYCLE_E2E_TOOL) or a policy that makes it ask (LIFECYCLE_E2E_POLICY)", got)
	}
	digest := stringField(action, "args_digest")

	// The pending approval, as the human sees it.
	var approvalID string
	poll(ctx, t, e.timeout, "the pending approval", func() bool {
		_, list := api.do(ctx, t, "GET", "/v1/sessions/"+e.session+"/approvals", e.humanToken, nil)
		for _, a := range objects(list) {
			if a["action_id"] == actionID && a["status"] == "pending" {
				approvalID, _ = a["approval_id"].(string)
				if d, _ := a["args_digest"].(string); d != "" {
					digest = d
				}
				return approvalID != ""
			}
		}
		return false
	})
	status, body = api.do(ctx, t, "POST", "/v1/approvals/"+approvalID, e.humanToken,
		map[string]any{"decision": "approve", "args_digest": digest})
	if status/100 != 2 {
		t.Fatalf("approve %s: %d %s", approvalID, status, body)
	}
	// Decided exactly once: a second decision is refused.
	if status, body := api.do(ctx, t, "POST", "/v1/approvals/"+approvalID, e.humanToken,
		map[string]any{"decision": "decline", "args_digest": digest}); status/100 == 2 {
		t.Errorf("a second decision was accepted: %d %s", status, body)
	}

	action = api.waitAction(ctx, t, e, actionID, "a recorded receipt", func(s lifecycle.States) bool {
		return s.Delivery == lifecycle.DeliveryRecorded || s.Delivery == lifecycle.DeliveryProjected
	})
	if got := lifecycle.Outcome(stringField(action, "outcome")); got != lifecycle.OutcomeSucceeded {
		t.Errorf("outcome %q, want succeeded: %s", got, action)
	}
	receipt := object(action, "receipt")
	if receipt == nil {
		t.Fatalf("GET /v1/actions/%s has no receipt: %s", actionID, action)
	}
	if receipt["action_id"] != actionID || receipt["args_digest"] != digest || receipt["outcome"] != string(lifecycle.OutcomeSucceeded) {
		t.Errorf("receipt does not bind the action: %v", receipt)
	}
	api.waitAction(ctx, t, e, actionID, "the projection", func(s lifecycle.States) bool {
		return s.Delivery == lifecycle.DeliveryProjected
	})

	checkExecution(ctx, t, e, actionID)
}

// checkExecution asks Step Functions for the execution named after the
// action, when credentials are there to ask with.
func checkExecution(ctx context.Context, t *testing.T, e e2eEnv, actionID string) {
	if e.accessKey == "" || e.region == "" || e.stateMachineARN == "" {
		t.Log("AWS credentials or region not set: Step Functions not checked")
		return
	}
	opts := sfn.Options{
		Region: e.region,
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: e.accessKey, SecretAccessKey: e.secret, SessionToken: e.sessionToken, Source: "environment"}, nil
		}),
	}
	if e.endpoint != "" {
		opts.BaseEndpoint = aws.String(e.endpoint)
	}
	client := sfn.New(opts)
	// arn:aws:states:r:a:stateMachine:Name -> arn:aws:states:r:a:execution:Name:<action id>
	execARN := strings.Replace(e.stateMachineARN, ":stateMachine:", ":execution:", 1) + ":" + actionID
	var status string
	poll(ctx, t, e.timeout, "execution "+execARN+" to succeed", func() bool {
		out, err := client.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(execARN)})
		if err != nil {
			t.Logf("describe execution: %v", err)
			return false
		}
		status = string(out.Status)
		return status != "RUNNING"
	})
	if status != "SUCCEEDED" {
		t.Errorf("execution %s ended %s", execARN, status)
	}
}

type apiClient struct {
	base string
	http *http.Client
}

func (c apiClient) do(ctx context.Context, t *testing.T, method, path, token string, body any) (int, json.RawMessage) {
	return c.doKey(ctx, t, method, path, token, "", body)
}

func (c apiClient) doKey(ctx context.Context, t *testing.T, method, path, token, key string, body any) (int, json.RawMessage) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return resp.StatusCode, b
}

// waitAction polls GET /v1/actions/{id} until done(states) holds.
func (c apiClient) waitAction(ctx context.Context, t *testing.T, e e2eEnv, id, what string, done func(lifecycle.States) bool) json.RawMessage {
	t.Helper()
	var last json.RawMessage
	poll(ctx, t, e.timeout, what, func() bool {
		status, body := c.do(ctx, t, "GET", "/v1/actions/"+id, e.agentToken, nil)
		if status != http.StatusOK {
			return false
		}
		last = body
		st := lifecycle.States{
			Permission: lifecycle.Permission(stringField(body, "permission")),
			Outcome:    lifecycle.Outcome(stringField(body, "outcome")),
			Delivery:   lifecycle.Delivery(stringField(body, "delivery")),
		}
		return done(st)
	})
	return last
}

// poll retries cond every two seconds until it holds or timeout passes.
func poll(ctx context.Context, t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		case <-time.After(2 * time.Second):
		}
	}
}

// stringField finds the first string value named key, at any depth: the
// API may wrap an action ({"action": {...}}) or not.
func stringField(body json.RawMessage, key string) string {
	var v any
	if json.Unmarshal(body, &v) != nil {
		return ""
	}
	var find func(any) string
	find = func(v any) string {
		switch x := v.(type) {
		case map[string]any:
			if s, ok := x[key].(string); ok {
				return s
			}
			for _, e := range x {
				if s := find(e); s != "" {
					return s
				}
			}
		case []any:
			for _, e := range x {
				if s := find(e); s != "" {
					return s
				}
			}
		}
		return ""
	}
	return find(v)
}

// object finds the first object named key, at any depth.
func object(body json.RawMessage, key string) map[string]any {
	var v any
	if json.Unmarshal(body, &v) != nil {
		return nil
	}
	var find func(any) map[string]any
	find = func(v any) map[string]any {
		switch x := v.(type) {
		case map[string]any:
			if o, ok := x[key].(map[string]any); ok {
				return o
			}
			for _, e := range x {
				if o := find(e); o != nil {
					return o
				}
			}
		case []any:
			for _, e := range x {
				if o := find(e); o != nil {
					return o
				}
			}
		}
		return nil
	}
	return find(v)
}

// objects returns the objects of a list response: a bare array or the
// first array inside an envelope ({"approvals": [...]}).
func objects(body json.RawMessage) []map[string]any {
	var v any
	if json.Unmarshal(body, &v) != nil {
		return nil
	}
	if m, ok := v.(map[string]any); ok {
		for _, e := range m {
			if l, ok := e.([]any); ok {
				v = l
				break
			}
		}
	}
	var out []map[string]any
	if l, ok := v.([]any); ok {
		for _, e := range l {
			if o, ok := e.(map[string]any); ok {
				out = append(out, o)
			}
		}
	}
	return out
}

func firstNonEmpty(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("random: %v", err))
	}
	return hex.EncodeToString(b)
}
