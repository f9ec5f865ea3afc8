package httpapi_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/auth"
	"github.com/openprogram/lifecycle/shared/embedded"
	"github.com/openprogram/lifecycle/shared/revision"
	"github.com/openprogram/lifecycle/statemachines"
)

// TestUIRevisionBlock: an execution under use_latest whose next action
// meets an incompatible live revision is paused; the Activity details
// show its revision and policy, the paused-incompatible state and the
// specific differences, in chromium against the real embedded stack.
func TestUIRevisionBlock(t *testing.T) {
	browser := newBrowser(t)
	ctx := context.Background()
	s := newUIStackEngine(t, func(c *embedded.Config) { c.RevisionPolicy = actionflow.UseLatest })
	const session = "ses_rev_ui"
	human, agent := s.token(auth.RoleHuman, session), s.token(auth.RoleAgent, session)
	p := openPage(t, browser, "owner", s.url+"/ui/#token="+human)
	p.ready()
	v := s.submit(agent, session, "k1", submitBody("noop", `{}`, "c1"))
	s.waitAction(agent, v.ActionID)
	p.press(branchOf(v.ExecutionID))
	p.wait(execRow(v.ExecutionID) + ` .revision[data-policy="use_latest"]`)
	if eval[int](p, `document.querySelectorAll(`+jsString(execRow(v.ExecutionID)+" .revision-block")+`).length`) != 0 {
		p.fail("a revision block shows before any deployment")
	}

	// A deployment while the execution is open: revision B declares a
	// handler contract that cannot resume A's checkpoints.
	reg := revision.NewRegistry(s.st)
	live, err := reg.Live(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, err := revision.Of(statemachines.ActionLifecycle, 2, []int{2})
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Put(ctx, revision.Published{Revision: b, VersionARN: live.VersionARN, PublishedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := reg.SetLive(ctx, b.ID); err != nil {
		t.Fatal(err)
	}
	body := submitBody("noop", `{}`, "c2")
	body["execution_id"] = v.ExecutionID
	s.submit(agent, session, "k2", body)

	block := execRow(v.ExecutionID) + ` .revision-block[data-reason="revision_incompatible"]`
	p.wait(block)
	if got := p.text(block + " .revision-differences"); !strings.Contains(got, "handler contract changed from 1") {
		p.fail("the differences read %q", got)
	}
	if got := p.text(block); !strings.Contains(got, "1 tool call is held") {
		p.fail("the block reads %q", got)
	}
	e := s.execution(human, v.ExecutionID)
	if e.Execution.Status != actionflow.ExecPaused || e.Execution.RevisionBlock == nil || !strings.HasSuffix(p.text(execRow(v.ExecutionID)+" .revision code"), string(e.Execution.ActiveRevision)[len(e.Execution.ActiveRevision)-6:]) {
		t.Fatalf("execution %s block %+v; the page shows revision %q", e.Execution.Status, e.Execution.RevisionBlock, p.text(execRow(v.ExecutionID)+" .revision code"))
	}
	p.noNotice()
	p.shot("revision-block")
}
