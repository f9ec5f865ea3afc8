package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/auth"
	"github.com/openprogram/lifecycle/shared/httpapi"
	"github.com/openprogram/lifecycle/shared/ids"
)

// TestCancelWinsTheRaceOverHTTP (issue 11, point 4): 32 commands posted at
// once at the same expected_version, 8 cancels among pauses, continues,
// steps and steers. No cancel is answered 409; the others are 202 or 409
// (stale_version, control_unavailable); the execution ends cancelled.
func TestCancelWinsTheRaceOverHTTP(t *testing.T) {
	s := newStack(t)
	human := s.token(auth.RoleHuman, "ses_1")
	v := s.submit(human, "ses_1", "k", submitBody("noop", `{}`, "c1"))
	s.waitAction(human, v.ActionID)
	execution := func() httpapi.ExecutionView {
		var ev httpapi.ExecutionView
		if r := s.do(req{method: "GET", path: "/v1/executions/" + string(v.ExecutionID), token: human}); r.status != 200 {
			t.Fatalf("execution: %d %s", r.status, r.body)
		} else {
			r.decode(t, &ev)
		}
		return ev
	}
	version := execution().Execution.Version
	others := []struct{ typ, payload string }{{"pause", ""}, {"continue", ""}, {"step", `{"steps":1}`}, {"steer", `{"instructions":"left"}`}}
	const ways = 32
	type answer struct {
		typ    string
		status int
		body   []byte
	}
	answers := make([]answer, ways)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < ways; i++ {
		body := httpapi.CommandBody{CommandID: ids.CommandID(fmt.Sprintf("cmd_%d", i)), Type: "cancel", ExpectedVersion: &version}
		if i%4 != 0 {
			o := others[i%len(others)]
			body.Type = o.typ
			if o.payload != "" {
				body.Payload = json.RawMessage(o.payload)
			}
		}
		wg.Add(1)
		go func(i int, body httpapi.CommandBody) {
			defer wg.Done()
			<-start
			r := s.do(req{method: "POST", path: "/v1/executions/" + string(v.ExecutionID) + "/commands", token: human, body: body})
			answers[i] = answer{body.Type, r.status, r.body}
		}(i, body)
	}
	close(start)
	wg.Wait()
	for i, a := range answers {
		switch {
		case a.typ == "cancel" && a.status == http.StatusAccepted:
		case a.typ != "cancel" && (a.status == http.StatusAccepted || a.status == http.StatusConflict):
		default:
			t.Fatalf("command %d (%s): %d %s", i, a.typ, a.status, a.body)
		}
	}
	deadline := time.Now().Add(15 * time.Second)
	for ev := execution(); ev.Execution.Status != actionflow.ExecCancelled; ev = execution() {
		if time.Now().After(deadline) {
			t.Fatalf("the execution ended %s, not cancelled", ev.Execution.Status)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
