package policystore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/policystore"
	"github.com/openprogram/lifecycle/shared/store"
	"github.com/openprogram/lifecycle/shared/store/sqlitestore"
)

func TestPutGetVersions(t *testing.T) {
	st, err := sqlitestore.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rejectDenyAll := func(p json.RawMessage) (string, error) {
		if string(p) == `{"rules":["deny *"]}` {
			return "", &actionflow.ValidationError{Field: "policy.rules[0]", Msg: "line 1: refused"}
		}
		var doc struct {
			Version string `json:"version"`
		}
		json.Unmarshal(p, &doc)
		return doc.Version, nil
	}
	ps := policystore.New(st, rejectDenyAll)
	ctx := context.Background()
	human := actionflow.Principal{Subject: "h", Role: "human", Session: "ses_1"}

	d, err := ps.Get(ctx, "ses_1")
	if err != nil || d.Version != 0 || d.RestartWindowSeconds != -1 || string(d.Policy) != "{}" {
		t.Fatalf("default: %+v %v", d, err)
	}
	steps := []struct {
		name     string
		expected int64
		policy   string
		window   int64
		wantErr  any
		wantVer  int64
	}{
		{"first write", 0, `{"mode":"default"}`, -1, nil, 1},
		{"update at current version", 1, `{"mode":"plan"}`, 7200, nil, 2},
		{"stale version", 1, `{"mode":"auto"}`, 0, new(*actionflow.ConflictError), 2},
		{"create again", 0, `{"mode":"auto"}`, 0, new(*actionflow.ConflictError), 2},
		{"not an object", 2, `["x"]`, 0, new(*actionflow.ValidationError), 2},
		{"bad window", 2, `{}`, -2, new(*actionflow.ValidationError), 2},
		{"validator refuses", 2, `{"rules":["deny *"]}`, 0, new(*actionflow.ValidationError), 2},
		{"disable restart", 2, `{"mode":"plan"}`, 0, nil, 3},
		{"labelled", 3, `{"version":"a","mode":"plan"}`, 0, nil, 4},
		{"same content, same label", 4, `{"version":"a","mode":"plan"}`, 0, nil, 5},
		{"new content, same label", 5, `{"version":"a","mode":"auto"}`, 0, new(*actionflow.ValidationError), 5},
		{"new content, new label", 5, `{"version":"b","mode":"auto"}`, 0, nil, 6},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			w := s.window
			_, err := ps.Put(ctx, "ses_1", s.expected, json.RawMessage(s.policy), policystore.Settings{RestartWindowSeconds: &w}, human)
			switch want := s.wantErr.(type) {
			case nil:
				if err != nil {
					t.Fatal(err)
				}
			case **actionflow.ConflictError:
				if !errors.As(err, want) || (*want).Current.(policystore.Document).Version != s.wantVer {
					t.Fatalf("want conflict with current version %d, got %v", s.wantVer, err)
				}
			case **actionflow.ValidationError:
				if !errors.As(err, want) {
					t.Fatalf("want validation error, got %v", err)
				}
			}
			got, _ := ps.Get(ctx, "ses_1")
			if got.Version != s.wantVer {
				t.Fatalf("version %d, want %d", got.Version, s.wantVer)
			}
		})
	}
	got, _ := ps.Get(ctx, "ses_1")
	if w, limited := got.RestartWindow(); !limited || w != 0 || got.UpdatedBy.Subject != "h" {
		t.Fatalf("final %+v", got)
	}
}

func TestParsedNilWhenNeverWritten(t *testing.T) {
	st, err := sqlitestore.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ps := policystore.New(st, nil, policystore.WithDefault(json.RawMessage(`{"version":"default"}`)))
	parsed := policystore.Parsed[*string]{Store: ps, Parse: func(b []byte) (*string, error) { s := string(b); return &s, nil }}
	ctx := context.Background()
	if d, _ := ps.Get(ctx, "ses_1"); string(d.Policy) != `{"version":"default"}` {
		t.Fatalf("default %s", d.Policy)
	}
	if p, err := parsed.Policy(ctx, "ses_1"); p != nil || err != nil {
		t.Fatalf("never written: %v %v", p, err)
	}
	if _, err := ps.Put(ctx, "ses_1", 0, json.RawMessage(`{"version":"v1"}`), policystore.Settings{}, actionflow.Principal{Subject: "h", Role: "human"}); err != nil {
		t.Fatal(err)
	}
	if p, err := parsed.Policy(ctx, "ses_1"); err != nil || p == nil || *p != `{"version":"v1"}` {
		t.Fatalf("written: %v %v", p, err)
	}
}

// TestRestartWindowSource (issue 11, point 2): a session's own window is
// kept as its own; a session that sets none shows the service's default
// and restart recovery is told it set none; a document written before the
// source was kept reads -1 as none set and any other value as set.
func TestRestartWindowSource(t *testing.T) {
	st, err := sqlitestore.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ps := policystore.New(st, nil, policystore.WithRestartDefault(3600))
	ctx := context.Background()
	human := actionflow.Principal{Subject: "h", Role: "human"}
	i64 := func(v int64) *int64 { return &v }
	cases := []struct {
		name     string
		window   *int64
		legacy   string // a stored body written before restart_window_source
		shown    int64
		source   string
		own      int64
		ownIsSet bool
	}{
		{"never written", nil, "", 3600, policystore.WindowFromDefault, 0, false},
		{"none set", nil, "", 3600, policystore.WindowFromDefault, 0, false},
		{"disabled", i64(0), "", 0, policystore.WindowFromSession, 0, true},
		{"unlimited", i64(-1), "", -1, policystore.WindowFromSession, -1, true},
		{"two hours", i64(7200), "", 7200, policystore.WindowFromSession, 7200, true},
		{"legacy -1", nil, `{"session_id":"%s","policy":{},"restart_window_seconds":-1}`, 3600, policystore.WindowFromDefault, 0, false},
		{"legacy 0", nil, `{"session_id":"%s","policy":{},"restart_window_seconds":0}`, 0, policystore.WindowFromSession, 0, true},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			session := ids.SessionID(fmt.Sprintf("ses_%d", i))
			switch {
			case tc.legacy != "":
				k := policystore.Key(session)
				if err := st.PutOnce(ctx, store.Item{PK: k.PK, SK: k.SK, Version: 1, Body: []byte(fmt.Sprintf(tc.legacy, session))}); err != nil {
					t.Fatal(err)
				}
			case tc.name != "never written":
				d, err := ps.Put(ctx, session, 0, json.RawMessage(`{}`), policystore.Settings{RestartWindowSeconds: tc.window}, human)
				if err != nil || d.RestartWindowSeconds != tc.shown || d.RestartWindowSource != tc.source {
					t.Fatalf("put: %+v %v", d, err)
				}
			}
			d, err := ps.Get(ctx, session)
			if err != nil || d.RestartWindowSeconds != tc.shown || d.RestartWindowSource != tc.source {
				t.Fatalf("get: %+v %v", d, err)
			}
			own, set, err := ps.SessionRestartWindow(ctx, session)
			if err != nil || set != tc.ownIsSet || own != tc.own {
				t.Fatalf("session window: %d %v %v", own, set, err)
			}
		})
	}
}

// TestExecutionSettings: a session's iteration limit and idle timeout are
// validated (a 400 naming the field, nothing written), shown with their
// source, and given to executions that start (ExecutionDefaults); where
// the session sets none the service's defaults apply.
func TestExecutionSettings(t *testing.T) {
	st, err := sqlitestore.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ps := policystore.New(st, nil, policystore.WithExecutionDefaults(50, 0))
	ctx := context.Background()
	human := actionflow.Principal{Subject: "h", Role: "human"}
	i := func(v int) *int { return &v }
	i64 := func(v int64) *int64 { return &v }
	cases := []struct {
		name        string
		legacy      string // a stored body written before these settings
		settings    policystore.Settings
		badField    string
		limit       int
		limitSource string
		idle        int64
		idleSource  string
	}{
		{"never written: the service's defaults", "", policystore.Settings{}, "", 50, "default", 0, "default"},
		{"written before the settings existed", `{"session_id":"%s","policy":{},"restart_window_seconds":-1}`, policystore.Settings{}, "", 50, "default", 0, "default"},
		{"none set", "", policystore.Settings{RestartWindowSeconds: i64(0)}, "", 50, "default", 0, "default"},
		{"the session's own", "", policystore.Settings{IterationLimit: i(7), IdleTimeoutSeconds: i64(3600)}, "", 7, "session", 3600, "session"},
		{"no limit and off, said by the session", "", policystore.Settings{IterationLimit: i(0), IdleTimeoutSeconds: i64(0)}, "", 0, "session", 0, "session"},
		{"limit too high", "", policystore.Settings{IterationLimit: i(1001)}, "iteration_limit", 0, "", 0, ""},
		{"negative limit", "", policystore.Settings{IterationLimit: i(-1)}, "iteration_limit", 0, "", 0, ""},
		{"idle timeout under a minute", "", policystore.Settings{IdleTimeoutSeconds: i64(59)}, "idle_timeout_seconds", 0, "", 0, ""},
		{"negative idle timeout", "", policystore.Settings{IdleTimeoutSeconds: i64(-1)}, "idle_timeout_seconds", 0, "", 0, ""},
		{"idle timeout over 30 days", "", policystore.Settings{IdleTimeoutSeconds: i64(policystore.MaxIdleTimeoutSeconds + 1)}, "idle_timeout_seconds", 0, "", 0, ""},
	}
	for n, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			session := ids.SessionID(fmt.Sprintf("ses_%d", n))
			switch {
			case tc.legacy != "":
				k := policystore.Key(session)
				if err := st.PutOnce(ctx, store.Item{PK: k.PK, SK: k.SK, Version: 1, Body: []byte(fmt.Sprintf(tc.legacy, session))}); err != nil {
					t.Fatal(err)
				}
			case n > 0:
				_, err := ps.Put(ctx, session, 0, json.RawMessage(`{}`), tc.settings, human)
				var ve *actionflow.ValidationError
				if tc.badField != "" {
					if !errors.As(err, &ve) || ve.Field != tc.badField {
						t.Fatalf("want a validation error naming %s, got %v", tc.badField, err)
					}
					if d, _ := ps.Get(ctx, session); d.Version != 0 {
						t.Fatalf("a refused policy was written: %+v", d)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			d, err := ps.Get(ctx, session)
			if err != nil || d.IterationLimit != tc.limit || d.IterationLimitSource != tc.limitSource ||
				d.IdleTimeoutSeconds != tc.idle || d.IdleTimeoutSource != tc.idleSource {
				t.Fatalf("get: %+v %v", d, err)
			}
			def, err := ps.ExecutionDefaults(ctx, session)
			if err != nil || def.IterationLimit != tc.limit || def.IdleTimeoutSeconds != tc.idle {
				t.Fatalf("execution defaults: %+v %v", def, err)
			}
		})
	}
}
