package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/apiclient"
	"github.com/openprogram/lifecycle/shared/auth"
	"github.com/openprogram/lifecycle/shared/httpapi"
)

// sseEvent is one parsed server-sent event (or a comment).
type sseEvent struct {
	id, event, data, comment string
}

// openStream opens the session's event stream and returns a reader of
// its events.
func openStream(t *testing.T, s *stack, token, lastID string) (<-chan sseEvent, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	hr, _ := http.NewRequestWithContext(ctx, "GET", s.url+"/v1/sessions/ses_1/events", nil)
	hr.Header.Set("Authorization", "Bearer "+token)
	if lastID != "" {
		hr.Header.Set("Last-Event-ID", lastID)
	}
	res, err := s.client.Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("stream: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	s.spec.check(t, "GET", "/v1/sessions/ses_1/events", resp{status: 200, header: res.Header})
	out := make(chan sseEvent, 256)
	go func() {
		defer close(out)
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		var cur sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if cur != (sseEvent{}) {
					out <- cur
				}
				cur = sseEvent{}
			case strings.HasPrefix(line, ":"):
				out <- sseEvent{comment: strings.TrimSpace(line[1:])}
			case strings.HasPrefix(line, "id: "):
				cur.id = line[4:]
			case strings.HasPrefix(line, "event: "):
				cur.event = line[7:]
			case strings.HasPrefix(line, "data: "):
				cur.data = line[6:]
			}
		}
	}()
	return out, cancel
}

// until reads events until one of type typ for action id arrives.
func until(t *testing.T, evs <-chan sseEvent, typ, action string) (seen []sseEvent) {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case ev, ok := <-evs:
			if !ok {
				t.Fatalf("stream ended before %s", typ)
			}
			seen = append(seen, ev)
			if ev.event == typ && strings.Contains(ev.data, action) {
				return seen
			}
		case <-timeout:
			t.Fatalf("no %s event for %s; saw %+v", typ, action, seen)
		}
	}
}

func TestEventStreamResumesFromLastEventID(t *testing.T) {
	s := newStack(t)
	agent := s.token(auth.RoleAgent, "ses_1")
	evs, stop := openStream(t, s, agent, "")
	v1 := s.submit(agent, "ses_1", "k1", submitBody("noop", `{}`, "c1"))
	seen := until(t, evs, "action.projected", string(v1.ActionID))
	stop()
	var types []string
	var last int64
	for _, ev := range seen {
		if ev.event == "" {
			continue
		}
		types = append(types, ev.event)
		seq, err := strconv.ParseInt(ev.id, 10, 64)
		if err != nil || seq != last+1 {
			t.Fatalf("event ids not consecutive from 1: %q after %d", ev.id, last)
		}
		last = seq
		var e actionflow.Event
		if err := json.Unmarshal([]byte(ev.data), &e); err != nil || e.Seq != seq || e.Type != ev.event {
			t.Fatalf("data %s does not match id %s / event %s", ev.data, ev.id, ev.event)
		}
		s.spec.validate(t, "SSE data", "/components/schemas/Event", []byte(ev.data))
	}
	if strings.Join(types, ",") != "action.submitted,action.decided,action.projected" {
		t.Fatalf("event types %v", types)
	}
	// Reconnect from the last id: only what came after.
	v2 := s.submit(agent, "ses_1", "k2", submitBody("noop", `{}`, "c2"))
	evs, stop = openStream(t, s, agent, strconv.FormatInt(last, 10))
	defer stop()
	seen = until(t, evs, "action.projected", string(v2.ActionID))
	for _, ev := range seen {
		if ev.event == "" {
			continue
		}
		if seq, _ := strconv.ParseInt(ev.id, 10, 64); seq <= last {
			t.Fatalf("resumed stream repeated event %d (resumed after %d)", seq, last)
		}
		if !strings.Contains(ev.data, string(v2.ActionID)) {
			t.Fatalf("resumed stream carried another action's event: %s", ev.data)
		}
	}
	// With nothing happening, the stream sends keep-alive comments.
	for {
		select {
		case ev := <-evs:
			if ev.comment == "keep-alive" {
				return
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no keep-alive comment")
		}
	}
}

func TestEventBatchLongPoll(t *testing.T) {
	s := newStack(t)
	agent := s.token(auth.RoleAgent, "ses_1")
	v := s.submit(agent, "ses_1", "k1", submitBody("noop", `{}`, "c1"))
	s.waitAction(agent, v.ActionID)
	r := s.do(req{method: "GET", path: "/v1/sessions/ses_1/events?wait=1&after=0&limit=2", token: agent})
	var b httpapi.EventBatch
	r.decode(t, &b)
	if r.status != 200 || len(b.Events) != 2 || b.Next != 2 || b.Events[0].Seq != 1 {
		t.Fatalf("batch: %d %s", r.status, r.body)
	}
	r = s.do(req{method: "GET", path: "/v1/sessions/ses_1/events?wait=1&after=2", token: agent})
	r.decode(t, &b)
	if len(b.Events) != 1 || b.Events[0].Type != "action.projected" || b.Next != 3 {
		t.Fatalf("rest: %s", r.body)
	}
	// A long poll at the head returns once an event is appended.
	got := make(chan httpapi.EventBatch, 1)
	go func() {
		c := &apiclient.Client{BaseURL: s.url, Token: agent, HTTP: s.client}
		b, _ := c.Events(context.Background(), "ses_1", 3, 5*time.Second)
		got <- b
	}()
	time.Sleep(100 * time.Millisecond)
	s.submit(agent, "ses_1", "k2", submitBody("noop", `{}`, "c2"))
	if b := <-got; len(b.Events) == 0 || b.Events[0].Seq != 4 {
		t.Fatalf("long poll: %+v", b)
	}
	// At the head with a short wait: an empty batch that keeps its position.
	r = s.do(req{method: "GET", path: "/v1/sessions/ses_1/events?wait=0&after=1000", token: agent})
	r.decode(t, &b)
	if len(b.Events) != 0 || b.Next != 1000 {
		t.Fatalf("empty batch: %s", r.body)
	}
}

func TestDisableStreamingAnswersBatches(t *testing.T) {
	s := newStack(t, func(c *httpapi.Config) { c.DisableStreaming = true })
	agent := s.token(auth.RoleAgent, "ses_1")
	s.submit(agent, "ses_1", "k1", submitBody("noop", `{}`, "c1"))
	r := s.do(req{method: "GET", path: "/v1/sessions/ses_1/events", token: agent})
	var b httpapi.EventBatch
	r.decode(t, &b)
	if r.status != 200 || len(b.Events) == 0 {
		t.Fatalf("batch without wait: %d %s", r.status, r.body)
	}
}

func TestClientFollow(t *testing.T) {
	s := newStack(t)
	agent := s.token(auth.RoleAgent, "ses_1")
	c := &apiclient.Client{BaseURL: s.url, Token: agent, HTTP: s.client}
	v := s.submit(agent, "ses_1", "k1", submitBody("noop", `{}`, "c1"))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	done := errors.New("done")
	var types []string
	err := c.Follow(ctx, "ses_1", 0, func(ev actionflow.Event) error {
		types = append(types, ev.Type)
		if ev.Type == "action.projected" && ev.ActionID == v.ActionID {
			return done
		}
		return nil
	})
	if !errors.Is(err, done) || len(types) != 3 {
		t.Fatalf("follow: %v %v", err, types)
	}
	// A token of another session is refused, not retried forever.
	other := &apiclient.Client{BaseURL: s.url, Token: s.token(auth.RoleAgent, "ses_2"), HTTP: s.client}
	var fe *actionflow.ForbiddenError
	if err := other.Follow(ctx, "ses_1", 0, func(actionflow.Event) error { return nil }); !errors.As(err, &fe) {
		t.Fatalf("follow of another session: %v", err)
	}
}
