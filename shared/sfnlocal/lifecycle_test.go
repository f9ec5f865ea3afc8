package sfnlocal

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/openprogram/lifecycle/shared/store"
	"github.com/openprogram/lifecycle/shared/store/metered"
	"github.com/openprogram/lifecycle/shared/store/sqlitestore"
	"github.com/openprogram/lifecycle/statemachines"
)

// lifecycleSubstitutions fills the project definition's placeholders with
// local ARNs named after the functions.
func lifecycleSubstitutions() map[string]string {
	subs := map[string]string{}
	for placeholder, fn := range statemachines.Functions {
		subs[placeholder] = arn(fn)
	}
	return subs
}

// lifecycleFunctions stands in for the project's handlers: authorize
// answers from the action's input, the others acknowledge. Token tasks
// put their token on tokens.
type lifecycleFunctions struct {
	permission string // what authorize answers in "initial" mode
	executor   string
	tokens     chan string
	mu         sync.Mutex
	calls      []string
}

func (l *lifecycleFunctions) record(name string, payload []byte) map[string]any {
	var in map[string]any
	_ = json.Unmarshal(payload, &in)
	l.mu.Lock()
	l.calls = append(l.calls, fmt.Sprintf("%s/%v", name, in["mode"]))
	l.mu.Unlock()
	return in
}

func (l *lifecycleFunctions) called() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.calls, " ")
}

func (l *lifecycleFunctions) functions() map[string]LambdaFunc {
	token := func(name string) LambdaFunc {
		return func(_ context.Context, p []byte) ([]byte, error) {
			in := l.record(name, p)
			l.tokens <- in["task_token"].(string)
			return []byte(`{"published": true}`), nil
		}
	}
	ack := func(name string) LambdaFunc {
		return func(_ context.Context, p []byte) ([]byte, error) {
			l.record(name, p)
			return []byte(`{"ok": true}`), nil
		}
	}
	return map[string]LambdaFunc{
		"authorize": func(_ context.Context, p []byte) ([]byte, error) {
			in := l.record("authorize", p)
			perm := l.permission
			if in["mode"] == "revalidate" {
				perm = "allow"
			}
			return json.Marshal(map[string]string{"permission": perm, "executor": l.executor})
		},
		"approval": func(ctx context.Context, p []byte) ([]byte, error) {
			var in map[string]any
			_ = json.Unmarshal(p, &in)
			if in["mode"] == "await" {
				return token("approval")(ctx, p)
			}
			return ack("approval")(ctx, p)
		},
		"dispatch": func(ctx context.Context, p []byte) ([]byte, error) {
			var in map[string]any
			_ = json.Unmarshal(p, &in)
			if in["mode"] == "publish" {
				return token("dispatch")(ctx, p)
			}
			l.record("dispatch", p)
			return []byte(`{"outcome": "succeeded"}`), nil
		},
		"record": ack("record"),
	}
}

// The project's own definition loads, and its paths run end to end.
func TestActionLifecycleDefinition(t *testing.T) {
	tests := []struct {
		name       string
		permission string
		executor   string
		// tokens: outputs sent to each token task, in order ("" = none expected)
		tokens    []string
		wantCalls string
		wantOut   string
	}{
		{"allow sync", "allow", "sync", nil,
			"authorize/initial dispatch/sync record/<nil>", `"result":{"outcome":"succeeded"}`},
		{"deny", "deny", "sync", nil,
			"authorize/initial record/<nil>", `"decision":{"executor":"sync","permission":"deny"}`},
		{"ask, approve, host", "ask", "host", []string{`{"approved": true}`, `{"outcome": "succeeded", "exit_code": 0}`},
			"authorize/initial approval/await authorize/revalidate dispatch/publish record/<nil>", `"result":{"exit_code":0,"outcome":"succeeded"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lf := &lifecycleFunctions{permission: tc.permission, executor: tc.executor, tokens: make(chan string, 4)}
			h := newLifecycleHarness(t, lf.functions())
			name := "act_" + strings.ReplaceAll(tc.name, " ", "_")
			h.start(strings.NewReplacer(",", "").Replace(name), `{"action_id": "a1", "execution_id": "e1"}`)
			name = strings.NewReplacer(",", "").Replace(name)
			for _, out := range tc.tokens {
				tok := <-lf.tokens
				if err := h.sendSuccess(tok, out); err != nil {
					t.Fatal(err)
				}
			}
			d := h.waitStatus(name, types.ExecutionStatusSucceeded)
			if got := lf.called(); got != tc.wantCalls {
				t.Fatalf("calls %s\nwant  %s", got, tc.wantCalls)
			}
			if !strings.Contains(aws.ToString(d.Output), tc.wantOut) {
				t.Fatalf("output %s lacks %s", aws.ToString(d.Output), tc.wantOut)
			}
		})
	}
	t.Run("approval expires", func(t *testing.T) {
		lf := &lifecycleFunctions{permission: "ask", executor: "sync", tokens: make(chan string, 4)}
		h := newLifecycleHarness(t, lf.functions())
		h.start("act_expire", `{"action_id": "a1", "execution_id": "e1"}`)
		<-lf.tokens
		h.waitEvent("act_expire", types.HistoryEventTypeTaskSubmitted, 1)
		h.clock.Advance(24 * time.Hour)
		d := h.waitStatus("act_expire", types.ExecutionStatusSucceeded)
		if got := lf.called(); got != "authorize/initial approval/await approval/expire record/<nil>" {
			t.Fatalf("calls %s", got)
		}
		if !strings.Contains(aws.ToString(d.Output), `"Error":"States.Timeout"`) {
			t.Fatalf("output %s", aws.ToString(d.Output))
		}
	})
}

func newLifecycleHarness(t *testing.T, fns map[string]LambdaFunc) *harness {
	t.Helper()
	h := &harness{t: t, path: filepath.Join(t.TempDir(), "state.db"), clock: NewFakeClock(t0)}
	db, err := sqlitestore.Open(h.path)
	if err != nil {
		t.Fatal(err)
	}
	functions := map[string]LambdaFunc{}
	for name, f := range fns {
		functions[arn(name)] = f
	}
	eng, err := New(Config{
		Store: db, Definition: statemachines.ActionLifecycle, Substitutions: lifecycleSubstitutions(),
		StateMachineName: "action-lifecycle", Functions: functions, Clock: h.clock,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatalf("the project's definition does not load: %v", err)
	}
	if err := eng.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.db, h.eng = db, eng
	h.srv = httptest.NewServer(eng.Handler())
	h.client = sfn.New(sfn.Options{Region: "us-east-1", BaseEndpoint: aws.String(h.srv.URL),
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""), RetryMaxAttempts: 1})
	t.Cleanup(h.close)
	return h
}

// countingStore counts the write operations by kind.
type countingStore struct {
	store.Store
	puts, cas, appends atomic.Int64
}

func (c *countingStore) PutOnce(ctx context.Context, it store.Item) error {
	c.puts.Add(1)
	return c.Store.PutOnce(ctx, it)
}

func (c *countingStore) CompareAndSwap(ctx context.Context, it store.Item, expected, fence int64) error {
	c.cas.Add(1)
	return c.Store.CompareAndSwap(ctx, it, expected, fence)
}

func (c *countingStore) Append(ctx context.Context, stream string, body []byte) (int64, error) {
	c.appends.Add(1)
	return c.Store.Append(ctx, stream, body)
}

// The durable writes of one execution: one to create it and one per Task
// state completed (the last one closes it). The allow path has four Tasks.
func TestWritesPerExecution(t *testing.T) {
	db, err := sqlitestore.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c := &countingStore{Store: db}
	m := metered.Wrap(c)
	lf := &lifecycleFunctions{permission: "allow", executor: "sync"}
	functions := map[string]LambdaFunc{}
	for name, f := range lf.functions() {
		functions[arn(name)] = f
	}
	done := make(chan string, 1)
	eng, err := New(Config{
		Store: m, Definition: statemachines.ActionLifecycle, Substitutions: lifecycleSubstitutions(),
		StateMachineName: "action-lifecycle", Functions: functions,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		OnStatusChange: func(_ context.Context, ev StatusChangeEvent) {
			if ev.Detail.Status != "RUNNING" {
				done <- ev.Detail.Status
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer eng.Close(context.Background())
	// Start stores the definition once (PutOnce): not the execution's.
	c.puts.Store(0)
	before := m.Usage()
	if _, err := eng.startExecution(context.Background(), startExecutionInput{StateMachineArn: eng.StateMachineArn(), Name: "w1", Input: aws.String(`{"action_id": "a1", "execution_id": "e1"}`)}); err != nil {
		t.Fatal(err)
	}
	if st := <-done; st != "SUCCEEDED" {
		t.Fatalf("status %s", st)
	}
	used := m.Usage().Sub(before)
	// Create (PutOnce) and the close after the fourth Task
	// (CompareAndSwap): a Task that leads straight to another Task is not a
	// boundary worth a write (commitStep).
	if c.puts.Load() != 1 || c.appends.Load() != 0 || c.cas.Load() != 1 {
		t.Fatalf("writes: %d PutOnce, %d Append, %d CompareAndSwap; want 1, 0, 1", c.puts.Load(), c.appends.Load(), c.cas.Load())
	}
	t.Logf("allow path: %d writes, %d bytes written", used.Writes, used.BytesWritten)
}
