package mcpdownstream_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/mcpdownstream"
)

func TestParseConfig(t *testing.T) {
	cases := []struct {
		name string
		doc  string
		err  string // "" valid; else a substring of the error
	}{
		{"stdio and http servers", `{"servers":{"everything":{"command":"npx","args":["-y","x"],"env":{"A_B":"1"}},
			"search-2":{"url":"https://search.example.com/mcp","headers":{"Authorization":"Bearer t"},"timeout_seconds":30}}}`, ""},
		{"no servers is valid", `{"servers":{}}`, ""},
		{"not JSON", `{"servers":`, "not a JSON object"},
		{"servers missing", `{}`, "servers: missing"},
		{"unknown top-level field", `{"servers":{},"server":{}}`, `unknown field "server"`},
		{"trailing data", `{"servers":{}} {}`, "trailing data"},
		{"upper-case name", `{"servers":{"Tickets":{"command":"x"}}}`, `MCP server "Tickets": name: must be`},
		{"double underscore in name", `{"servers":{"a__b":{"command":"x"}}}`, `MCP server "a__b": name`},
		{"name with a dot", `{"servers":{"a.b":{"command":"x"}}}`, `MCP server "a.b": name`},
		{"leading dash", `{"servers":{"-a":{"command":"x"}}}`, `MCP server "-a": name`},
		{"neither command nor url", `{"servers":{"t":{"args":["x"]}}}`, `MCP server "t": command: missing`},
		{"both command and url", `{"servers":{"t":{"command":"x","url":"http://127.0.0.1/mcp"}}}`, `MCP server "t": url: a server is a command or a url`},
		{"misspelt field", `{"servers":{"t":{"command":"x","header":{}}}}`, `MCP server "t": unknown field "header"`},
		{"args not a list", `{"servers":{"t":{"command":"x","args":"-y"}}}`, `MCP server "t": args: want []string`},
		{"command with spaces", `{"servers":{"t":{"command":"npx -y x"}}}`, ""},
		{"command padded", `{"servers":{"t":{"command":" npx"}}}`, `MCP server "t": command: has leading`},
		{"headers on a command", `{"servers":{"t":{"command":"x","headers":{"A":"b"}}}}`, `MCP server "t": headers: only for a url`},
		{"bad env name", `{"servers":{"t":{"command":"x","env":{"A-B":"1"}}}}`, `MCP server "t": env: "A-B"`},
		{"lifecycle env refused", `{"servers":{"t":{"command":"x","env":{"LIFECYCLE_TOKEN":"1"}}}}`, `MCP server "t": env: "LIFECYCLE_TOKEN"`},
		{"relative url", `{"servers":{"t":{"url":"/mcp"}}}`, `MCP server "t": url: "/mcp" is not an absolute`},
		{"ftp url", `{"servers":{"t":{"url":"ftp://h/mcp"}}}`, `MCP server "t": url: "ftp://h/mcp"`},
		{"env on a url", `{"servers":{"t":{"url":"http://127.0.0.1/mcp","env":{"A":"1"}}}}`, `MCP server "t": args: "args" and "env" are only`},
		{"bad header name", `{"servers":{"t":{"url":"http://127.0.0.1/mcp","headers":{"A B":"1"}}}}`, `MCP server "t": headers: "A B"`},
		{"header value with a newline", `{"servers":{"t":{"url":"http://127.0.0.1/mcp","headers":{"A":"1\r\nB: 2"}}}}`, `MCP server "t": headers: the value of "A"`},
		{"timeout too long", `{"servers":{"t":{"command":"x","timeout_seconds":3600}}}`, `MCP server "t": timeout_seconds: 3600`},
		{"negative timeout", `{"servers":{"t":{"command":"x","timeout_seconds":-1}}}`, `MCP server "t": timeout_seconds: -1`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := mcpdownstream.ParseConfig([]byte(c.doc))
			if c.err == "" {
				if err != nil {
					t.Fatalf("want valid, got %v", err)
				}
				if cfg.Servers == nil {
					t.Fatal("valid config without a servers map")
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Fatalf("error %v, want one containing %q", err, c.err)
			}
		})
	}
}

func TestLoadConfigValues(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(path, []byte(`{"servers":{"everything":{"command":"mcp-server-everything","args":["stdio"],"env":{"K":"v"}},
		"web":{"url":"http://127.0.0.1:9/mcp","headers":{"X-Key":"k"},"timeout_seconds":5}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := mcpdownstream.LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	ev, web := cfg.Servers["everything"], cfg.Servers["web"]
	if !ev.Stdio() || ev.Command != "mcp-server-everything" || !slices.Equal(ev.Args, []string{"stdio"}) || ev.Env["K"] != "v" ||
		ev.CallTimeout() != mcpdownstream.DefaultCallTimeout {
		t.Fatalf("everything: %+v", ev)
	}
	if web.Stdio() || web.URL != "http://127.0.0.1:9/mcp" || web.Headers["X-Key"] != "k" || web.CallTimeout() != 5*time.Second {
		t.Fatalf("web: %+v", web)
	}
	if _, err := mcpdownstream.LoadConfig(filepath.Join(t.TempDir(), "missing.json")); err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Fatalf("a missing file: %v", err)
	}
}
