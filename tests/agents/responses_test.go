package agents

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
)

// scriptedModel plays the model on 127.0.0.1: the n-th model request of the
// agent gets the n-th scripted turn, streamed as the agent's API streams
// it. Every request body is kept for the assertions.
type scriptedModel struct {
	URL string // http://127.0.0.1:port

	// isTurn tells the requests that are turns of the scripted
	// conversation; others (a title, a token count) are answered
	// without consuming a turn (n = -1).
	isTurn func(path string, body []byte) bool

	mu       sync.Mutex
	requests []recordedRequest
	turns    []modelTurn
}

type recordedRequest struct {
	Path   string
	Header http.Header
	Body   []byte
	turn   bool
}

// modelTurn is one answer of the model: a call of one tool or a final text.
type modelTurn struct {
	// Tool call (Responses API: namespace + name; Messages API: name).
	Namespace, Tool string
	Arguments       map[string]any
	// Text is the final answer when Tool is empty.
	Text string
}

// startModel serves the turns with answer (the wire format of one agent's
// model API) on a loopback port for the test's lifetime.
func startModel(t *testing.T, isTurn func(path string, body []byte) bool, answer func(w http.ResponseWriter, r *http.Request, turn modelTurn, n int), turns ...modelTurn) *scriptedModel {
	t.Helper()
	m := &scriptedModel{turns: turns, isTurn: isTurn}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		m.mu.Lock()
		turnReq := m.isTurn(r.URL.Path, body)
		m.requests = append(m.requests, recordedRequest{Path: r.URL.Path, Header: r.Header.Clone(), Body: body, turn: turnReq})
		n := -1
		var turn modelTurn
		if turnReq {
			n = m.turnCount() - 1
			if n < len(m.turns) {
				turn = m.turns[n]
			}
		}
		m.mu.Unlock()
		if turnReq && n >= len(m.turns) {
			http.Error(w, fmt.Sprintf("scripted model: request %d, only %d turns scripted", n+1, len(m.turns)), http.StatusInternalServerError)
			return
		}
		answer(w, r, turn, n)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	m.URL = "http://" + ln.Addr().String()
	return m
}

func (m *scriptedModel) turnCount() int {
	n := 0
	for _, r := range m.requests {
		if r.turn {
			n++
		}
	}
	return n
}

// Turns are the bodies of the conversation requests, in order.
func (m *scriptedModel) Turns() [][]byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out [][]byte
	for _, r := range m.requests {
		if r.turn {
			out = append(out, r.Body)
		}
	}
	return out
}

// sse writes one server-sent event.
func sse(w http.ResponseWriter, event string, data any) {
	b, err := json.Marshal(data)
	if err != nil {
		panic(err)
	}
	fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// responsesTurn: every Responses API request of Codex is a turn.
func responsesTurn(path string, _ []byte) bool { return path == "/v1/responses" }

// responsesAPI answers like the OpenAI Responses API (POST /v1/responses,
// streamed), what Codex CLI speaks.
func responsesAPI(w http.ResponseWriter, r *http.Request, turn modelTurn, n int) {
	if r.URL.Path != "/v1/responses" {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	id := fmt.Sprintf("resp_%d", n+1)
	sse(w, "response.created", map[string]any{"type": "response.created", "response": map[string]any{"id": id}})
	var item map[string]any
	if turn.Tool != "" {
		args, _ := json.Marshal(turn.Arguments)
		item = map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%d", n+1), "call_id": fmt.Sprintf("call_%d", n+1),
			"name": turn.Tool, "arguments": string(args)}
		if turn.Namespace != "" {
			item["namespace"] = turn.Namespace
		}
	} else {
		item = map[string]any{"type": "message", "id": fmt.Sprintf("msg_%d", n+1), "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": turn.Text, "annotations": []any{}}}}
	}
	sse(w, "response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": 0, "item": item})
	sse(w, "response.completed", map[string]any{"type": "response.completed", "response": map[string]any{"id": id,
		"usage": map[string]any{"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}}})
}
