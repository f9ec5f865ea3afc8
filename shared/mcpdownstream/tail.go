package mcpdownstream

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
)

// tail is a stdio server's stderr: each line is logged (debug), and the
// last few are kept for the error that reports a server that would not
// start or died.
type tail struct {
	server string
	log    *slog.Logger

	mu      sync.Mutex
	partial []byte
	lines   []string
}

const tailLines = 5

func newTail(server string, log *slog.Logger) *tail { return &tail{server: server, log: log} }

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.partial = append(t.partial, p...)
	for {
		i := bytes.IndexByte(t.partial, '\n')
		if i < 0 {
			break
		}
		line := strings.TrimRight(string(t.partial[:i]), "\r")
		t.partial = t.partial[i+1:]
		if line == "" {
			continue
		}
		if len(line) > 500 {
			line = line[:500] + "..."
		}
		t.log.Debug("MCP server stderr", "mcp_server", t.server, "line", line)
		t.lines = append(t.lines, line)
		if len(t.lines) > tailLines {
			t.lines = t.lines[len(t.lines)-tailLines:]
		}
	}
	if len(t.partial) > 4096 {
		t.partial = t.partial[:0]
	}
	return len(p), nil
}

// String is the last lines, joined with " | ".
func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(t.lines, " | ")
}
