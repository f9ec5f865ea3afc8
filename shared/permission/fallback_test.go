package permission_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/permission"
	"github.com/openprogram/lifecycle/shared/permission/riskreview"
	"github.com/openprogram/lifecycle/shared/store"
	"github.com/openprogram/lifecycle/shared/store/sqlitestore"
)

// autoEngine is an engine in auto mode with the default reviewer and the
// real sqlite counters.
func autoEngine(t testing.TB, st *sqlitestore.Store, c permission.Classifier) *permission.Engine {
	t.Helper()
	if c == nil {
		c = riskreview.New()
	}
	e, err := permission.NewEngine(permission.Config{Classifier: c, Counters: st, ReviewTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

const (
	blocked = "rm -rf /srv/data" // riskreview blocks it
	allowed = "go test ./..."    // riskreview proves it safe
)

type step struct {
	cmd  string
	want string // "deny", "allow", "fallback-consecutive", "fallback-total"
}

func kind(d permission.Decision) string {
	switch {
	case d.Fallback && d.Reason.Code == permission.CodeFallbackConsecutive:
		return "fallback-consecutive"
	case d.Fallback && d.Reason.Code == permission.CodeFallbackTotal:
		return "fallback-total"
	}
	return string(d.Permission)
}

func TestRefusalFallback(t *testing.T) {
	b, a := step{blocked, "deny"}, step{allowed, "allow"}
	twentieth := make([]step, 0, 30)
	for i := 0; i < 9; i++ {
		twentieth = append(twentieth, b, b, a) // never three in a row
	}
	twentieth = append(twentieth, b, step{blocked, "fallback-total"}) // the 20th block
	cases := []struct {
		name         string
		steps        []step
		consec, tot  int64
		interactive  bool
		approveFinal bool
	}{
		{"three consecutive blocks fall back on the third", []step{b, b, {blocked, "fallback-consecutive"}}, 3, 3, true, false},
		{"two blocks, an allowed action, two blocks do not", []step{b, b, a, b, b}, 2, 4, true, false},
		{"three blocks, then an allowed action, then two blocks do not fall back again",
			[]step{b, b, {blocked, "fallback-consecutive"}, a, b, b}, 2, 5, true, false},
		{"twenty total fall back", twentieth, 2, 20, true, false},
		{"noninteractive keeps the denial at the threshold", []step{b, b, b, b}, 4, 4, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := openStore(t)
			e := autoEngine(t, st, nil)
			p := policy(t, "v1", permission.ModeAuto)
			for i, s := range tc.steps {
				d, err := e.Decide(context.Background(), permission.Request{Trusted: trusted(tc.interactive), Call: bashCall(s.cmd), Policy: p})
				if err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				if got := kind(d); got != s.want {
					t.Fatalf("step %d (%s): %s, want %s; reason %+v", i, s.cmd, got, s.want, d.Reason)
				}
				if !tc.interactive && d.Permission == ask {
					t.Fatalf("step %d: noninteractive ask", i)
				}
				if s.cmd == blocked && !d.RiskRefusal() {
					t.Errorf("step %d: a classifier refusal is not marked as a risk refusal", i)
				}
			}
			c, err := e.Counter(context.Background(), "ses_test", "v1")
			if err != nil {
				t.Fatal(err)
			}
			if c.Consecutive != tc.consec || c.Total != tc.tot {
				t.Errorf("counter %+v, want consecutive %d total %d", c, tc.consec, tc.tot)
			}
		})
	}
}

// Completing the approval of a fallback updates the counters exactly once.
func TestFallbackApprovalCompletion(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name        string
		blocks      int // consecutive blocks before the fallback (allows between to avoid the consecutive threshold when total)
		total       bool
		status      permission.ApprovalStatus
		wantC, want int64
	}{
		{"approved consecutive fallback resets the consecutive count", 3, false, permission.ApprovalApproved, 0, 3},
		{"declined consecutive fallback changes nothing", 3, false, permission.ApprovalDeclined, 3, 3},
		{"approved total fallback resets both", 20, true, permission.ApprovalApproved, 0, 0},
		{"declined total fallback completes the total approval", 20, true, permission.ApprovalDeclined, 0, 0},
		{"expired total fallback changes nothing", 20, true, permission.ApprovalExpired, 2, 20},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := openStore(t)
			e := autoEngine(t, st, nil)
			p := policy(t, "v1", permission.ModeAuto)
			var last permission.Decision
			var lastCall permission.Call
			for i := 1; i <= tc.blocks; i++ {
				if tc.total && i%2 == 1 && i > 1 {
					if _, err := e.Decide(ctx, permission.Request{Trusted: trusted(true), Call: bashCall(allowed), Policy: p}); err != nil {
						t.Fatal(err)
					}
				}
				lastCall = bashCall(blocked)
				d, err := e.Decide(ctx, permission.Request{Trusted: trusted(true), Call: lastCall, Policy: p})
				if err != nil {
					t.Fatal(err)
				}
				last = d
			}
			if !last.Fallback {
				t.Fatalf("no fallback after %d blocks: %+v", tc.blocks, last.Reason)
			}
			ev := permission.ApprovalEvidence{ApprovalID: ids.NewApprovalID(), ActionID: last.ActionID, ArgsDigest: last.ArgsDigest,
				PolicyVersion: last.PolicyVersion, Status: tc.status, DecidedBy: "user:alice"}
			for range 2 { // a resumed handler completes the same approval again
				if err := e.ApprovalCompleted(ctx, last, ev); err != nil {
					t.Fatal(err)
				}
			}
			c, _ := e.Counter(ctx, "ses_test", "v1")
			if c.Consecutive != tc.wantC || c.Total != tc.want {
				t.Errorf("counter %+v, want consecutive %d total %d", c, tc.wantC, tc.want)
			}
			// Revalidating the approved fallback dispatches it.
			if tc.status == permission.ApprovalApproved {
				r, err := e.Revalidate(ctx, last, ev, permission.Request{Trusted: trusted(true), Call: lastCall, Policy: p})
				if err != nil || r.Permission != allow || r.Reason.Source != permission.SourceApproval {
					t.Fatalf("revalidate approved fallback: %+v, %v", r, err)
				}
				if c2, _ := e.Counter(ctx, "ses_test", "v1"); c2 != c {
					t.Errorf("revalidation counted again: %+v then %+v", c, c2)
				}
			}
		})
	}
}

// Parallel refusals of distinct actions are each counted once; a resumed
// duplicate of one action is not counted again.
func TestRefusalCountsParallelAndResumed(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	e := autoEngine(t, st, nil)
	p := policy(t, "v1", permission.ModeAuto)
	const n = 12
	calls := make([]permission.Call, n)
	for i := range calls {
		calls[i] = bashCall(fmt.Sprintf("rm -rf /srv/data%d", i))
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	for round := 0; round < 2; round++ { // round 2: every action resumed and decided again
		for _, c := range calls {
			wg.Add(1)
			go func(c permission.Call) {
				defer wg.Done()
				d, err := e.Decide(ctx, permission.Request{Trusted: trusted(false), Call: c, Policy: p})
				if err == nil && d.Permission != deny {
					err = fmt.Errorf("%s: %s", c.ActionID, d.Permission)
				}
				if err != nil {
					errs <- err
				}
			}(c)
		}
		wg.Wait()
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	c, err := e.Counter(ctx, "ses_test", "v1")
	if err != nil {
		t.Fatal(err)
	}
	if c.Total != n || c.Consecutive != n {
		t.Errorf("counter %+v, want %d blocks counted once each", c, n)
	}
	// A new policy version is a new accounting epoch.
	c2, _ := e.Counter(ctx, "ses_test", "v2")
	if c2.Total != 0 {
		t.Errorf("epoch v2 starts at %+v", c2)
	}
}

// A classifier that gives no verdict never executes the action and never
// changes the counters.
func TestClassifierNoVerdict(t *testing.T) {
	ctx := context.Background()
	slow := permission.ClassifierFunc(func(ctx context.Context, in permission.ReviewInput) (permission.Verdict, error) {
		<-ctx.Done()
		return permission.Verdict{}, ctx.Err()
	})
	failing := permission.ClassifierFunc(func(ctx context.Context, in permission.ReviewInput) (permission.Verdict, error) {
		return permission.Verdict{}, errors.New("ThrottlingException: rate exceeded")
	})
	garbled := permission.ClassifierFunc(func(ctx context.Context, in permission.ReviewInput) (permission.Verdict, error) {
		return permission.Verdict{Kind: "probably fine"}, nil
	})
	cases := []struct {
		name        string
		c           permission.Classifier
		interactive bool
		want        string
	}{
		{"timeout, interactive: ask", slow, true, "timeout"},
		{"timeout, noninteractive: deny", slow, false, "timeout"},
		{"provider failure", failing, true, "provider_failure"},
		{"unparseable verdict", garbled, false, "unparseable_answer"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := openStore(t)
			e, err := permission.NewEngine(permission.Config{Classifier: tc.c, Counters: st, ReviewTimeout: 20 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			p := policy(t, "v1", permission.ModeAuto)
			// Two earlier blocks: a no-verdict must not become the third.
			for i := 0; i < 2; i++ {
				if _, _, err := st.ApplyCounter(ctx, permission.CounterKey("ses_test", "v1"), fmt.Sprint("earlier", i), store.CounterBlock); err != nil {
					t.Fatal(err)
				}
			}
			d, err := e.Decide(ctx, permission.Request{Trusted: trusted(tc.interactive), Call: bashCall("make"), Policy: p})
			if err != nil {
				t.Fatal(err)
			}
			want := deny
			if tc.interactive {
				want = ask
			}
			if d.Permission != want || d.Fallback || d.Reason.Source != permission.SourceClassifier || d.Reason.Code != permission.CodeNoVerdict {
				t.Fatalf("decision %s fallback=%v reason %+v", d.Permission, d.Fallback, d.Reason)
			}
			if !strings.Contains(d.Reason.Detail, tc.want) {
				t.Errorf("detail %q does not name %s", d.Reason.Detail, tc.want)
			}
			if _, err := d.Authorization(); err == nil {
				t.Error("a no-verdict decision authorizes execution")
			}
			c, _ := e.Counter(ctx, "ses_test", "v1")
			if c.Consecutive != 2 || c.Total != 2 {
				t.Errorf("counters changed by a no-verdict: %+v", c)
			}
		})
	}
	// The caller's own cancellation is an error, not a decision.
	st := openStore(t)
	e := autoEngine(t, st, slow)
	cctx, cancel := context.WithCancel(ctx)
	go func() { time.Sleep(10 * time.Millisecond); cancel() }()
	d, err := e.Decide(cctx, permission.Request{Trusted: trusted(true), Call: bashCall("make"), Policy: policy(t, "v1", permission.ModeAuto)})
	var nv *permission.NoVerdictError
	if !errors.As(err, &nv) || nv.Kind != permission.NoVerdictCancelled || d.Permission != "" {
		t.Fatalf("cancelled Decide = %+v, %v", d, err)
	}
}

// The classifier sees the complete operation with its trusted context and
// is never asked about input over the bound; hard rules and deny rules are
// decided before it, and the fallback never overrides them.
func TestClassifierInputAndPrecedence(t *testing.T) {
	ctx := context.Background()
	var seen []permission.ReviewInput
	var calls atomic.Int32
	rec := permission.ClassifierFunc(func(ctx context.Context, in permission.ReviewInput) (permission.Verdict, error) {
		calls.Add(1)
		seen = append(seen, in)
		return riskreview.New().Review(ctx, in)
	})
	st := openStore(t)
	e := autoEngine(t, st, rec)
	p := policy(t, "v1", permission.ModeAuto, "deny: Bash(git push *)", "restrictions: Bash(npm publish *)")
	tr := trusted(true)
	tr.Restrictions = []string{"never touch the production database"}

	long := strings.Repeat("echo benign; ", 50*1024/13) + "rm -rf /srv/data/"
	d, err := e.Decide(ctx, permission.Request{Trusted: tr, Call: bashCall(long), Policy: p})
	if err != nil {
		t.Fatal(err)
	}
	if d.Permission != deny || d.Reason.Source != permission.SourceClassifier || d.Reason.Verdict == nil || d.Reason.Verdict.Category != riskreview.Destructive {
		t.Fatalf("50 KB with a dangerous tail: %+v", d.Reason)
	}
	in := seen[0]
	if !strings.Contains(string(in.Args), "rm -rf /srv/data/") || in.Trusted.WorkingDir != root || in.Trusted.Restrictions[0] != tr.Restrictions[0] || in.ArgsDigest != d.ArgsDigest {
		t.Errorf("review input is not the complete operation with its trusted context")
	}

	// Push the counter past both thresholds; explicit denials still deny.
	for i := 0; i < 25; i++ {
		if _, err := e.Decide(ctx, permission.Request{Trusted: tr, Call: bashCall(blocked), Policy: p}); err != nil {
			t.Fatal(err)
		}
	}
	before := calls.Load()
	for _, cmd := range []string{"git push origin main", "npm publish"} {
		d, err := e.Decide(ctx, permission.Request{Trusted: tr, Call: bashCall(cmd), Policy: p})
		if err != nil {
			t.Fatal(err)
		}
		if d.Permission != deny || d.Fallback || d.Reason.Source == permission.SourceCounter {
			t.Errorf("%s: fallback overrode an explicit denial: %+v", cmd, d)
		}
	}
	huge := strings.Repeat("echo x; ", permission.MaxReviewBytes/8+16)
	d, err = e.Decide(ctx, permission.Request{Trusted: tr, Call: bashCall(huge), Policy: p})
	if err != nil || d.Permission != ask || d.Reason.Code != permission.CodeOversized {
		t.Errorf("oversized: %+v, %v", d.Reason, err)
	}
	if calls.Load() != before {
		t.Errorf("the classifier was asked about denied or oversized input")
	}
}
