package clientcmd_test

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/auth"
	"github.com/openprogram/lifecycle/shared/control"
	"github.com/openprogram/lifecycle/shared/httpapi"
	"github.com/openprogram/lifecycle/shared/store/sqlitestore"
)

// TestCommandForkAndCancelDescendants: lifecycle command forks from a
// saved point (the child is printed) and cancels an execution (each
// descendant the cancel reached is printed with its cancel's status).
func TestCommandForkAndCancelDescendants(t *testing.T) {
	dir := t.TempDir()
	st, err := sqlitestore.Open(filepath.Join(dir, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	svc, err := actionflow.New(actionflow.Config{Store: st, Decider: askAll{}, Starter: noStart{}, Tasks: &tasks{done: map[string]bool{}}, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ctl, err := control.New(control.Config{Flow: svc, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	keys, err := auth.LoadOrCreateKeys(dir)
	if err != nil {
		t.Fatal(err)
	}
	iss, _ := auth.NewIssuer(keys)
	h, err := httpapi.New(httpapi.Config{Service: svc, Auth: iss, Logger: quiet, NoUI: true, Control: httpapi.ControlService{Service: ctl}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	human, _ := iss.Issue("human", "ses_cli", time.Hour)
	api := []string{"--api", srv.URL, "--token", human}

	ctx := context.Background()
	p := actionflow.Execution{ExecutionID: "exe_parent", SessionID: "ses_cli", RunID: "run_1", BranchID: "exe_parent", Kind: "function", Status: actionflow.ExecRunning}
	if err := svc.PutExecution(ctx, &p); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.StartChildTask(ctx, p.ExecutionID, actionflow.ChildTask{ExecutionID: "exe_task", Kind: "job"}); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, append(api, "command", "exe_parent", "--type", "fork", "--payload", `{"checkpoint_version":0}`)...)
	if err != nil || !strings.Contains(out, "fork applied") || !strings.Contains(out, "; child execution exe_") {
		t.Fatalf("fork: %v\n%s", err, out)
	}
	if out, err := run(t, append(api, "command", "exe_parent", "--type", "fork", "--payload", `{"checkpoint_version":7}`)...); err == nil || !strings.Contains(err.Error(), "saved_point_unavailable") {
		t.Fatalf("fork from 7: %v\n%s", err, out)
	}
	out, err = run(t, append(api, "command", "exe_parent", "--type", "cancel")...)
	if err != nil || !strings.Contains(out, "cancel applied") || !strings.Contains(out, "descendant exe_task (child of exe_parent): cancel applied") ||
		strings.Count(out, "descendant ") != 2 {
		t.Fatalf("cancel: %v\n%s", err, out)
	}
}
