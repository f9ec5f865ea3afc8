package httpapi

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/ids"
)

// EventBatch answers GET /v1/sessions/{session_id}/events?wait=SECONDS:
// the events after the position, and the position to resume from.
type EventBatch struct {
	SessionID ids.SessionID      `json:"session_id"`
	Events    []actionflow.Event `json:"events"`
	// Next is the position to pass as ?after= (or Last-Event-ID) next time.
	Next int64 `json:"next"`
}

// streamPage is how many log entries one read of a stream takes.
const streamPage = 500

// events serves the session's event log from a position: Last-Event-ID
// (header) or ?after=N, default 0 (the beginning). With ?wait= (or
// DisableStreaming) it answers one JSON batch, long-polling until at least
// one event exists; otherwise a server-sent event stream that follows the
// log until the client leaves.
func (h *api) events(w http.ResponseWriter, r *http.Request, c *call) error {
	after, err := position(r)
	if err != nil {
		return err
	}
	wait, hasWait, err := waitParam(r, h.cfg.MaxWait)
	if err != nil {
		return err
	}
	if hasWait || h.cfg.DisableStreaming {
		limit, err := intParam(r, "limit", 100, 1, 1000)
		if err != nil {
			return err
		}
		return h.eventBatch(w, r, c.t.Session, after, int(limit), wait)
	}
	return h.stream(w, r, c.t.Session, after)
}

func position(r *http.Request) (int64, error) {
	raw, field := r.Header.Get("Last-Event-ID"), "Last-Event-ID"
	if raw == "" {
		raw, field = r.URL.Query().Get("after"), "after"
	}
	if raw == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(raw), 10, 64)
	if err != nil || n < 0 {
		return 0, badRequest("invalid_field", field, field+" must be a non-negative event position")
	}
	return n, nil
}

func (h *api) eventBatch(w http.ResponseWriter, r *http.Request, session ids.SessionID, after int64, limit int, wait time.Duration) error {
	var evs []actionflow.Event
	err := h.waitFor(r.Context(), wait, func(ev actionflow.Event) bool { return ev.SessionID == session }, func() (bool, error) {
		var err error
		evs, err = h.svc.ReadEvents(r.Context(), session, after, limit)
		return len(evs) > 0, err
	})
	if err != nil {
		return err
	}
	out := EventBatch{SessionID: session, Events: evs, Next: after}
	if out.Events == nil {
		out.Events = []actionflow.Event{}
	}
	if n := len(evs); n > 0 {
		out.Next = evs[n-1].Seq
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// stream writes "id: <seq>", "event: <type>" and "data: <event JSON>" for
// each event, a comment every Heartbeat, and reads the durable log after
// every wake-up (the bus only says "look again"; the log is the truth, so
// a dropped notification delays an event by at most PollInterval).
func (h *api) stream(w http.ResponseWriter, r *http.Request, session ids.SessionID, after int64) error {
	ctx := r.Context()
	var wake <-chan actionflow.Event
	if h.cfg.Wake != nil {
		ch, cancel := h.cfg.Wake.Subscribe(func(ev actionflow.Event) bool { return ev.SessionID == session })
		defer cancel()
		wake = ch
	}
	// Read the first page before committing to a 200, so a store failure
	// is still an error response.
	first, err := h.svc.ReadEvents(ctx, session, after, streamPage)
	if err != nil {
		return err
	}
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{}) // a stream outlives the server's write timeout
	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriter(w)
	flush := func() error {
		if err := bw.Flush(); err != nil {
			return err
		}
		return rc.Flush()
	}
	fmt.Fprintf(bw, "retry: %d\n\n", h.cfg.PollInterval.Milliseconds()*2)
	send := func(evs []actionflow.Event) error {
		for _, ev := range evs {
			b, err := json.Marshal(ev)
			if err != nil {
				return err
			}
			fmt.Fprintf(bw, "id: %d\nevent: %s\ndata: %s\n\n", ev.Seq, ev.Type, b)
			after = ev.Seq
		}
		return flush()
	}
	evs := first
	poll := time.NewTicker(h.cfg.PollInterval)
	defer poll.Stop()
	beat := time.NewTicker(h.cfg.Heartbeat)
	defer beat.Stop()
	for {
		if err := send(evs); err != nil {
			return nil // the client left
		}
		if len(evs) == streamPage {
			evs, err = h.svc.ReadEvents(ctx, session, after, streamPage)
			if err != nil {
				h.log.WarnContext(ctx, "api: event stream read failed", "session_id", session, "error", err)
				return nil
			}
			continue
		}
		select {
		case <-ctx.Done():
			return nil
		case <-beat.C:
			fmt.Fprint(bw, ": keep-alive\n\n")
			evs = nil
			continue
		case <-wake:
		case <-poll.C:
		}
		evs, err = h.svc.ReadEvents(ctx, session, after, streamPage)
		if err != nil {
			h.log.WarnContext(ctx, "api: event stream read failed", "session_id", session, "error", err)
			return nil // the client resumes from its Last-Event-ID
		}
	}
}
