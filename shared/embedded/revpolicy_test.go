package embedded_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/apiclient"
	"github.com/openprogram/lifecycle/shared/auth"
	"github.com/openprogram/lifecycle/shared/embedded"
	"github.com/openprogram/lifecycle/shared/httpapi"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
)

// revProcess is one serve-like process: the embedded stack (revision A or
// B by its definition and handler contract) behind the HTTP API.
type revProcess struct {
	s     *embedded.Stack
	srv   *httptest.Server
	human *apiclient.Client
}

func serveRevision(t *testing.T, dir, ws string, opts ...func(*embedded.Config)) *revProcess {
	t.Helper()
	ex := &countingExecutor{}
	s := start(t, dir, ws, ex, append([]func(*embedded.Config){func(c *embedded.Config) { c.SweepInterval = 200 * time.Millisecond }}, opts...)...)
	ctl := httpapi.ControlService{Service: s.Control}
	h, err := httpapi.New(httpapi.Config{Service: s.Service, Auth: qIssuer, Control: ctl, Facts: ctl, Wake: s.Bus, NoUI: true, Revisions: s.Revisions})
	if err != nil {
		t.Fatal(err)
	}
	p := &revProcess{s: s, srv: httptest.NewServer(h)}
	tok, err := qIssuer.Issue(auth.RoleHuman, "ses_e2e", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	p.human = &apiclient.Client{BaseURL: p.srv.URL, Token: tok}
	t.Cleanup(p.stop)
	return p
}

func (p *revProcess) stop() {
	p.srv.Close()
	p.s.Close(context.Background())
}

// machineVersion is the state machine version an execution of the engine runs.
func machineVersion(t *testing.T, s *embedded.Stack, name string) (version, status string) {
	t.Helper()
	out, err := s.SFN.DescribeExecution(context.Background(), &sfn.DescribeExecutionInput{
		ExecutionArn: aws.String(s.SFNClient.ExecutionARN(ids.ActionID(name)))})
	if err != nil {
		t.Fatalf("describe %s: %v", name, err)
	}
	return aws.ToString(out.StateMachineVersionArn), string(out.Status)
}

func withPolicy(policy string) func(*embedded.Config) {
	return func(c *embedded.Config) { c.RevisionPolicy = policy }
}

// revisionB deploys revision B: another definition, and (incompatible)
// a handler contract that cannot resume A's.
func revisionB(t *testing.T, incompatible bool) func(*embedded.Config) {
	def := withComment(t, "revision B")
	return func(c *embedded.Config) {
		c.Definition = def
		if incompatible {
			c.HandlerContract, c.HandlerResumes = 2, []int{2}
		}
	}
}

// An approval opened under revision A, approved after serve restarts with
// revision B: under keep_original the action runs on A; under use_latest
// on B (handed off at the approval, before it revalidated); an
// incompatible B leaves the execution paused with the differences, in the
// API, and nothing runs.
func TestApprovalAcrossARevisionChange(t *testing.T) {
	cases := []struct {
		name         string
		policy       string
		incompatible bool
	}{
		{"keep_original runs on A", actionflow.KeepOriginal, false},
		{"use_latest runs on B", actionflow.UseLatest, false},
		{"use_latest with an incompatible B stays paused", actionflow.UseLatest, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir, ws := t.TempDir(), t.TempDir()
			ctx := context.Background()
			p := serveRevision(t, dir, ws, withPolicy(tc.policy))
			revA, versionA := p.s.Revision.Revision.ID, p.s.LiveVersionARN
			a := submit(t, p.s, "Write", `{"file_path":"approved.txt","content":"hi"}`)
			ap := pending(t, p.s, a.ActionID)
			if v, _ := machineVersion(t, p.s, string(a.ActionID)); v != versionA {
				t.Fatalf("the approval's machine runs on %s, want A %s", v, versionA)
			}
			p.stop()

			p = serveRevision(t, dir, ws, withPolicy(tc.policy), revisionB(t, tc.incompatible))
			revB, versionB := p.s.Revision.Revision.ID, p.s.LiveVersionARN
			if revB == revA || versionB == versionA {
				t.Fatalf("the restart did not deploy a new revision: %s %s", revB, versionB)
			}
			if _, err := p.human.Decide(ctx, ap.ApprovalID, actionflow.DecisionApprove, ap.ArgsDigest); err != nil {
				t.Fatal(err)
			}
			if tc.incompatible {
				deadline := time.Now().Add(20 * time.Second)
				var v httpapi.ExecutionView
				for {
					var err error
					if v, err = p.human.Execution(ctx, a.ExecutionID); err != nil {
						t.Fatal(err)
					}
					if v.Execution.Status == actionflow.ExecPaused && v.Execution.RevisionBlock != nil || time.Now().After(deadline) {
						break
					}
					time.Sleep(20 * time.Millisecond)
				}
				e := v.Execution
				if e.Status != actionflow.ExecPaused || e.PauseReason != actionflow.RevisionIncompatible || e.RevisionBlock == nil ||
					e.RevisionBlock.Candidate != ids.RevisionID(revB) || e.RevisionBlock.Active != ids.RevisionID(revA) ||
					len(e.RevisionBlock.Differences) == 0 || !strings.Contains(strings.Join(e.RevisionBlock.Differences, "\n"), "handler contract changed from 1") {
					t.Fatalf("execution %s %q block %+v", e.Status, e.PauseReason, e.RevisionBlock)
				}
				// Nothing ran: the approval stays approved, A's machine waits, no file.
				time.Sleep(500 * time.Millisecond) // two sweeps: none resends the decision to A
				if _, st := machineVersion(t, p.s, string(a.ActionID)); st != "RUNNING" {
					t.Fatalf("A's machine is %s", st)
				}
				got, _ := p.s.Service.GetAction(ctx, a.ActionID)
				if got.States.Terminal() || got.Start != nil {
					t.Fatalf("the held action moved: %+v", got.States)
				}
				if _, err := os.Stat(filepath.Join(ws, "approved.txt")); !os.IsNotExist(err) {
					t.Fatal("the held action ran")
				}
				// The owner's explicit choice: keep the original revision,
				// then Continue. The held approval completes A's wait.
				ver := e.Version
				if r, err := p.human.Command(ctx, a.ExecutionID, httpapi.CommandBody{CommandID: "cmd_keep", Type: "set_revision_policy",
					ExpectedVersion: &ver, Payload: json.RawMessage(`{"policy":"keep_original"}`)}); err != nil || r.Status != "applied" {
					t.Fatalf("set policy: %+v %v", r, err)
				}
				ver++
				if r, err := p.human.Command(ctx, a.ExecutionID, httpapi.CommandBody{CommandID: "cmd_continue", Type: "continue", ExpectedVersion: &ver}); err != nil || r.Status != "applied" {
					t.Fatalf("continue: %+v %v", r, err)
				}
				done := waitFor(t, p.s, a.ActionID, terminal)
				rc, err := p.s.Service.GetReceipt(ctx, a.ActionID)
				if done.States.Outcome != lifecycle.OutcomeSucceeded || err != nil || rc.Revision != ids.RevisionID(revA) || done.Machine != "" {
					t.Fatalf("after continue: %+v receipt %q %v machine %q", done.States, rc.Revision, err, done.Machine)
				}
				if ver, st := machineVersion(t, p.s, string(a.ActionID)); ver != versionA || st != "SUCCEEDED" {
					t.Fatalf("machine on %s (%s), want A %s", ver, st, versionA)
				}
				return
			}
			got := waitFor(t, p.s, a.ActionID, terminal)
			if got.States.Outcome != lifecycle.OutcomeSucceeded {
				t.Fatalf("approved: %+v", got.States)
			}
			if b, err := os.ReadFile(filepath.Join(ws, "approved.txt")); err != nil || string(b) != "hi" {
				t.Fatalf("file %q %v", b, err)
			}
			v, err := p.human.Execution(ctx, a.ExecutionID)
			if err != nil {
				t.Fatal(err)
			}
			rc, err := p.s.Service.GetReceipt(ctx, a.ActionID)
			if err != nil {
				t.Fatal(err)
			}
			switch tc.policy {
			case actionflow.KeepOriginal:
				if ver, st := machineVersion(t, p.s, string(a.ActionID)); ver != versionA || st != "SUCCEEDED" {
					t.Fatalf("machine on %s (%s), want A %s", ver, st, versionA)
				}
				if rc.Revision != ids.RevisionID(revA) || v.Execution.ActiveRevision != ids.RevisionID(revA) || got.Machine != "" {
					t.Fatalf("receipt %q, active %q, machine %q", rc.Revision, v.Execution.ActiveRevision, got.Machine)
				}
			case actionflow.UseLatest:
				if got.Machine == "" || got.Handoff == nil || got.Handoff.FromRevision != ids.RevisionID(revA) {
					t.Fatalf("not handed off: machine %q handoff %+v", got.Machine, got.Handoff)
				}
				if ver, st := machineVersion(t, p.s, got.Machine); ver != versionB || st != "SUCCEEDED" {
					t.Fatalf("handed-off machine on %s (%s), want B %s", ver, st, versionB)
				}
				if ver, st := machineVersion(t, p.s, string(a.ActionID)); ver != versionA || st != "ABORTED" {
					t.Fatalf("A's machine %s (%s), want stopped on A", ver, st)
				}
				if rc.Revision != ids.RevisionID(revB) || v.Execution.ActiveRevision != ids.RevisionID(revB) ||
					v.Execution.StartedRevision != ids.RevisionID(revA) || v.Checkpoint.Revision != ids.RevisionID(revB) {
					t.Fatalf("receipt %q, execution active %q started %q, checkpoint %q", rc.Revision, v.Execution.ActiveRevision, v.Execution.StartedRevision, v.Checkpoint.Revision)
				}
			}
		})
	}
}

// A policy change is a version-fenced command: a stale expected_version
// is 409 and saves nothing; the current one applies and starts nothing.
// Deleting A's version while an execution is pinned to it is refused.
func TestRevisionPolicyCommandAndPinnedVersion(t *testing.T) {
	dir, ws := t.TempDir(), t.TempDir()
	ctx := context.Background()
	p := serveRevision(t, dir, ws)
	versionA := p.s.LiveVersionARN
	a := submit(t, p.s, "Write", `{"file_path":"x.txt","content":"x"}`)
	pending(t, p.s, a.ActionID)
	v, err := p.human.Execution(ctx, a.ExecutionID)
	if err != nil {
		t.Fatal(err)
	}
	if v.Execution.RevisionPolicy != actionflow.KeepOriginal || v.Execution.StartedRevision != ids.RevisionID(p.s.Revision.Revision.ID) {
		t.Fatalf("execution policy %q started %q", v.Execution.RevisionPolicy, v.Execution.StartedRevision)
	}
	cur := v.Execution.Version
	res, err := p.human.Command(ctx, a.ExecutionID, httpapi.CommandBody{CommandID: "cmd_policy", Type: "set_revision_policy",
		ExpectedVersion: &cur, Payload: json.RawMessage(`{"policy":"use_latest"}`)})
	if err != nil || res.Status != "applied" {
		t.Fatalf("policy change: %+v %v", res, err)
	}
	// The same version again (what a sender who did not see the change
	// has) is stale: 409 stale_version, nothing saved.
	body := fmt.Sprintf(`{"command_id":"cmd_stale","type":"set_revision_policy","expected_version":%d,"payload":{"policy":"keep_original"}}`, cur)
	req, _ := http.NewRequest("POST", p.srv.URL+"/v1/executions/"+string(a.ExecutionID)+"/commands", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+p.human.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusConflict || !strings.Contains(string(msg), `"stale_version"`) {
		t.Fatalf("stale policy change: %d %s", resp.StatusCode, msg)
	}
	if v, _ = p.human.Execution(ctx, a.ExecutionID); v.Execution.RevisionPolicy != actionflow.UseLatest {
		t.Fatalf("policy %q", v.Execution.RevisionPolicy)
	}
	if ap, _ := p.s.Service.GetApproval(ctx, a.ActionID); ap.Status != actionflow.ApprovalPending {
		t.Fatalf("the policy change moved the approval: %s", ap.Status)
	}
	// The revisions listing shows A with this execution pinned to it.
	revs, err := p.human.Revisions(ctx, "ses_e2e")
	if err != nil || len(revs.Revisions) != 1 || !revs.Revisions[0].Live || len(revs.Revisions[0].OpenExecutions) != 1 ||
		revs.Revisions[0].OpenExecutions[0].ExecutionID != a.ExecutionID {
		t.Fatalf("revisions %+v %v", revs, err)
	}
	p.stop()

	// Restart on B after the approval was declined: no machine runs on A
	// any more, A is not live, but the open execution is pinned to A
	// (keep_original would start its next action there).
	p = serveRevision(t, dir, ws, revisionB(t, false))
	ap, err := p.s.Service.GetApproval(ctx, a.ActionID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.human.Decide(ctx, ap.ApprovalID, actionflow.DecisionDecline, ap.ArgsDigest); err != nil {
		t.Fatal(err)
	}
	waitFor(t, p.s, a.ActionID, terminal)
	_, err = p.s.SFN.DeleteStateMachineVersion(ctx, &sfn.DeleteStateMachineVersionInput{StateMachineVersionArn: aws.String(versionA)})
	if err == nil || !strings.Contains(err.Error(), "in use") && !strings.Contains(err.Error(), "needs") {
		t.Fatalf("deleting A's version while an execution is pinned to it: %v", err)
	}
	if _, err := p.s.SFN.DescribeStateMachine(ctx, &sfn.DescribeStateMachineInput{StateMachineArn: aws.String(versionA)}); err != nil {
		t.Fatalf("A's version is gone: %v", err)
	}
	// Once the execution ended nothing is pinned to A: it may go.
	v, err = p.human.Execution(ctx, a.ExecutionID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.human.Command(ctx, a.ExecutionID, httpapi.CommandBody{CommandID: "cmd_end", Type: "end", ExpectedVersion: &v.Execution.Version,
		Payload: json.RawMessage(`{"status":"completed"}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.s.SFN.DeleteStateMachineVersion(ctx, &sfn.DeleteStateMachineVersionInput{StateMachineVersionArn: aws.String(versionA)}); err != nil {
		t.Fatalf("deleting A's version once nothing is pinned to it: %v", err)
	}
}
