package embedded_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/embedded"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/revision"
	"github.com/openprogram/lifecycle/statemachines"
)

// withComment is the project's definition with another top-level Comment:
// another ASL digest, so another revision.
func withComment(t *testing.T, comment string) []byte {
	t.Helper()
	var def map[string]any
	if err := json.Unmarshal(statemachines.ActionLifecycle, &def); err != nil {
		t.Fatal(err)
	}
	def["Comment"] = comment
	b, err := json.MarshalIndent(def, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Each start deploys its revision as serve does: a changed ASL or handler
// contract publishes a version and moves `live`; an unchanged start
// publishes nothing; a rollback goes live on the version it had; every
// version stays describable.
func TestStartDeploysTheRevision(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	changed := withComment(t, "revision B")
	steps := []struct {
		name         string
		def          []byte
		contract     int
		resumes      []int
		wantVersion  string // suffix of the live version ARN
		wantVersions int    // versions published so far
		wantRevs     int    // revisions in the registry
		publishes    int    // PublishStateMachineVersion calls at this start
	}{
		{"first start publishes version 1", nil, 0, nil, ":1", 1, 1, 1},
		{"an unchanged restart publishes nothing", nil, 0, nil, ":1", 1, 1, 0},
		{"a changed ASL publishes version 2", changed, 0, nil, ":2", 2, 2, 1},
		{"unchanged again", changed, 0, nil, ":2", 2, 2, 0},
		// The engine returns the latest version for an unchanged definition.
		{"a new handler contract is a new revision on the same definition", changed, 2, nil, ":2", 2, 3, 1},
		{"a rollback goes live on its old version", nil, 0, nil, ":1", 2, 3, 0},
	}
	var first revision.Published
	for i, st := range steps {
		var logs bytes.Buffer
		s, err := embedded.Start(ctx, embedded.Config{StateDir: dir, NoHostWorker: true, Decider: &lazyDecider{},
			Definition: st.def, HandlerContract: st.contract, HandlerResumes: st.resumes, SweepInterval: -1,
			Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		check := func() {
			sm := s.SFNClient.StateMachineARN
			if s.LiveVersionARN != sm+st.wantVersion || s.Revision.VersionARN != s.LiveVersionARN || s.LiveAliasARN != sm+":live" {
				t.Fatalf("%s: live version %s alias %s, want %s%s", st.name, s.LiveVersionARN, s.LiveAliasARN, sm, st.wantVersion)
			}
			wantContract := max(st.contract, 1)
			if s.Revision.Revision.Contract != wantContract {
				t.Fatalf("%s: live contract %d, want %d", st.name, s.Revision.Revision.Contract, wantContract)
			}
			alias, err := s.SFN.DescribeStateMachineAlias(ctx, &sfn.DescribeStateMachineAliasInput{StateMachineAliasArn: aws.String(s.LiveAliasARN)})
			if err != nil || len(alias.RoutingConfiguration) != 1 || aws.ToString(alias.RoutingConfiguration[0].StateMachineVersionArn) != s.LiveVersionARN {
				t.Fatalf("%s: alias %+v %v", st.name, alias, err)
			}
			versions, err := s.SFN.ListStateMachineVersions(ctx, &sfn.ListStateMachineVersionsInput{StateMachineArn: aws.String(sm)})
			if err != nil || len(versions.StateMachineVersions) != st.wantVersions {
				t.Fatalf("%s: %d versions (%v), want %d", st.name, len(versions.StateMachineVersions), err, st.wantVersions)
			}
			revs, err := s.Revisions.List(ctx)
			if err != nil || len(revs) != st.wantRevs {
				t.Fatalf("%s: %d revisions (%v), want %d", st.name, len(revs), err, st.wantRevs)
			}
			live, err := s.Revisions.Live(ctx)
			if err != nil || live.Revision.ID != s.Revision.Revision.ID {
				t.Fatalf("%s: registry live %+v %v, want %s", st.name, live, err, s.Revision.Revision.ID)
			}
			if i == 0 {
				first = s.Revision
			}
			// Version 1 keeps the first definition, whatever runs now.
			d, err := s.SFN.DescribeStateMachine(ctx, &sfn.DescribeStateMachineInput{StateMachineArn: aws.String(first.VersionARN)})
			if err != nil {
				t.Fatalf("%s: describe version 1: %v", st.name, err)
			}
			var v1 map[string]any
			if err := json.Unmarshal([]byte(aws.ToString(d.Definition)), &v1); err != nil || v1["Comment"] == "revision B" {
				t.Fatalf("%s: version 1's definition changed: %v %v", st.name, err, v1["Comment"])
			}
		}
		check()
		// The stack logs each PublishStateMachineVersion it calls.
		if n := strings.Count(logs.String(), "published a new revision"); n != st.publishes {
			t.Fatalf("%s: %d publications, want %d:\n%s", st.name, n, st.publishes, logs.String())
		}
		if err := s.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// An approval opened under one definition and decided after a restart with
// another (that renamed the very state the execution waits in) completes
// on the definition it started with: the engine resumes each execution on
// its own definition, never on the new file.
func TestPendingApprovalKeepsItsDefinitionAcrossADeployment(t *testing.T) {
	dir, ws := t.TempDir(), t.TempDir()
	ex := &countingExecutor{}
	s := start(t, dir, ws, ex)
	a := submit(t, s, "Write", `{"file_path":"after-deploy.txt","content":"ok"}`)
	ap := pending(t, s, a.ActionID)
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	renamed := []byte(strings.ReplaceAll(string(statemachines.ActionLifecycle), `"AwaitApproval"`, `"AwaitHumanApproval"`))
	if string(renamed) == string(statemachines.ActionLifecycle) {
		t.Fatal("the definition has no AwaitApproval state to rename")
	}
	s2 := start(t, dir, ws, ex, func(c *embedded.Config) { c.Definition = renamed })
	defer s2.Close(context.Background())
	if !strings.HasSuffix(s2.LiveVersionARN, ":2") {
		t.Fatalf("the new definition is live on %s, want version 2", s2.LiveVersionARN)
	}
	human := actionflow.Principal{Subject: "alice", Role: "human", Session: "ses_e2e"}
	if _, err := s2.Service.DecideApproval(context.Background(), ap.ApprovalID, actionflow.DecisionApprove, ap.ArgsDigest, human); err != nil {
		t.Fatal(err)
	}
	got := waitFor(t, s2, a.ActionID, terminal)
	if got.States.Outcome != lifecycle.OutcomeSucceeded {
		t.Fatalf("after the deployment: %+v", got.States)
	}
	def, err := s2.SFN.DescribeStateMachineForExecution(context.Background(), &sfn.DescribeStateMachineForExecutionInput{
		ExecutionArn: aws.String(s2.SFNClient.ExecutionARN(a.ActionID))})
	if err != nil || !strings.Contains(aws.ToString(def.Definition), `"AwaitApproval"`) {
		t.Fatalf("the execution's definition: %v", err)
	}
}

// An execution started on an earlier revision's definition, whose record
// step was followed by a Project state (testdata: the definition as it was
// before the record step took the projection over), runs to its end after
// a deployment of the current one: the engine still serves the project
// function, which on the action the record step projected only publishes
// the stored event again. One projection, one event.
func TestAnExecutionOfTheDefinitionWithProjectEndsThere(t *testing.T) {
	earlier, err := os.ReadFile("testdata/action-lifecycle-with-project.asl.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(earlier, []byte(`"Project"`)) || !bytes.Contains(earlier, []byte("${ProjectFunctionArn}")) {
		t.Fatal("the earlier definition has no Project state")
	}
	dir, ws := t.TempDir(), t.TempDir()
	ex := &countingExecutor{}
	s := start(t, dir, ws, ex, func(c *embedded.Config) { c.Definition = earlier })
	a := submit(t, s, "Write", `{"file_path":"earlier.txt","content":"ok"}`)
	ap := pending(t, s, a.ActionID)
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	s2 := start(t, dir, ws, ex) // the current definition goes live
	defer s2.Close(context.Background())
	human := actionflow.Principal{Subject: "alice", Role: "human", Session: "ses_e2e"}
	if _, err := s2.Service.DecideApproval(context.Background(), ap.ApprovalID, actionflow.DecisionApprove, ap.ArgsDigest, human); err != nil {
		t.Fatal(err)
	}
	got := waitFor(t, s2, a.ActionID, terminal)
	if got.States.Outcome != lifecycle.OutcomeSucceeded {
		t.Fatalf("states %+v", got.States)
	}
	arn := aws.String(s2.SFNClient.ExecutionARN(a.ActionID))
	var status string
	deadline := time.Now().Add(20 * time.Second)
	for {
		d, err := s2.SFN.DescribeExecution(context.Background(), &sfn.DescribeExecutionInput{ExecutionArn: arn})
		if err != nil {
			t.Fatal(err)
		}
		if status = string(d.Status); status != "RUNNING" || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	hist, err := s2.SFN.GetExecutionHistory(context.Background(), &sfn.GetExecutionHistoryInput{ExecutionArn: arn, MaxResults: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var entered []string
	for _, e := range hist.Events {
		if e.StateEnteredEventDetails != nil {
			entered = append(entered, aws.ToString(e.StateEnteredEventDetails.Name))
		}
	}
	if status != "SUCCEEDED" || len(entered) == 0 || entered[len(entered)-1] != "Project" {
		t.Fatalf("execution %s through %v, want SUCCEEDED ending in Project", status, entered)
	}
	evs, err := s2.Service.ReadEvents(context.Background(), a.SessionID, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, ev := range evs {
		if ev.Type == "action.projected" && ev.ActionID == a.ActionID {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("action.projected stored %d times, want 1", n)
	}
}
