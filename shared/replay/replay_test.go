package replay_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/permission"
	"github.com/openprogram/lifecycle/shared/permission/riskreview"
	"github.com/openprogram/lifecycle/shared/replay"
	"github.com/openprogram/lifecycle/shared/store"
	"github.com/openprogram/lifecycle/shared/store/sqlitestore"
)

const root = "/work/proj"

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func trusted(a actionflow.Action) permission.Trusted {
	return permission.Trusted{SessionID: a.SessionID, WorkingDir: root, ProjectRoot: root, HomeDir: "/home/dev", Interactive: a.Interactive}
}

// modelish blocks "make build" (what a model reviewer might say) and is
// otherwise the deterministic reviewer; it counts its calls, so a replay
// that called it again would show.
type modelish struct {
	calls int
	det   *riskreview.Reviewer
}

func (m *modelish) Review(ctx context.Context, in permission.ReviewInput) (permission.Verdict, error) {
	m.calls++
	var a struct{ Command string }
	_ = json.Unmarshal(in.Args, &a)
	if a.Command == "make build" {
		return permission.Verdict{Kind: permission.VerdictBlock, Category: "destructive", Reason: "the model thinks make build wipes the cache", Reviewer: "bedrock:test"}, nil
	}
	return m.det.Review(ctx, in)
}

type sessionActions map[ids.SessionID][]actionflow.Action

func (s sessionActions) EachOfSession(_ context.Context, session ids.SessionID, fn func(actionflow.Action) error) error {
	for _, a := range s[session] {
		if err := fn(a); err != nil {
			return err
		}
	}
	return nil
}

type fixture struct {
	t       *testing.T
	st      store.Store
	eng     *permission.Engine
	model   *modelish
	actions sessionActions
	n       int
}

func newFixture(t *testing.T) *fixture {
	st, err := sqlitestore.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	m := &modelish{det: riskreview.New()}
	eng, err := permission.NewEngine(permission.Config{Classifier: m, Counters: st, CredentialStores: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, st: st, eng: eng, model: m, actions: sessionActions{}}
}

// record decides a call live under livePolicy and records the action as
// the lifecycle does (the engine's decision kept on it).
func (f *fixture) record(session ids.SessionID, livePolicy, cmd string, at time.Time) actionflow.Action {
	f.t.Helper()
	f.n++
	args, _ := json.Marshal(map[string]string{"command": cmd})
	a := actionflow.Action{ActionID: ids.ActionID(fmt.Sprintf("act_%04d", f.n)), ExecutionID: "exe_1", SessionID: session, Tool: "Bash",
		Arguments: args, Interactive: true, CreatedAt: at}
	pd, err := f.eng.Decide(context.Background(), permission.Request{Trusted: trusted(a), Policy: permission.MustParsePolicy(livePolicy),
		Call: permission.Call{ActionID: a.ActionID, Tool: a.Tool, Args: a.Arguments}})
	if err != nil {
		f.t.Fatal(err)
	}
	a.ArgsDigest = pd.ArgsDigest
	raw, _ := json.Marshal(pd)
	a.Decision = &actionflow.Decision{Permission: pd.Permission, PolicyVersion: pd.PolicyVersion, Mode: "initial", Engine: raw,
		Reason: actionflow.Reason{Source: string(pd.Reason.Source), Code: string(pd.Reason.Code)}}
	a.States.Permission = pd.Permission
	f.actions[session] = append(f.actions[session], a)
	return a
}

func (f *fixture) replayer() *replay.Replayer {
	r, err := replay.New(replay.Config{Engine: f.eng, Context: trusted, Actions: f.actions, Store: f.st, Clock: func() time.Time { return t0.Add(time.Hour) }})
	if err != nil {
		f.t.Fatal(err)
	}
	return r
}

const (
	liveDefault = `{"version":"live1","mode":"default","allow":["Bash(git *)"],"deny":["Bash(rm *)"],"ask":["Bash(npm *)"]}`
	liveAuto    = `{"version":"live2","mode":"auto"}`
)

func TestReplay(t *testing.T) {
	f := newFixture(t)
	type exp struct {
		from, to lifecycle.Permission
		verdict  string
		why      string // part of the candidate reason
	}
	calls := []struct {
		cmd, live string
		at        time.Duration
		want      *exp // nil: unchanged
	}{
		{"git status", liveDefault, 1, &exp{"allow", "ask", "", "no allow rule"}},
		{"git push origin main", liveDefault, 2, &exp{"allow", "deny", "", "Bash(git push *)"}},
		{"npm test", liveDefault, 3, &exp{"ask", "allow", "", "allowed by Bash(npm test)"}},
		{"rm -rf build", liveDefault, 4, nil}, // deny by a rule live, by a hard constraint now: same permission
		{"ls -la", liveDefault, 5, &exp{"ask", "allow", "", "Bash(ls *)"}},
		{"cat notes.txt", liveDefault, 6, &exp{"ask", "allow", "", "Bash(cat *)"}},
	}
	for _, c := range calls {
		f.record("ses_a", c.live, c.cmd, t0.Add(c.at*time.Minute))
	}
	// Outside the window: not replayed.
	f.record("ses_a", liveDefault, "git log", t0.Add(-time.Hour))
	// Refused before the engine (no engine record) and not decided yet.
	f.actions["ses_a"] = append(f.actions["ses_a"],
		actionflow.Action{ActionID: "act_inv", SessionID: "ses_a", Tool: "Bash", CreatedAt: t0.Add(7 * time.Minute),
			Decision: &actionflow.Decision{Permission: lifecycle.PermissionDeny, Mode: "initial", Reason: actionflow.Reason{Source: "invalid_arguments"}}},
		actionflow.Action{ActionID: "act_new", SessionID: "ses_a", Tool: "Bash", CreatedAt: t0.Add(8 * time.Minute)})

	cand := json.RawMessage(`{"version":"cand1","mode":"default","allow":["Bash(npm test)","Bash(ls *)","Bash(cat *)"],
		"deny":["Bash(git push *)"],"hardConstraints":["Bash(rm -rf *)"]}`)
	rep, err := f.replayer().Run(context.Background(), replay.Request{Candidate: cand, Sessions: []ids.SessionID{"ses_a"},
		Since: t0, Until: t0.Add(time.Hour), By: actionflow.Principal{Subject: "human:ses_a", Role: "human"}})
	if err != nil {
		t.Fatal(err)
	}
	// cat notes.txt: live asked (no rule), now allowed by Bash(cat *): a change too.
	if rep.Replayed != 6 || rep.Skipped != 2 || rep.Unchanged != 1 {
		t.Fatalf("replayed %d, unchanged %d, skipped %d; want 6, 1, 2", rep.Replayed, rep.Unchanged, rep.Skipped)
	}
	byCmd := map[string]replay.Change{}
	for _, c := range rep.Changes {
		byCmd[c.Summary] = c
	}
	for _, c := range calls {
		t.Run(c.cmd, func(t *testing.T) {
			got, changed := byCmd[c.cmd]
			if c.want == nil {
				if changed {
					t.Fatalf("unexpected change %+v", got)
				}
				return
			}
			if !changed {
				t.Fatalf("no change listed (changes %+v)", rep.Changes)
			}
			if got.From != c.want.from || got.To != c.want.to || got.Verdict != c.want.verdict {
				t.Fatalf("change %+v, want %+v", got, c.want)
			}
			if !strings.Contains(got.Candidate.Detail+" "+got.Candidate.Rule, c.want.why) || got.Live.Code == "" {
				t.Fatalf("reasons live %+v candidate %+v, want %q", got.Live, got.Candidate, c.want.why)
			}
		})
	}
	want := map[string]int{"allow->ask": 1, "allow->deny": 1, "ask->allow": 3, "deny->deny": 1}
	got := map[string]int{}
	for _, tr := range rep.Transitions {
		got[string(tr.From)+"->"+string(tr.To)] = tr.Count
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("transitions %v, want %v", got, want)
	}
	// Stored, readable by id, and the latest of its digest for the session.
	back, err := f.replayer().Get(context.Background(), rep.ReplayID)
	if err != nil || back.CandidateDigest != rep.CandidateDigest || len(back.Changes) != len(rep.Changes) {
		t.Fatalf("stored replay %+v, %v", back, err)
	}
	l, ok, err := f.replayer().Latest(context.Background(), "ses_a", rep.CandidateDigest)
	if err != nil || !ok || l.ReplayID != rep.ReplayID {
		t.Fatalf("latest %+v %v %v", l, ok, err)
	}
	// The same document spelled differently has the same digest.
	d2, _ := replay.Digest(json.RawMessage(`{"mode":"default","version":"cand1","hardConstraints":["Bash(rm -rf *)"],"deny":["Bash(git push *)"],"allow":["Bash(npm test)","Bash(ls *)","Bash(cat *)"]}`))
	if d2 != rep.CandidateDigest {
		t.Fatalf("digest %s, want %s", d2, rep.CandidateDigest)
	}
}

// The reviewer is never called again: a recorded verdict (here a model's
// block) is reused and marked; a call with none gets the deterministic
// reviewer's; the refusal counters are simulated, never written.
func TestReplayReusesRecordedVerdicts(t *testing.T) {
	f := newFixture(t)
	f.record("ses_b", liveAuto, "make build", t0.Add(time.Minute))  // the "model" blocks it live
	f.record("ses_b", liveDefault, "ls -la", t0.Add(2*time.Minute)) // asked live (no rule), never reviewed
	f.record("ses_b", liveAuto, "make test", t0.Add(3*time.Minute)) // unproven live: asked
	calls := f.model.calls

	cand := json.RawMessage(`{"version":"cand2","mode":"auto"}`)
	rep, err := f.replayer().Run(context.Background(), replay.Request{Candidate: cand, Sessions: []ids.SessionID{"ses_b"}, Since: t0, Until: t0.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if f.model.calls != calls {
		t.Fatalf("the reviewer was called %d more times", f.model.calls-calls)
	}
	if rep.VerdictsRecorded != 2 || rep.VerdictsDeterministic != 1 {
		t.Fatalf("verdicts recorded %d deterministic %d, want 2 and 1", rep.VerdictsRecorded, rep.VerdictsDeterministic)
	}
	// make build: deny live (blocked), deny now with the recorded verdict: unchanged.
	// ls -la: asked live, allowed now by the deterministic reviewer.
	if len(rep.Changes) != 1 || rep.Changes[0].Summary != "ls -la" || rep.Changes[0].To != lifecycle.PermissionAllow ||
		rep.Changes[0].Verdict != replay.VerdictDeterministic {
		t.Fatalf("changes %+v", rep.Changes)
	}
	c, err := f.st.GetCounter(context.Background(), permission.CounterKey("ses_b", "cand2"))
	if err != nil || c != (store.Counter{}) {
		t.Fatalf("the replay wrote refusal counters: %+v %v", c, err)
	}
}

func TestReplayRefusesBadRequests(t *testing.T) {
	f := newFixture(t)
	good := json.RawMessage(`{"version":"c","mode":"default"}`)
	cases := []struct {
		name  string
		req   replay.Request
		field string
	}{
		{"invalid policy", replay.Request{Candidate: json.RawMessage(`{"version":"c","deny":["Bash(("]}`), Sessions: []ids.SessionID{"s"}, Since: t0, Until: t0.Add(time.Hour)}, "policy"},
		{"no session", replay.Request{Candidate: good, Since: t0, Until: t0.Add(time.Hour)}, "sessions"},
		{"twice", replay.Request{Candidate: good, Sessions: []ids.SessionID{"s", "s"}, Since: t0, Until: t0.Add(time.Hour)}, "sessions[1]"},
		{"empty window", replay.Request{Candidate: good, Sessions: []ids.SessionID{"s"}, Since: t0, Until: t0}, "since"},
		{"too long", replay.Request{Candidate: good, Sessions: []ids.SessionID{"s"}, Since: t0, Until: t0.Add(100 * 24 * time.Hour)}, "since"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.replayer().Run(context.Background(), tc.req)
			ve, ok := err.(*actionflow.ValidationError)
			if !ok || ve.Field != tc.field {
				t.Fatalf("error %v, want a validation error of %s", err, tc.field)
			}
		})
	}
	if _, err := f.replayer().Get(context.Background(), "rpl_nope"); err == nil {
		t.Fatal("an unknown replay was found")
	}
}

// An approved ask is compared as the ask it was, not as the allow its
// revalidation recorded.
func TestReplayComparesTheFirstDecision(t *testing.T) {
	f := newFixture(t)
	a := f.record("ses_c", liveDefault, "npm install", t0.Add(time.Minute))
	raw, _ := json.Marshal(permission.Decision{Permission: lifecycle.PermissionAllow, Reason: permission.Reason{Source: permission.SourceApproval, Code: permission.CodeApproved}})
	first := *a.Decision
	f.actions["ses_c"][0].InitialDecision = &first
	f.actions["ses_c"][0].Decision = &actionflow.Decision{Permission: lifecycle.PermissionAllow, Mode: "revalidate", Engine: raw}
	rep, err := f.replayer().Run(context.Background(), replay.Request{Candidate: json.RawMessage(`{"version":"c3","mode":"default","allow":["Bash(npm install)"]}`),
		Sessions: []ids.SessionID{"ses_c"}, Since: t0, Until: t0.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Changes) != 1 || rep.Changes[0].From != lifecycle.PermissionAsk || rep.Changes[0].Live.Source != "ask_rule" {
		t.Fatalf("changes %+v", rep.Changes)
	}
}
