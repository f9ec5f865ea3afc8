package mcpdownstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"
)

// EnvConfig is the environment variable naming the configuration file
// (`lifecycle serve --mcp-servers FILE` takes precedence).
const EnvConfig = "LIFECYCLE_MCP_SERVERS"

// DefaultCallTimeout bounds one downstream tool call unless the server's
// configuration says otherwise.
const DefaultCallTimeout = 2 * time.Minute

// MaxCallTimeout keeps a call well inside the dispatch attempt lease (15
// minutes) and the ASL's DispatchSync TimeoutSeconds (900).
const MaxCallTimeout = 10 * time.Minute

// Config is the downstream servers file:
//
//	{"servers": {
//	   "tickets": {"command": "npx", "args": ["-y", "tickets-mcp"], "env": {"TICKETS_TOKEN": "..."}},
//	   "search":  {"url": "https://search.example.com/mcp", "headers": {"Authorization": "Bearer ..."}},
//	}}
//
// A server is either a command (stdio) or a URL (Streamable HTTP), never
// both. Optional per server: "timeout_seconds" (one tool call; default 120,
// at most 600).
type Config struct {
	Servers map[string]ServerConfig `json:"servers"`
}

// ServerConfig is one downstream server.
type ServerConfig struct {
	// Command and Args start a stdio server; Env is added to the
	// environment it inherits (minus the lifecycle's own LIFECYCLE_*
	// variables).
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	// URL is a Streamable HTTP endpoint; Headers are sent with every request.
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	// TimeoutSeconds bounds one tool call (0: DefaultCallTimeout).
	TimeoutSeconds int `json:"timeout_seconds,omitempty"`
}

// CallTimeout is the deadline of one tool call of the server.
func (c ServerConfig) CallTimeout() time.Duration {
	if c.TimeoutSeconds <= 0 {
		return DefaultCallTimeout
	}
	return time.Duration(c.TimeoutSeconds) * time.Second
}

// Stdio reports whether the server is started as a command.
func (c ServerConfig) Stdio() bool { return c.Command != "" }

// ConfigError names the server and the field that is wrong.
type ConfigError struct {
	Server string // "" for the file as a whole
	Field  string
	Msg    string
}

func (e *ConfigError) Error() string {
	switch {
	case e.Server == "" && e.Field == "":
		return "MCP servers: " + e.Msg
	case e.Server == "":
		return fmt.Sprintf("MCP servers: %s: %s", e.Field, e.Msg)
	case e.Field == "":
		return fmt.Sprintf("MCP server %q: %s", e.Server, e.Msg)
	}
	return fmt.Sprintf("MCP server %q: %s: %s", e.Server, e.Field, e.Msg)
}

// serverName is what a permission rule (mcp__<server>__<tool>) can name and
// what the tool name can carry: lower case, digits, "_" and "-", starting
// with a letter or digit; "__" would make the tool name ambiguous.
var serverName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// headerName is an HTTP token (RFC 9110).
var headerName = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

// envName is a portable environment variable name.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// LoadConfig reads and validates the file at path.
func LoadConfig(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("MCP servers: read %s: %w", path, err)
	}
	cfg, err := ParseConfig(data)
	if err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

// ParseConfig decodes and validates a configuration. Unknown fields are
// refused (a misspelt "headers" must not silently drop credentials), and
// every problem names its server and field.
func ParseConfig(data []byte) (Config, error) {
	var raw struct {
		Servers map[string]json.RawMessage `json:"servers"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return Config{}, &ConfigError{Msg: "not a JSON object {\"servers\": {...}}: " + err.Error()}
	}
	if dec.More() {
		return Config{}, &ConfigError{Msg: "trailing data after the JSON object"}
	}
	if raw.Servers == nil {
		return Config{}, &ConfigError{Field: "servers", Msg: "missing (want an object of named servers)"}
	}
	cfg := Config{Servers: map[string]ServerConfig{}}
	names := make([]string, 0, len(raw.Servers))
	for name := range raw.Servers {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if !serverName.MatchString(name) || strings.Contains(name, "__") {
			return Config{}, &ConfigError{Server: name, Field: "name",
				Msg: "must be 1-64 of a-z, 0-9, _ and -, start with a letter or digit, and not contain \"__\""}
		}
		var sc ServerConfig
		dec := json.NewDecoder(bytes.NewReader(raw.Servers[name]))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&sc); err != nil {
			return Config{}, &ConfigError{Server: name, Msg: decodeProblem(err)}
		}
		if err := sc.validate(name); err != nil {
			return Config{}, err
		}
		cfg.Servers[name] = sc
	}
	return cfg, nil
}

// decodeProblem says which field a JSON decoding error is about.
func decodeProblem(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return fmt.Sprintf("%s: want %s, got JSON %s", te.Field, te.Type, te.Value)
	}
	if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return fmt.Sprintf("unknown field %s (known: command, args, env, url, headers, timeout_seconds)", f)
	}
	return err.Error()
}

func (c ServerConfig) validate(name string) error {
	bad := func(field, msg string) error { return &ConfigError{Server: name, Field: field, Msg: msg} }
	switch {
	case c.Command == "" && c.URL == "":
		return bad("command", "missing: a server needs a command (stdio) or a url (Streamable HTTP)")
	case c.Command != "" && c.URL != "":
		return bad("url", "a server is a command or a url, not both")
	}
	if c.Stdio() {
		if strings.TrimSpace(c.Command) != c.Command {
			return bad("command", "has leading or trailing spaces (arguments go in \"args\")")
		}
		if len(c.Headers) > 0 {
			return bad("headers", "only for a url server (a command server takes \"env\")")
		}
		for k := range c.Env {
			if !envName.MatchString(k) {
				return bad("env", fmt.Sprintf("%q is not an environment variable name", k))
			}
			if strings.HasPrefix(k, "LIFECYCLE_") {
				return bad("env", fmt.Sprintf("%q: the lifecycle's own variables are never passed to a downstream server", k))
			}
		}
	} else {
		u, err := url.Parse(c.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return bad("url", fmt.Sprintf("%q is not an absolute http(s) URL", c.URL))
		}
		if len(c.Args) > 0 || len(c.Env) > 0 {
			return bad("args", "\"args\" and \"env\" are only for a command server")
		}
		for k, v := range c.Headers {
			if !headerName.MatchString(k) {
				return bad("headers", fmt.Sprintf("%q is not an HTTP header name", k))
			}
			if strings.ContainsAny(v, "\r\n") {
				return bad("headers", fmt.Sprintf("the value of %q contains a line break", k))
			}
		}
	}
	if c.TimeoutSeconds < 0 || time.Duration(c.TimeoutSeconds)*time.Second > MaxCallTimeout {
		return bad("timeout_seconds", fmt.Sprintf("%d: want 1 to %d (0 or absent: %d)", c.TimeoutSeconds,
			int(MaxCallTimeout/time.Second), int(DefaultCallTimeout/time.Second)))
	}
	return nil
}
