package agents

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
)

// messagesTurn: a request of Claude Code that offers the lifecycle's tool
// is a turn of the conversation; its other model requests (a title, a
// quick classification) are answered with a short text.
func messagesTurn(path string, body []byte) bool {
	return path == "/v1/messages" && bytes.Contains(body, []byte(`"mcp__lifecycle__Bash"`))
}

// messagesAPI answers like the Anthropic Messages API (POST /v1/messages,
// streamed; /v1/messages/count_tokens), what Claude Code speaks.
func messagesAPI(w http.ResponseWriter, r *http.Request, turn modelTurn, n int) {
	switch r.URL.Path {
	case "/v1/messages/count_tokens":
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"input_tokens":10}`))
		return
	case "/v1/messages":
	default:
		http.NotFound(w, r)
		return
	}
	if n < 0 {
		turn = modelTurn{Text: "ok"}
	}
	w.Header().Set("Content-Type", "text/event-stream")
	id := fmt.Sprintf("msg_%d", n+2)
	sse(w, "message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": id, "type": "message",
		"role": "assistant", "model": "claude-sonnet-4-5", "content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 10, "output_tokens": 1}}})
	stop := "end_turn"
	if turn.Tool != "" {
		stop = "tool_use"
		args, _ := json.Marshal(turn.Arguments)
		sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%d", n+1), "name": turn.Tool, "input": map[string]any{}}})
		sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "input_json_delta", "partial_json": string(args)}})
	} else {
		sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "text", "text": ""}})
		sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "text_delta", "text": turn.Text}})
	}
	sse(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	sse(w, "message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": 5}})
	sse(w, "message_stop", map[string]any{"type": "message_stop"})
}
