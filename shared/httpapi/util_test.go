package httpapi_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/ids"
)

// onlyAudit fails unless the writes are exactly one appended audit.denied
// event in the session's log.
func onlyAudit(t *testing.T, ws []write, session string) actionflow.Event {
	t.Helper()
	if len(ws) != 1 || ws[0].Op != "Append" || ws[0].Stream != actionflow.SessionStream(idsSession(session)) {
		var ops []string
		for _, w := range ws {
			ops = append(ops, w.Op+" "+w.Key+w.Stream)
		}
		t.Fatalf("want exactly one audit event in %s, got writes: %s", session, strings.Join(ops, "; "))
	}
	var ev actionflow.Event
	if err := json.Unmarshal(ws[0].Body, &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Type != "audit.denied" {
		t.Fatalf("appended %s, want audit.denied", ev.Type)
	}
	return ev
}

func idsSession(s string) ids.SessionID { return ids.SessionID(s) }

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
