package httpapi_test

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/auth"
	"github.com/openprogram/lifecycle/shared/embedded"
	"github.com/openprogram/lifecycle/shared/executor"
	"github.com/openprogram/lifecycle/shared/httpapi"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/machineview"
	"github.com/openprogram/lifecycle/shared/sfnlocal"
)

// machineOf reads GET /v1/actions/{id}/machine (validated against the spec).
func (s *stack) machineOf(token string, id ids.ActionID, query string) httpapi.MachineView {
	s.t.Helper()
	r := s.do(req{method: "GET", path: "/v1/actions/" + string(id) + "/machine" + query, token: token})
	if r.status != http.StatusOK {
		s.t.Fatalf("machine of %s: %d %s", id, r.status, r.body)
	}
	var v httpapi.MachineView
	r.decode(s.t, &v)
	return v
}

// waitMachine reads the machine until ok says it is what the test waits
// for. With a fake engine clock, each read is followed by moving the clock
// to the engine's next timer (a retry's delay).
func (s *stack) waitMachine(token string, id ids.ActionID, what string, ok func(httpapi.MachineView) bool, clock ...*sfnlocal.FakeClock) httpapi.MachineView {
	s.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		v := s.machineOf(token, id, "?page_size=1000")
		if ok(v) {
			return v
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("machine of %s: never %s; last %s at %+v", id, what, v.Status, v.Current)
		}
		// Fire the retry delays (at most MaxDelaySeconds, 20 s), never a
		// task's own timeout (900 s): that would turn a dispatch still in
		// flight on a loaded machine into States.Timeout.
		for _, c := range clock {
			if due, ok := c.NextDue(); ok && due.Sub(c.Now()) <= 21*time.Second {
				c.AdvanceToNext()
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// notReadyExecutor is an executor that never becomes ready (an MCP server
// that does not answer): dispatch fails NotStartedError before anything
// starts, the state machine retries it and then takes its Catch.
type notReadyExecutor struct{ countingExecutor }

func (*notReadyExecutor) Ready(context.Context, string) error {
	return errors.New("the tool's server does not answer")
}

// newBrokenDispatchStack is the UI stack with a tool "broken" that is
// allowed and routed to a notReadyExecutor, on a fake engine clock (the
// retries' delays pass when the test says).
func newBrokenDispatchStack(t *testing.T) (*uiStack, *sfnlocal.FakeClock) {
	t.Helper()
	clock := sfnlocal.NewFakeClock(time.Now())
	s := newUIStackEngine(t, func(c *embedded.Config) {
		c.EngineClock, c.Clock = clock, clock.Now
		c.Decider = ruleDecider{"broken": lifecycle.PermissionAllow}
		c.Routes = executor.Routes{"broken": "not_ready"}
		c.Executors = map[string]actionflow.Executor{"not_ready": &notReadyExecutor{}}
	})
	return s, clock
}

// checkPath holds the path to the definition the route returned: it
// starts at StartAt, and every step is reached by a transition the
// definition has, of the kind the step says (no state name is assumed).
func checkPath(t *testing.T, v httpapi.MachineView) machineview.Definition {
	t.Helper()
	def, err := machineview.ParseDefinition(v.Definition)
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Path) == 0 || v.Path[0].State != def.StartAt || v.Path[0].Via != machineview.ViaStart {
		t.Fatalf("path does not begin at StartAt %q: %+v", def.StartAt, v.Path)
	}
	for i, st := range v.Path[1:] {
		prev := v.Path[i]
		from := def.States[prev.State]
		if st.From != prev.State {
			t.Errorf("step %d (%s) says it came from %q; the previous step is %q", i+1, st.State, st.From, prev.State)
		}
		ok := false
		switch st.Via {
		case machineview.ViaNext:
			ok = from.Next == st.State
		case machineview.ViaChoice:
			ok = st.Rule != nil && *st.Rule < len(from.Choices) && from.Choices[*st.Rule].Next == st.State
		case machineview.ViaDefault:
			ok = from.Default == st.State
		case machineview.ViaCatch:
			ok = st.Rule != nil && *st.Rule < len(from.Catch) && from.Catch[*st.Rule].Next == st.State && st.Error != ""
		}
		if !ok {
			t.Errorf("step %d: %s -> %s via %s (rule %v) is not a transition of the definition", i+1, prev.State, st.State, st.Via, st.Rule)
		}
		if def.States[st.State].Type != st.Type {
			t.Errorf("step %d: %s has type %q; the definition says %q", i+1, st.State, st.Type, def.States[st.State].Type)
		}
	}
	return def
}

// engineTokenPrefix begins every task token of the embedded engine
// (base64url of "sfnlocal1"; shared/sfnlocal/token.go).
var engineTokenPrefix = base64.RawURLEncoding.EncodeToString([]byte("sfnlocal1"))

func catches(v httpapi.MachineView) []machineview.Step {
	var out []machineview.Step
	for _, st := range v.Path {
		if st.Via == machineview.ViaCatch {
			out = append(out, st)
		}
	}
	return out
}

// TestMachineRoute: GET /v1/actions/{id}/machine reads the execution of
// each lifecycle path through the real sfn client and the embedded engine.
func TestMachineRoute(t *testing.T) {
	s := newUIStack(t)
	const session = "ses_machine"
	human, agent := s.token(auth.RoleHuman, session), s.token(auth.RoleAgent, session)
	ended := func(v httpapi.MachineView) bool { return v.Status != "RUNNING" }

	broken, clock := newBrokenDispatchStack(t)
	cases := []struct {
		name string
		tool string
		// brokenStack: run it on the stack whose dispatch never starts.
		brokenStack bool
		act         func(t *testing.T, a httpapi.ActionView)
		until       func(httpapi.MachineView) bool
		check       func(t *testing.T, v httpapi.MachineView, def machineview.Definition)
	}{
		{name: "allowed", tool: "noop", until: ended, check: func(t *testing.T, v httpapi.MachineView, def machineview.Definition) {
			last := v.Path[len(v.Path)-1]
			// The run ends in a Succeed state or a state with End (the
			// allow path ends with its RecordOutcome Task).
			if v.Status != "SUCCEEDED" || (last.Type != "Succeed" && !def.States[last.State].End) || v.Current != nil {
				t.Errorf("status %s, last step %+v, current %+v", v.Status, last, v.Current)
			}
			if c := catches(v); len(c) != 0 {
				t.Errorf("an allowed action took Catch edges: %+v", c)
			}
		}},
		{name: "pending approval", tool: "risky",
			until: func(v httpapi.MachineView) bool { return v.Current != nil && v.Current.WaitingForTaskToken },
			check: func(t *testing.T, v httpapi.MachineView, def machineview.Definition) {
				c := v.Current
				if v.Status != "RUNNING" || c.Waiting != machineview.WaitingTaskToken || c.Type != "Task" ||
					!strings.HasSuffix(def.States[c.State].Resource, ".waitForTaskToken") || c.State != v.Path[len(v.Path)-1].State {
					t.Errorf("status %s, current %+v (resource %q)", v.Status, c, def.States[c.State].Resource)
				}
			}},
		{name: "declined", tool: "risky",
			act: func(t *testing.T, a httpapi.ActionView) {
				ap := s.pendingApproval(human, session, a.ActionID)
				r := s.do(req{method: "POST", path: "/v1/approvals/" + string(ap.ApprovalID), token: human,
					body: httpapi.DecisionBody{Decision: "decline", Digest: ap.ArgsDigest}})
				if r.status >= 300 {
					t.Fatalf("decline: %d %s", r.status, r.body)
				}
			},
			until: ended,
			check: func(t *testing.T, v httpapi.MachineView, def machineview.Definition) {
				c := catches(v)
				if v.Status != "SUCCEEDED" || len(c) != 1 || c[0].Error != actionflow.ApprovalDeclined ||
					!strings.HasSuffix(def.States[c[0].From].Resource, ".waitForTaskToken") {
					t.Errorf("status %s; catches %+v; want one Catch of %s out of the approval wait", v.Status, c, actionflow.ApprovalDeclined)
				}
			}},
		{name: "failed dispatch", tool: "broken", brokenStack: true, until: ended, check: func(t *testing.T, v httpapi.MachineView, def machineview.Definition) {
			c := catches(v)
			if v.Status != "SUCCEEDED" || len(c) != 1 || c[0].Error != "NotStartedError" || def.States[c[0].From].Type != "Task" {
				t.Fatalf("status %s; catches %+v; want one Catch of NotStartedError out of the dispatch Task; path %v", v.Status, c, pathStates(v))
			}
			// Before the Catch, the Retry entry for NotStartedError ran the
			// dispatch again as often as it allows.
			var from machineview.Step
			for _, st := range v.Path {
				if st.State == c[0].From {
					from = st
				}
			}
			rt := def.States[from.State].Retry
			if len(from.Retries) == 0 || from.Retries[0].Retrier < 0 || !slices.Contains(rt[from.Retries[0].Retrier].ErrorEquals, "NotStartedError") {
				t.Errorf("retries of %s: %+v", from.State, from.Retries)
			}
		}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, agent, human := s, agent, human
			var clocks []*sfnlocal.FakeClock
			if tc.brokenStack {
				s, clocks = broken, []*sfnlocal.FakeClock{clock}
				agent, human = s.token(auth.RoleAgent, session), s.token(auth.RoleHuman, session)
			}
			a := s.submit(agent, session, "k"+tc.name, submitBody(tc.tool, `{"n":`+string(rune('0'+i))+`}`, "call_"+strings.ReplaceAll(tc.name, " ", "_")))
			if a.Links == nil || a.Links.Machine != "/v1/actions/"+string(a.ActionID)+"/machine" ||
				a.Links.Console != "/ui/machine.html#action="+string(a.ActionID) || a.Links.AWSConsole != "" || a.Links.Logs != nil {
				t.Errorf("links of a served action: %+v", a.Links)
			}
			if tc.act != nil {
				tc.act(t, a)
			}
			v := s.waitMachine(human, a.ActionID, tc.name, tc.until, clocks...)
			def := checkPath(t, v)
			tc.check(t, v, def)
			if v.EventCount != len(v.Events) || v.NextPageToken != "" || v.Events[0].ID != 1 || v.Events[len(v.Events)-1].ID != int64(v.EventCount) {
				t.Errorf("%d events listed of %d (next %q)", len(v.Events), v.EventCount, v.NextPageToken)
			}
			// Every entered state is an event with its input.
			for _, st := range v.Path {
				ev := v.Events[st.EnteredEventID-1]
				if ev.State != st.State || !strings.HasSuffix(ev.Type, "StateEntered") || ev.Input == nil {
					t.Errorf("entered event %d of %s: %+v", st.EnteredEventID, st.State, ev)
				}
			}
			// No task token leaves through this read. The embedded engine's
			// tokens are base64url of "sfnlocal1\x00<execution>\x00<nonce>",
			// so every one begins with the encoding of "sfnlocal1".
			body := string(mustJSON(t, v))
			if strings.Contains(body, engineTokenPrefix) {
				t.Errorf("the machine view shows a task token")
			}
			if tc.tool == "risky" && !strings.Contains(body, machineview.TaskTokenHidden) {
				t.Errorf("the approval wait's token is not marked hidden")
			}
		})
	}

	t.Run("pages", func(t *testing.T) {
		a := s.submit(agent, session, "kpages", submitBody("noop", `{"n":"pages"}`, "call_pages"))
		whole := s.waitMachine(human, a.ActionID, "ended", ended)
		var got []int64
		tok := ""
		for pages := 0; ; pages++ {
			q := "?page_size=4"
			if tok != "" {
				q += "&page_token=" + tok
			}
			v := s.machineOf(human, a.ActionID, q)
			if len(v.Events) > 4 || !slices.Equal(pathStates(v), pathStates(whole)) {
				t.Fatalf("page %d: %d events, path %v", pages, len(v.Events), pathStates(v))
			}
			for _, ev := range v.Events {
				got = append(got, ev.ID)
			}
			if tok = v.NextPageToken; tok == "" {
				break
			}
		}
		for i, id := range got {
			if id != int64(i+1) {
				t.Fatalf("paged ids %v, want 1..%d", got, whole.EventCount)
			}
		}
		if len(got) != whole.EventCount {
			t.Fatalf("paged %d events of %d", len(got), whole.EventCount)
		}
	})

	t.Run("bad requests", func(t *testing.T) {
		a := s.submit(agent, session, "kbad", submitBody("noop", `{"n":"bad"}`, "call_bad"))
		for _, tc := range []struct{ name, query, field string }{
			{"page size zero", "?page_size=0", "page_size"},
			{"page size too large", "?page_size=1001", "page_size"},
			{"foreign token", "?page_token=bm90LWEtdG9rZW4", "page_token"},
		} {
			r := s.do(req{method: "GET", path: "/v1/actions/" + string(a.ActionID) + "/machine" + tc.query, token: human})
			if e := r.errorBody(t); r.status != http.StatusBadRequest || e.Field != tc.field {
				t.Errorf("%s: %d %+v", tc.name, r.status, e)
			}
		}
		other := s.token(auth.RoleHuman, "ses_other")
		if r := s.do(req{method: "GET", path: "/v1/actions/" + string(a.ActionID) + "/machine", token: other}); r.status != http.StatusForbidden {
			t.Errorf("another session's token: %d %s", r.status, r.body)
		}
	})
}

func pathStates(v httpapi.MachineView) []string {
	var out []string
	for _, st := range v.Path {
		out = append(out, st.State)
	}
	return out
}

// TestMachineLinksInAWS: with the stack's region and log groups, an action
// links the Step Functions console page of its execution ARN and each log
// group filtered on the action; without a reader the route is 501.
func TestMachineLinksInAWS(t *testing.T) {
	s := newStack(t, func(c *httpapi.Config) {
		c.NoUI = true
		c.AWSConsole = &httpapi.AWSConsole{Region: "eu-west-1", LogGroups: []httpapi.LogGroup{
			{Function: "dispatch", Name: "/aws/lambda/lifecycle-DispatchFunction-AbC"}, {Function: "states", Name: "/aws/vendedlogs/states/lifecycle-action-lifecycle"}}}
	})
	agent := s.token(auth.RoleAgent, "ses_links")
	a := s.submit(agent, "ses_links", "k1", submitBody("noop", `{}`, "c1"))
	arn := "arn:aws:states:us-east-1:123456789012:execution:action-lifecycle:" + string(a.ActionID)
	want := &httpapi.ActionLinks{
		Machine:    "/v1/actions/" + string(a.ActionID) + "/machine",
		AWSConsole: "https://eu-west-1.console.aws.amazon.com/states/home?region=eu-west-1#/v2/executions/details/" + arn,
		Logs: []httpapi.LogLink{
			{Function: "dispatch", LogGroup: "/aws/lambda/lifecycle-DispatchFunction-AbC",
				URL: "https://eu-west-1.console.aws.amazon.com/cloudwatch/home?region=eu-west-1#logsV2:log-groups/log-group/$252Faws$252Flambda$252Flifecycle-DispatchFunction-AbC/log-events$3FfilterPattern$3D$2522" + string(a.ActionID) + "$2522"},
			{Function: "states", LogGroup: "/aws/vendedlogs/states/lifecycle-action-lifecycle",
				URL: "https://eu-west-1.console.aws.amazon.com/cloudwatch/home?region=eu-west-1#logsV2:log-groups/log-group/$252Faws$252Fvendedlogs$252Fstates$252Flifecycle-action-lifecycle/log-events$3FfilterPattern$3D$2522" + string(a.ActionID) + "$2522"},
		},
	}
	got := s.waitAction(agent, a.ActionID).Links
	if gb, wb := string(mustJSON(t, got)), string(mustJSON(t, want)); gb != wb {
		t.Errorf("links\n got %s\nwant %s", gb, wb)
	}

	bare := newStack(t, func(c *httpapi.Config) { c.Machines = nil })
	agent = bare.token(auth.RoleAgent, "ses_links")
	b := bare.submit(agent, "ses_links", "k1", submitBody("noop", `{}`, "c1"))
	if b.Links != nil {
		t.Errorf("links without a reader: %+v", b.Links)
	}
	if r := bare.do(req{method: "GET", path: "/v1/actions/" + string(b.ActionID) + "/machine", token: agent}); r.status != http.StatusNotImplemented {
		t.Errorf("machine without a reader: %d %s", r.status, r.body)
	}
}

func TestParseLogGroups(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []httpapi.LogGroup
		err      bool
	}{
		{name: "empty", in: ""},
		{name: "two", in: "api=/aws/lambda/a, states=/s", want: []httpapi.LogGroup{{Function: "api", Name: "/aws/lambda/a"}, {Function: "states", Name: "/s"}}},
		{name: "no equals", in: "api", err: true},
		{name: "no group", in: "api=", err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := httpapi.ParseLogGroups(tc.in)
			if (err != nil) != tc.err || !slices.Equal(got, tc.want) {
				t.Errorf("ParseLogGroups(%q) = %v, %v", tc.in, got, err)
			}
		})
	}
}
