package control

import (
	"context"
	"errors"
	"testing"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/actionflow/flowtest"
)

// After a compare-and-swap conflict on a command's completion, only the
// same completion (same execution, status, result version) is accepted;
// a rejection or another result version stays an error.
func TestCompletionAfterConflict(t *testing.T) {
	cases := []struct {
		name    string
		status  Status
		version int64
		reason  string
		wantErr bool
	}{
		{"the same application is idempotent", StatusApplied, 2, "", false},
		{"another result version is an error", StatusApplied, 3, "", true},
		{"a rejection of an applied command is an error", StatusRejected, 0, "stale_version", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			w := flowtest.NewWorld(t)
			p := w.Start(t)
			s, _ := New(Config{Flow: p.Flow, Logger: w.Log})
			e := actionflow.Execution{ExecutionID: "exe_1", SessionID: "ses_1", Kind: "agent_chat", Status: actionflow.ExecRunning}
			if err := p.Flow.PutExecution(ctx, &e); err != nil {
				t.Fatal(err)
			}
			rec, err := s.accept(ctx, "exe_1", Command{ID: "cmd_1", Type: Pause, ExpectedVersion: 1}, SystemPrincipal, nil)
			if err != nil {
				t.Fatal(err)
			}
			// The winner (reconciliation) completes first, at result version 2.
			if _, err := s.complete(ctx, e, rec, StatusApplied, "", 2, ""); err != nil {
				t.Fatal(err)
			}
			// The loser completes from its stale copy of the record.
			got, err := s.complete(ctx, e, rec, tc.status, tc.reason, tc.version, "")
			var cce *CompletionConflictError
			if tc.wantErr != errors.As(err, &cce) {
				t.Fatalf("got %+v, %v", got, err)
			}
			if got.Status != StatusApplied || got.ResultVersion != 2 {
				t.Fatalf("the stored completion must stand: %+v", got)
			}
		})
	}
}
