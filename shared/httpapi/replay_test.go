package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/auth"
	"github.com/openprogram/lifecycle/shared/decider"
	"github.com/openprogram/lifecycle/shared/httpapi"
	"github.com/openprogram/lifecycle/shared/permission"
	"github.com/openprogram/lifecycle/shared/permission/riskreview"
	"github.com/openprogram/lifecycle/shared/policystore"
	"github.com/openprogram/lifecycle/shared/replay"
	"github.com/openprogram/lifecycle/shared/store"
)

// replayStack is riskStack with policy replay, whose clock the test moves
// (skew is added to the real time).
func replayStack(t *testing.T, skew *atomic.Int64) *stack {
	root := t.TempDir()
	return newStackWith(t, func(st store.Store) (actionflow.Decider, func(*httpapi.Config)) {
		ps := policystore.New(st, httpapi.ValidatePermissionPolicy, policystore.WithDefault(json.RawMessage(decider.DefaultPolicyDoc)))
		live := policystore.Parsed[*permission.Policy]{Store: ps, Parse: permission.ParsePolicy}
		eng, err := permission.NewEngine(permission.Config{Classifier: riskreview.New(), Counters: st, CredentialStores: []string{}})
		if err != nil {
			t.Fatal(err)
		}
		d := &decider.Decider{Engine: eng, Policies: live, ProjectRoot: root, WorkingDir: root, HomeDir: root, History: actionflow.History{Store: st}}
		rp, err := replay.New(replay.Config{Engine: eng, Context: d.Trusted, Actions: actionflow.History{Store: st}, Store: st,
			Clock: func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }})
		if err != nil {
			t.Fatal(err)
		}
		return d, func(c *httpapi.Config) {
			c.Policies = ps
			c.Tools = httpapi.PermissionTools{Policies: live, Default: decider.DefaultPolicy(), Catalog: catalog}
			c.Replays = rp
		}
	})
}

func TestPolicyReplayAPI(t *testing.T) {
	var skew atomic.Int64
	s := replayStack(t, &skew)
	human, agent, admin := s.token(auth.RoleHuman, "ses_1"), s.token(auth.RoleAgent, "ses_1"), s.token(auth.RoleAdmin, "")
	other := s.token(auth.RoleHuman, "ses_2")
	zero := int64(0)
	if r := s.do(req{method: "PUT", path: "/v1/sessions/ses_1/policy", token: human, body: httpapi.PolicyBody{ExpectedVersion: &zero,
		Policy: json.RawMessage(`{"version":"p1","mode":"default","allow":["Bash(git *)"]}`)}}); r.status != 200 {
		t.Fatalf("put: %d %s", r.status, r.body)
	}
	since := time.Now().Add(-time.Minute)
	for i, cmd := range []string{"git status", "ls -la", "npm test"} {
		v := s.submit(agent, "ses_1", "k"+cmd, submitBody("Bash", `{"command":`+jsString(cmd)+`}`, "c"+string(rune('1'+i))))
		s.decided(agent, v.ActionID)
	}
	candidate := json.RawMessage(`{"version":"c1","mode":"default","allow":["Bash(npm *)"],"deny":["Bash(git *)"]}`)
	body := map[string]any{"policy": candidate, "since": since}

	r := s.do(req{method: "POST", path: "/v1/sessions/ses_1/policy/replays", token: human, body: body})
	if r.status != http.StatusCreated {
		t.Fatalf("replay: %d %s", r.status, r.body)
	}
	var rep replay.Report
	r.decode(t, &rep)
	got := map[string]int{}
	for _, tr := range rep.Transitions {
		got[string(tr.From)+"->"+string(tr.To)] = tr.Count
	}
	if rep.Replayed != 3 || got["allow->deny"] != 1 || got["ask->allow"] != 1 || got["ask->ask"] != 1 || len(rep.Changes) != 2 {
		t.Fatalf("report %+v, transitions %v", rep, got)
	}
	for _, c := range rep.Changes {
		if c.Live.Code == "" || c.Candidate.Code == "" {
			t.Fatalf("change without both reasons: %+v", c)
		}
	}
	// Without side effect: the live policy and decisions are as they were.
	var pv httpapi.PolicyView
	s.do(req{method: "GET", path: "/v1/sessions/ses_1/policy", token: human}).decode(t, &pv)
	if pv.PolicyVersion != "p1" || pv.RequireReplay {
		t.Fatalf("policy after a replay: %+v", pv)
	}

	cases := []struct {
		name, method, path, token string
		body                      any
		status                    int
		code                      string
	}{
		{"read by the session's human", "GET", "/v1/policy/replays/" + rep.ReplayID, human, nil, 200, ""},
		{"read by the session's agent", "GET", "/v1/policy/replays/" + rep.ReplayID, agent, nil, 200, ""},
		{"not by another session", "GET", "/v1/policy/replays/" + rep.ReplayID, other, nil, 403, "forbidden"},
		{"an unknown id answers alike", "GET", "/v1/policy/replays/rpl_nope", other, nil, 403, "forbidden"},
		{"an admin sees a missing one", "GET", "/v1/policy/replays/rpl_nope", admin, nil, 404, "not_found"},
		{"an agent cannot replay", "POST", "/v1/sessions/ses_1/policy/replays", agent, body, 403, "forbidden"},
		{"a human names only its session", "POST", "/v1/policy/replays", human, map[string]any{"policy": candidate, "since": since, "sessions": []string{"ses_2"}}, 403, "forbidden"},
		{"a human's default is its session", "POST", "/v1/policy/replays", human, body, 201, ""},
		{"an admin names the sessions", "POST", "/v1/policy/replays", admin, body, 400, "missing_field"},
		{"an admin replays several", "POST", "/v1/policy/replays", admin, map[string]any{"policy": candidate, "since": since, "sessions": []string{"ses_1", "ses_2"}}, 201, ""},
		{"an invalid candidate names its place", "POST", "/v1/sessions/ses_1/policy/replays", human, map[string]any{"policy": json.RawMessage(`{"version":"x","deny":["Bash(("]}`), "since": since}, 400, "invalid_field"},
		{"since is required", "POST", "/v1/sessions/ses_1/policy/replays", human, map[string]any{"policy": candidate}, 400, "missing_field"},
		{"a human cannot require replays", "PUT", "/v1/sessions/ses_1/policy/options", human, map[string]any{"require_replay": true}, 403, "forbidden"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := s.do(req{method: tc.method, path: tc.path, token: tc.token, body: tc.body})
			if r.status != tc.status {
				t.Fatalf("%d %s, want %d", r.status, r.body, tc.status)
			}
			if tc.code != "" && r.errorBody(t).Code != tc.code {
				t.Fatalf("code %s, want %s", r.errorBody(t).Code, tc.code)
			}
		})
	}
	var multi replay.Report
	s.do(req{method: "POST", path: "/v1/policy/replays", token: admin, body: map[string]any{"policy": candidate, "since": since, "sessions": []string{"ses_1", "ses_2"}}}).decode(t, &multi)
	if r := s.do(req{method: "GET", path: "/v1/policy/replays/" + multi.ReplayID, token: human}); r.status != 403 {
		t.Fatalf("a human read a replay of several sessions: %d", r.status)
	}
}

// require_replay: a policy change is refused unless the same document was
// replayed within the hour; the change then names the replay.
func TestRequireReplay(t *testing.T) {
	var skew atomic.Int64
	s := replayStack(t, &skew)
	human, admin := s.token(auth.RoleHuman, "ses_1"), s.token(auth.RoleAdmin, "")
	if r := s.do(req{method: "PUT", path: "/v1/sessions/ses_1/policy/options", token: admin, body: map[string]any{"require_replay": true}}); r.status != 200 {
		t.Fatalf("options: %d %s", r.status, r.body)
	}
	doc := json.RawMessage(`{"version":"p1","mode":"default","allow":["Bash(git *)"]}`)
	same := json.RawMessage(`{ "allow": ["Bash(git *)"], "mode": "default", "version": "p1" }`) // the same document (JCS)
	zero := int64(0)
	put := func(p json.RawMessage) resp {
		return s.do(req{method: "PUT", path: "/v1/sessions/ses_1/policy", token: human, body: httpapi.PolicyBody{ExpectedVersion: &zero, Policy: p}})
	}
	r := put(doc)
	if e := r.errorBody(t); r.status != 409 || e.Code != "replay_required" || !strings.Contains(e.Message, "sha256:") || !strings.Contains(e.Message, "policy/replays") {
		t.Fatalf("unreplayed change: %d %s", r.status, r.body)
	}
	var rep replay.Report
	s.do(req{method: "POST", path: "/v1/sessions/ses_1/policy/replays", token: human, body: map[string]any{"policy": doc, "since": time.Now().Add(-time.Hour)}}).decode(t, &rep)
	// Another document does not ride on it.
	if r := put(json.RawMessage(`{"version":"p2","mode":"default"}`)); r.status != 409 {
		t.Fatalf("another document: %d %s", r.status, r.body)
	}
	// An hour later the replay is too old, and the refusal names it.
	skew.Store(int64(61 * time.Minute))
	if r := put(same); r.status != 409 || !strings.Contains(r.errorBody(t).Message, rep.ReplayID) {
		t.Fatalf("stale replay: %d %s", r.status, r.body)
	}
	skew.Store(0)
	r = put(same)
	if r.status != 200 {
		t.Fatalf("replayed change: %d %s", r.status, r.body)
	}
	var pv httpapi.PolicyView
	r.decode(t, &pv)
	if pv.Replay == nil || pv.Replay.ReplayID != rep.ReplayID || !pv.RequireReplay || pv.Version != 1 {
		t.Fatalf("the change does not name its replay: %s", r.body)
	}
	// Off again: changes need no replay.
	s.do(req{method: "PUT", path: "/v1/sessions/ses_1/policy/options", token: admin, body: map[string]any{"require_replay": false}})
	one := int64(1)
	if r := s.do(req{method: "PUT", path: "/v1/sessions/ses_1/policy", token: human, body: httpapi.PolicyBody{ExpectedVersion: &one,
		Policy: json.RawMessage(`{"version":"p3","mode":"default"}`)}}); r.status != 200 {
		t.Fatalf("after require_replay off: %d %s", r.status, r.body)
	}
}
