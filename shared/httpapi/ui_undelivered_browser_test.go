package httpapi_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/openprogram/lifecycle/shared/auth"
	"github.com/openprogram/lifecycle/shared/embedded"
	"github.com/openprogram/lifecycle/shared/store"
)

// engineOutage is the embedded Step Functions engine's storage failing
// while down is set: the engine's own writes (its execution items and
// history, SFNEXEC#/SFNHIST#) are refused, everything else is written.
// A SendTaskSuccess then reaches an engine that cannot record it.
type engineOutage struct {
	store.Store
	down atomic.Bool
}

var errEngineDown = errors.New("the engine's storage is unavailable")

func (s *engineOutage) refuses(key string) bool {
	return s.down.Load() && (strings.HasPrefix(key, "SFNEXEC#") || strings.HasPrefix(key, "SFNHIST#"))
}

func (s *engineOutage) PutOnce(ctx context.Context, it store.Item) error {
	if s.refuses(it.PK) {
		return errEngineDown
	}
	return s.Store.PutOnce(ctx, it)
}

func (s *engineOutage) CompareAndSwap(ctx context.Context, it store.Item, expected, fence int64) error {
	if s.refuses(it.PK) {
		return errEngineDown
	}
	return s.Store.CompareAndSwap(ctx, it, expected, fence)
}

func (s *engineOutage) Append(ctx context.Context, stream string, body []byte) (int64, error) {
	if s.refuses(stream) {
		return 0, errEngineDown
	}
	return s.Store.Append(ctx, stream, body)
}

func (s *engineOutage) Transact(ctx context.Context, ws []store.Write) ([]int64, error) {
	for _, w := range ws {
		if w.PutOnce != nil && s.refuses(w.PutOnce.PK) || w.CAS != nil && s.refuses(w.CAS.Item.PK) || w.Append != nil && s.refuses(w.Append.Stream) {
			return nil, errEngineDown
		}
	}
	return s.Store.Transact(ctx, ws)
}

// TestUIQuestionAcceptedNotDelivered (issue 14): the server saves the
// owner's answer but cannot complete the agent's wait (its engine is
// down), so POST /v1/questions/{id}/answer answers 202. The card says
// "Accepted": saved, not received by the agent yet (recovery delivers it),
// never "Answered · applied", and no failure notice shows; the stored
// question is answered while the tool call has not continued.
func TestUIQuestionAcceptedNotDelivered(t *testing.T) {
	browser := newBrowser(t)
	outage := &engineOutage{}
	s := newUIStackEngine(t, func(c *embedded.Config) {
		outage.Store = c.Store
		c.Store = outage
	})
	const session = "ses_q202"
	human, agent := s.token(auth.RoleHuman, session), s.token(auth.RoleAgent, session)
	p := openPage(t, browser, "owner", s.url+"/ui/#token="+human)
	p.ready()
	p.watchCards()
	p.recordAnswers()
	v := s.submit(agent, session, "k1", submitBody("AskUserQuestion", oneQuestion, "c1"))
	c := qcard(v.ActionID)
	p.wait(c)
	p.click(c + ` input[value="staging"]`)

	outage.down.Store(true)
	p.click(c + ` button.submit`)
	// The SDK retries the engine a few times before the server gives up
	// delivering: allow it the UI client's whole timeout.
	p.waitJS("the accepted receipt", `(() => { const n = document.querySelector(`+jsString(c)+`); return !!n && n.dataset.state !== "sending"; })()`)
	outage.down.Store(false)

	if st := p.cardStates(v.ActionID); len(st) < 2 || st[0].State != "sending" || st[len(st)-1].State != "accepted" {
		p.fail("the card went through %+v; want sending, then accepted", st)
	}
	got := p.text(c + " .card-status")
	for _, w := range []string{"Accepted", "saved", "has not received it yet"} {
		if !strings.Contains(got, w) {
			p.fail("the receipt reads %q; want %q in it", got, w)
		}
	}
	if strings.Contains(got, "applied") {
		p.fail("the receipt reads %q: it claims the answer took effect", got)
	}
	if st := eval[[]int](p, `performance.getEntriesByType("resource").filter(e => e.name.endsWith("/answer")).map(e => e.responseStatus)`); len(st) != 1 || st[0] != http.StatusAccepted {
		p.fail("the answers were answered %v; want one 202", st)
	}
	q := s.question(p, human, v.ActionID)
	if q.Status != "answered" {
		t.Fatalf("stored question: %+v (the answer is durable)", q)
	}
	r := s.do(req{method: "GET", path: "/v1/actions/" + string(v.ActionID), token: agent})
	var a struct {
		States struct {
			Outcome string `json:"outcome"`
			Started bool   `json:"started"`
		} `json:"states"`
	}
	if r.status != http.StatusOK {
		t.Fatalf("get action: %d %s", r.status, r.body)
	}
	r.decode(t, &a)
	if a.States.Started || a.States.Outcome != "" {
		t.Fatalf("the tool call went on although the wait was never completed: %+v", a.States)
	}
	p.noNotice()
	p.shot("accepted-not-delivered")
}
