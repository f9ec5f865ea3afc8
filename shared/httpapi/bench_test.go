package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/openprogram/lifecycle/shared/auth"
)

// BenchmarkSubmit measures one authenticated submission over HTTP (prepare
// once, StartExecution on the embedded engine over loopback); the engine
// runs each submitted action's whole allow path in the background, so this
// is submission cost under that load on the same cores.
func BenchmarkSubmit(b *testing.B) {
	s := newStack(b)
	tok := s.token(auth.RoleAgent, "ses_b")
	body, _ := json.Marshal(submitBody("noop", `{"x":1}`, "c"))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		req, _ := http.NewRequest("POST", s.url+"/v1/sessions/ses_b/actions", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Idempotency-Key", fmt.Sprintf("k%d", i))
		res, err := s.client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusAccepted {
			b.Fatalf("status %d", res.StatusCode)
		}
	}
}

// BenchmarkGetAction measures an authorized read of an action with its
// approval and receipt (four store reads).
func BenchmarkGetAction(b *testing.B) {
	s := newStack(b)
	tok := s.token(auth.RoleAgent, "ses_b")
	v := s.submit(tok, "ses_b", "k", submitBody("noop", `{}`, "c"))
	s.waitAction(tok, v.ActionID)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		req, _ := http.NewRequest("GET", s.url+"/v1/actions/"+string(v.ActionID), nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		res, err := s.client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			b.Fatalf("status %d", res.StatusCode)
		}
	}
}
