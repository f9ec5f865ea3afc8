package httpapi_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/auth"
	"github.com/openprogram/lifecycle/shared/lifecycle"
)

func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no chromium on this machine (.ci/run installs it)")
	return ""
}

// TestUIApprovesAsHuman drives the bundled page in a real browser: it
// lists the pending approval, the owner clicks Approve, and the decision is
// recorded as the human's, with origin "ui".
func TestUIApprovesAsHuman(t *testing.T) {
	path := chromium(t)
	s := newStack(t)
	agent := s.token(auth.RoleAgent, "ses_1")
	human := s.token(auth.RoleHuman, "ses_1")
	v := s.submit(agent, "ses_1", "k", submitBody("risky", `{"cmd":"deploy --prod"}`, "c1"))
	ap := s.pendingApproval(agent, "ses_1", v.ActionID)

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.Headless,
		chromedp.Flag("disable-dev-shm-usage", true))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 60*time.Second)
	defer cancel()

	card := "#approval-" + strings.ReplaceAll(string(ap.ApprovalID), ".", `\.`)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(s.url+"/ui/#token="+human),
		chromedp.WaitVisible(chromedp.CSS(card)),
	); err != nil {
		t.Fatal(err)
	}
	text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(card)))
	if err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(card+" button.approve")),
		chromedp.WaitVisible(chromedp.CSS("#no-approvals")),
	); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, "risky") || !strings.Contains(text, "deploy --prod") {
		t.Fatalf("the card shows %q", text)
	}
	done := s.waitAction(agent, v.ActionID)
	if done.States.Outcome != lifecycle.OutcomeSucceeded || done.Approval.Status != actionflow.ApprovalApproved {
		t.Fatalf("after the click: %+v", done.States)
	}
	by := done.Approval.DecidedBy
	if by == nil || by.Role != auth.RoleHuman || by.Origin != auth.OriginUI || by.Session != "ses_1" {
		t.Fatalf("decided by %+v", by)
	}
}
