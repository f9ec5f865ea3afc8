package apiclient_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/apiclient"
	"github.com/openprogram/lifecycle/shared/audit"
	"github.com/openprogram/lifecycle/shared/httpapi"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/modelreq"
	"github.com/openprogram/lifecycle/shared/process"
)

// The client against api/openapi.yaml, through its real code: every
// method of Client and Host sends its request to a server that answers as
// the spec says. The request must be a documented operation (method and
// path), carry only documented query parameters and headers, and a body
// the operation's schema accepts (unknown fields included: the spec's
// objects are closed). The answer is the operation's success response with
// every documented field filled in; what the method returns, encoded
// again, must hold exactly those fields: a field the client drops, renames
// or invents fails, at any depth.

const specURL = "file:///openapi.json"

type spec struct {
	doc      map[string]any
	compiler *jsonschema.Compiler
}

func loadSpec(t *testing.T) *spec {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "api", "openapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var y any
	if err := yaml.Unmarshal(raw, &y); err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(y)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource(specURL, doc); err != nil {
		t.Fatal(err)
	}
	return &spec{doc: doc.(map[string]any), compiler: c}
}

// ref follows a local $ref ("#/components/...").
func (s *spec) ref(v map[string]any) map[string]any {
	for {
		r, ok := v["$ref"].(string)
		if !ok {
			return v
		}
		var cur any = s.doc
		for _, part := range strings.Split(strings.TrimPrefix(r, "#/"), "/") {
			part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
			cur = cur.(map[string]any)[part]
		}
		v = cur.(map[string]any)
	}
}

func pointerEscape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// operation is the spec's operation for a concrete request path.
func (s *spec) operation(method, path string) (tpl string, op map[string]any) {
	for t, item := range s.doc["paths"].(map[string]any) {
		re := regexp.MustCompile("^" + regexp.MustCompile(`\\\{[a-z_]+\\\}`).ReplaceAllString(regexp.QuoteMeta(t), `[^/]+`) + "$")
		if re.MatchString(path) {
			if op, ok := item.(map[string]any)[strings.ToLower(method)].(map[string]any); ok {
				return t, op
			}
		}
	}
	return "", nil
}

// param is one documented parameter and the JSON pointer of its schema.
type param struct {
	name     string
	required bool
	schema   string
}

// params are the operation's parameters of one kind ("query", "header"),
// by lower-case name; base is the operation's pointer.
func (s *spec) params(base string, op map[string]any, in string) map[string]param {
	out := map[string]param{}
	list, _ := op["parameters"].([]any)
	for i, p := range list {
		ptr := base + "/parameters/" + strconv.Itoa(i)
		if r, ok := p.(map[string]any)["$ref"].(string); ok {
			ptr = strings.TrimPrefix(r, "#")
		}
		p := s.ref(p.(map[string]any))
		if p["in"] == in {
			out[strings.ToLower(p["name"].(string))] = param{name: p["name"].(string), required: p["required"] == true, schema: ptr + "/schema"}
		}
	}
	return out
}

func (s *spec) validate(ptr string, v any) error {
	sch, err := s.compiler.Compile(specURL + "#" + ptr)
	if err != nil {
		return err
	}
	return sch.Validate(v)
}

// example is a value of the schema with every documented field present:
// every property, every branch of a oneOf/anyOf merged, one array item,
// one map entry.
func (s *spec) example(sch map[string]any, depth int) any {
	sch = s.ref(sch)
	if depth > 12 {
		return nil
	}
	if c, ok := sch["const"]; ok {
		return c
	}
	if e, ok := sch["enum"].([]any); ok {
		for _, v := range e {
			if v != nil {
				return v
			}
		}
	}
	var branches []map[string]any
	for _, k := range []string{"allOf", "oneOf", "anyOf"} {
		if bs, ok := sch[k].([]any); ok {
			for _, b := range bs {
				branches = append(branches, b.(map[string]any))
			}
		}
	}
	typ := sch["type"]
	if ts, ok := typ.([]any); ok {
		typ = nil
		for _, x := range ts {
			if x != "null" {
				typ = x
				break
			}
		}
	}
	if typ == nil && sch["properties"] == nil && len(branches) > 0 {
		// A choice of kinds (a time or null): the first that is not null.
		for _, b := range branches {
			if b := s.ref(b); b["type"] != "null" && b["type"] != "object" && b["properties"] == nil {
				return s.example(b, depth+1)
			}
		}
	}
	if typ == nil && (sch["properties"] != nil || len(branches) > 0) {
		typ = "object"
	}
	switch typ {
	case "object":
		out := map[string]any{}
		props, _ := sch["properties"].(map[string]any)
		for k, p := range props {
			out[k] = s.example(p.(map[string]any), depth+1)
		}
		for _, b := range branches {
			if m, ok := s.example(b, depth+1).(map[string]any); ok {
				for k, v := range m {
					if _, seen := out[k]; !seen {
						out[k] = v
					}
				}
			}
		}
		if ap, ok := sch["additionalProperties"].(map[string]any); ok && len(props) == 0 && len(ap) > 0 {
			out["key"] = s.example(ap, depth+1)
		}
		return out
	case "array":
		items, _ := sch["items"].(map[string]any)
		return []any{s.example(items, depth+1)}
	case "integer", "number":
		if m, ok := sch["minimum"].(json.Number); ok {
			if n, err := m.Int64(); err == nil && n > 1 {
				return n
			}
		}
		return 1
	case "boolean":
		return true
	case "string":
		if sch["format"] == "date-time" {
			return "2026-01-02T03:04:05Z"
		}
		if sch["contentEncoding"] == "base64" {
			return "czE=" // "s1"
		}
		return "s1"
	}
	return map[string]any{"any": "value"} // free-form (arguments, payloads)
}

// diff lists the fields present in one value and not the other, at any
// depth: want is the spec's example, got the client's value encoded again.
func diff(path string, want, got any, out *[]string) {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			*out = append(*out, fmt.Sprintf("%s: the spec has an object, the client %T", path, got))
			return
		}
		for k := range w {
			if _, ok := g[k]; !ok {
				*out = append(*out, path+"."+k+": in the spec, not in the client's type (dropped or renamed)")
			}
		}
		for k := range g {
			if _, ok := w[k]; !ok {
				*out = append(*out, path+"."+k+": in the client's type, not in the spec")
			}
		}
		for k, wv := range w {
			if gv, ok := g[k]; ok {
				diff(path+"."+k, wv, gv, out)
			}
		}
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) == 0 || len(w) == 0 {
			if !ok {
				*out = append(*out, fmt.Sprintf("%s: the spec has an array, the client %T", path, got))
			}
			return
		}
		diff(path+"[0]", w[0], g[0], out)
	}
}

// recorded is what the client sent and what it was answered.
type recorded struct {
	method, path string
	query        map[string][]string
	header       http.Header
	body         []byte
	// example is the answer's body, as sent (nil for none).
	example any
	status  int
}

// specServer answers every request with the spec's success response.
type specServer struct {
	t    *testing.T
	spec *spec
	mu   sync.Mutex
	reqs []recorded
}

func (s *specServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rec := recorded{method: r.Method, path: r.URL.Path, query: r.URL.Query(), header: r.Header, body: body}
	defer func() {
		s.mu.Lock()
		s.reqs = append(s.reqs, rec)
		s.mu.Unlock()
	}()
	_, op := s.spec.operation(r.Method, r.URL.Path)
	if op == nil {
		http.Error(w, `{"error":{"code":"not_found","message":"not in the spec"}}`, http.StatusNotFound)
		return
	}
	responses := op["responses"].(map[string]any)
	var codes []string
	for code := range responses {
		if strings.HasPrefix(code, "2") {
			codes = append(codes, code)
		}
	}
	sort.Strings(codes)
	if len(codes) == 0 {
		http.Error(w, "no success response in the spec", http.StatusInternalServerError)
		return
	}
	rec.status, _ = strconv.Atoi(codes[0])
	content, _ := s.spec.ref(responses[codes[0]].(map[string]any))["content"].(map[string]any)
	if r.Header.Get("Accept") == "text/event-stream" {
		batch := s.spec.example(content["application/json"].(map[string]any)["schema"].(map[string]any), 0)
		ev := batch.(map[string]any)["events"].([]any)[0]
		rec.example = ev
		b, _ := json.Marshal(ev)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(rec.status)
		fmt.Fprintf(w, "id: 1\nevent: x\ndata: %s\n\n", b)
		return
	}
	mt, ok := content["application/json"].(map[string]any)
	if !ok {
		w.WriteHeader(rec.status)
		return
	}
	rec.example = s.spec.example(mt["schema"].(map[string]any), 0)
	b, _ := json.Marshal(rec.example)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(rec.status)
	w.Write(b)
}

// clientCall is one client method, called with every argument set.
type clientCall struct {
	// method is the Go method ("Client.Submit", "Host.Tasks").
	method string
	call   func(ctx context.Context, c *apiclient.Client, h apiclient.Host) (any, error)
	// mirror picks, from the answer the server sent, the part the method
	// returns (nil: the whole answer; a list method returns its items).
	mirror func(answer any) any
}

func field(name string) func(any) any {
	return func(a any) any { return a.(map[string]any)[name] }
}

func clientCalls() []clientCall {
	ptr := func(v int64) *int64 { return &v }
	yes := true
	limit := 5
	sup := process.Supervisor{ID: "sup_1", Host: "h1", AttemptID: "att_1"}
	return []clientCall{
		{method: "Client.Submit", call: func(ctx context.Context, c *apiclient.Client, _ apiclient.Host) (any, error) {
			v, _, err := c.Submit(ctx, apiclient.SubmitRequest{SessionID: "ses_1", IdempotencyKey: "k1", Body: httpapi.SubmitBody{
				Tool: "Bash", Arguments: json.RawMessage(`{"command":"ls"}`), ToolCallID: "call_1", ExecutionID: "exe_1",
				Interactive: &yes, IterationLimit: 3, Title: "list"}})
			return v, err
		}},
		{method: "Client.Action", call: func(ctx context.Context, c *apiclient.Client, _ apiclient.Host) (any, error) {
			return c.Action(ctx, "act_1", 2*time.Second)
		}},
		{method: "Client.Approvals", mirror: field("approvals"), call: func(ctx context.Context, c *apiclient.Client, _ apiclient.Host) (any, error) {
			return c.Approvals(ctx, "ses_1")
		}},
		{method: "Client.Decide", call: func(ctx context.Context, c *apiclient.Client, _ apiclient.Host) (any, error) {
			return c.Decide(ctx, "apr_1", "approve", "sha256:abc")
		}},
		{method: "Client.Reconcile", call: func(ctx context.Context, c *apiclient.Client, _ apiclient.Host) (any, error) {
			v, _, err := c.Reconcile(ctx, "act_1", actionflow.ReconcileRequest{Outcome: lifecycle.OutcomeSucceeded, Note: "checked", Evidence: "out", EvidenceRef: "blob://x"})
			return v, err
		}},
		{method: "Client.Execution", call: func(ctx context.Context, c *apiclient.Client, _ apiclient.Host) (any, error) {
			return c.Execution(ctx, "exe_1")
		}},
		{method: "Client.Command", call: func(ctx context.Context, c *apiclient.Client, _ apiclient.Host) (any, error) {
			return c.Command(ctx, "exe_1", httpapi.CommandBody{CommandID: "cmd_1", Type: "Pause", ExpectedVersion: ptr(2)})
		}},
		{method: "Client.End", call: func(ctx context.Context, c *apiclient.Client, _ apiclient.Host) (any, error) {
			return c.End(ctx, "exe_1", httpapi.CommandBody{CommandID: "cmd_1", Type: "end", ExpectedVersion: ptr(2),
				Payload: json.RawMessage(`{"status":"failed","reason":"model_error","message":"the model failed"}`)})
		}},
		{method: "Client.Activity", call: func(ctx context.Context, c *apiclient.Client, _ apiclient.Host) (any, error) {
			return c.Activity(ctx, "ses_1")
		}},
		{method: "Client.Tools", call: func(ctx context.Context, c *apiclient.Client, _ apiclient.Host) (any, error) {
			return c.Tools(ctx, "ses_1")
		}},
		{method: "Client.Policy", call: func(ctx context.Context, c *apiclient.Client, _ apiclient.Host) (any, error) {
			return c.Policy(ctx, "ses_1")
		}},
		{method: "Client.PutPolicy", call: func(ctx context.Context, c *apiclient.Client, _ apiclient.Host) (any, error) {
			return c.PutPolicy(ctx, "ses_1", httpapi.PolicyBody{ExpectedVersion: ptr(1), Policy: json.RawMessage(`{"rules":[]}`),
				RestartWindowSeconds: ptr(60), IterationLimit: &limit})
		}},
		{method: "Client.Events", call: func(ctx context.Context, c *apiclient.Client, _ apiclient.Host) (any, error) {
			return c.Events(ctx, "ses_1", 4, time.Second)
		}},
		{method: "Client.Follow", call: func(ctx context.Context, c *apiclient.Client, _ apiclient.Host) (any, error) {
			var got actionflow.Event
			stop := errors.New("first event")
			err := c.Follow(ctx, "ses_1", 4, func(ev actionflow.Event) error { got = ev; return stop })
			if errors.Is(err, stop) {
				err = nil
			}
			return got, err
		}},
		{method: "Client.Audit", call: func(ctx context.Context, c *apiclient.Client, _ apiclient.Host) (any, error) {
			return c.Audit(ctx, "ses_1", 4, 100)
		}},
		{method: "Client.AuditAll", mirror: func(a any) any { return a.(map[string]any)["entries"].([]any)[0] },
			call: func(ctx context.Context, c *apiclient.Client, _ apiclient.Host) (any, error) {
				var got audit.Entry
				stop := errors.New("first entry")
				err := c.AuditAll(ctx, "ses_1", func(e audit.Entry) error { got = e; return stop })
				if errors.Is(err, stop) {
					err = nil
				}
				return got, err
			}},
		{method: "Client.ReplayPolicy", call: func(ctx context.Context, c *apiclient.Client, _ apiclient.Host) (any, error) {
			since := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
			return c.ReplayPolicy(ctx, "ses_1", httpapi.ReplayBody{Policy: json.RawMessage(`{"rules":[]}`), Since: &since})
		}},
		{method: "Client.ReplayPolicyAll", call: func(ctx context.Context, c *apiclient.Client, _ apiclient.Host) (any, error) {
			since := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
			return c.ReplayPolicyAll(ctx, httpapi.ReplayBody{Policy: json.RawMessage(`{"rules":[]}`), Since: &since, Sessions: []ids.SessionID{"ses_1"}})
		}},
		{method: "Client.Replay", call: func(ctx context.Context, c *apiclient.Client, _ apiclient.Host) (any, error) {
			return c.Replay(ctx, "rpl_1")
		}},
		{method: "Client.Revisions", call: func(ctx context.Context, c *apiclient.Client, _ apiclient.Host) (any, error) {
			return c.Revisions(ctx, "ses_1")
		}},
		{method: "Client.Questions", mirror: field("questions"), call: func(ctx context.Context, c *apiclient.Client, _ apiclient.Host) (any, error) {
			return c.Questions(ctx, "ses_1", "all")
		}},
		{method: "Client.Question", call: func(ctx context.Context, c *apiclient.Client, _ apiclient.Host) (any, error) {
			return c.Question(ctx, "que_1")
		}},
		{method: "Client.Answer", call: func(ctx context.Context, c *apiclient.Client, _ apiclient.Host) (any, error) {
			v, _, err := c.Answer(ctx, "que_1", actionflow.AnswerBody{CommandID: "cmd_1", Answers: map[string]json.RawMessage{"q1": json.RawMessage(`"yes"`)}})
			return v, err
		}},
		{method: "Client.StartModelRequest", call: func(ctx context.Context, c *apiclient.Client, _ apiclient.Host) (any, error) {
			v, _, err := c.StartModelRequest(ctx, "exe_1", modelreq.StartReport{RequestID: "req_1", Provider: "anthropic", Model: "claude"})
			return v, err
		}},
		{method: "Client.CompleteModelRequest", call: func(ctx context.Context, c *apiclient.Client, _ apiclient.Host) (any, error) {
			return c.CompleteModelRequest(ctx, "exe_1", "req_1", modelreq.Completion{Status: modelreq.Failed,
				Usage: modelreq.Usage{InputTokens: 1, OutputTokens: 2}, ErrorCode: "overloaded", Message: "try later"})
		}},
		{method: "Client.Processes", mirror: field("processes"), call: func(ctx context.Context, c *apiclient.Client, _ apiclient.Host) (any, error) {
			return c.Processes(ctx, "ses_1")
		}},
		{method: "Client.ExecutionProcesses", mirror: field("processes"), call: func(ctx context.Context, c *apiclient.Client, _ apiclient.Host) (any, error) {
			return c.ExecutionProcesses(ctx, "exe_1")
		}},
		{method: "Client.Process", call: func(ctx context.Context, c *apiclient.Client, _ apiclient.Host) (any, error) {
			return c.Process(ctx, "prc_1")
		}},
		{method: "Client.ProcessOutput", call: func(ctx context.Context, c *apiclient.Client, _ apiclient.Host) (any, error) {
			return c.ProcessOutput(ctx, "prc_1", "stdout", 10)
		}},
		{method: "Client.StopProcess", call: func(ctx context.Context, c *apiclient.Client, _ apiclient.Host) (any, error) {
			return c.StopProcess(ctx, "prc_1", "cmd_1")
		}},
		{method: "Host.Tasks", call: func(ctx context.Context, _ *apiclient.Client, h apiclient.Host) (any, error) {
			return h.Tasks(ctx, time.Second)
		}, mirror: func(a any) any {
			var out []any
			for _, t := range a.(map[string]any)["tasks"].([]any) {
				out = append(out, t.(map[string]any)["action_id"])
			}
			return out
		}},
		{method: "Host.Start", call: func(ctx context.Context, _ *apiclient.Client, h apiclient.Host) (any, error) {
			return h.Start(ctx, "act_1", "att_1")
		}, mirror: func(any) any { return nil }}, // returns the Go task the view converts to (not a wire type)
		{method: "Host.Result", call: func(ctx context.Context, _ *apiclient.Client, h apiclient.Host) (any, error) {
			return nil, h.Result(ctx, "act_1", "att_1", 3, actionflow.ToolResult{Outcome: lifecycle.OutcomeSucceeded, Output: "ok"})
		}},
		{method: "Host.Heartbeat", call: func(ctx context.Context, _ *apiclient.Client, h apiclient.Host) (any, error) {
			return nil, h.Heartbeat(ctx, "act_1", "att_1", 3)
		}},
		{method: "Host.ProcessStart", call: func(ctx context.Context, _ *apiclient.Client, h apiclient.Host) (any, error) {
			return h.ProcessStart(ctx, process.Record{ActionID: "act_1", ProcessID: "prc_1", Command: "sleep 9", Description: "wait", Supervisor: sup, PID: 42})
		}},
		{method: "Host.ProcessReport", call: func(ctx context.Context, _ *apiclient.Client, h apiclient.Host) (any, error) {
			return h.ProcessReport(ctx, "prc_1", process.Report{Supervisor: sup, Output: map[string][]byte{"stdout": []byte("hi")}})
		}},
		{method: "Host.ProcessRecover", mirror: field("lost"), call: func(ctx context.Context, _ *apiclient.Client, h apiclient.Host) (any, error) {
			return h.ProcessRecover(ctx, sup, []string{"prc_1"})
		}},
	}
}

// exported lists the exported methods of Client and Host that talk to the
// API (every method but the error helpers).
func exported() []string {
	var out []string
	for _, t := range []reflect.Type{reflect.TypeFor[*apiclient.Client](), reflect.TypeFor[apiclient.Host]()} {
		name := strings.TrimPrefix(t.String(), "*apiclient.")
		name = strings.TrimPrefix(name, "apiclient.")
		for i := range t.NumMethod() {
			out = append(out, name+"."+t.Method(i).Name)
		}
	}
	return out
}

func TestClientMatchesTheSpec(t *testing.T) {
	sp := loadSpec(t)
	calls := clientCalls()
	var covered []string
	for _, c := range calls {
		covered = append(covered, c.method)
	}
	for _, m := range exported() {
		if !slices.Contains(covered, m) {
			t.Errorf("%s is not checked against the spec: add it to clientCalls", m)
		}
	}
	srv := &specServer{t: t, spec: sp}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	client := &apiclient.Client{BaseURL: hs.URL, Token: "t", Origin: "cli"}
	host := apiclient.Host{Client: client, Session: "ses_1"}
	for _, c := range calls {
		t.Run(c.method, func(t *testing.T) {
			srv.mu.Lock()
			srv.reqs = nil
			srv.mu.Unlock()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			got, err := c.call(ctx, client, host)
			srv.mu.Lock()
			reqs := slices.Clone(srv.reqs)
			srv.mu.Unlock()
			if len(reqs) != 1 {
				t.Fatalf("%d requests, want 1 (error %v)", len(reqs), err)
			}
			r := reqs[0]
			tpl, op := sp.operation(r.method, r.path)
			if op == nil {
				t.Fatalf("%s %s is not an operation of api/openapi.yaml", r.method, r.path)
			}
			if err != nil {
				t.Fatalf("%s %s answered as the spec says: %v", r.method, tpl, err)
			}
			checkRequest(t, sp, tpl, op, r)
			if c.mirror != nil {
				r.example = c.mirror(r.example)
			}
			if r.example == nil || got == nil {
				return
			}
			enc, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			var back any
			if err := json.Unmarshal(enc, &back); err != nil {
				t.Fatal(err)
			}
			var problems []string
			diff("response", r.example, back, &problems)
			sort.Strings(problems)
			if len(problems) > 0 {
				t.Errorf("%s %s: the client's %T and the spec's response differ:\n  %s", r.method, tpl, got, strings.Join(problems, "\n  "))
			}
		})
	}
}

// checkRequest: only documented query parameters (with values their
// schemas accept) and headers, every required one present, and a body the
// request schema accepts.
func checkRequest(t *testing.T, sp *spec, tpl string, op map[string]any, r recorded) {
	t.Helper()
	base := "/paths/" + pointerEscape(tpl) + "/" + strings.ToLower(r.method)
	query := sp.params(base, op, "query")
	for name, vs := range r.query {
		p, ok := query[strings.ToLower(name)]
		if !ok {
			t.Errorf("query parameter %q is not documented for %s %s", name, r.method, tpl)
			continue
		}
		// A query value is text; a number parameter's is read as JSON.
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(vs[0]))
		if err != nil {
			v = vs[0]
		}
		if err := sp.validate(p.schema, v); err != nil {
			t.Errorf("query parameter %s=%q does not match the spec: %v", name, vs[0], err)
		}
	}
	for _, p := range query {
		if p.required && len(r.query[p.name]) == 0 {
			t.Errorf("required query parameter %s is missing", p.name)
		}
	}
	headers := sp.params(base, op, "header")
	for _, p := range headers {
		if p.required && r.header.Get(p.name) == "" {
			t.Errorf("required header %s is missing", p.name)
		}
	}
	// Headers the client sends that are API parameters (not transport,
	// auth or provenance) must be documented ones.
	for _, h := range []string{"Idempotency-Key", "Last-Event-ID"} {
		if r.header.Get(h) != "" {
			if p, ok := headers[strings.ToLower(h)]; !ok {
				t.Errorf("header %s is not documented for %s %s", h, r.method, tpl)
			} else if err := sp.validate(p.schema, r.header.Get(h)); err != nil {
				t.Errorf("header %s=%q does not match the spec: %v", h, r.header.Get(h), err)
			}
		}
	}
	rb, hasBody := op["requestBody"].(map[string]any)
	switch {
	case !hasBody && len(r.body) > 0:
		t.Errorf("%s %s takes no body; the client sent %s", r.method, tpl, r.body)
	case hasBody:
		rb = sp.ref(rb)
		if len(r.body) == 0 {
			if rb["required"] == true {
				t.Errorf("%s %s requires a body; the client sent none", r.method, tpl)
			}
			return
		}
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(r.body))
		if err != nil {
			t.Fatalf("body is not JSON: %v", err)
		}
		ptr := base + "/requestBody/content/application~1json/schema"
		if ref, ok := op["requestBody"].(map[string]any)["$ref"].(string); ok {
			ptr = strings.TrimPrefix(ref, "#") + "/content/application~1json/schema"
		}
		if err := sp.validate(ptr, v); err != nil {
			t.Errorf("%s %s: the client's body does not match the spec:\n%v\nbody: %s", r.method, tpl, err, r.body)
		}
	}
}
