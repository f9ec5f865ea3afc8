package executor

import (
	"fmt"
	"strings"

	"github.com/openprogram/lifecycle/shared/identity"
)

// Kinds of executors.
const (
	KindHost   = "host"
	KindNoop   = "noop"
	KindHTTP   = "http"
	KindLambda = "lambda"
	// KindQuestion: the human answers (AskUserQuestion). The action's state
	// machine waits for the answer with a task token (AwaitAnswer), then
	// dispatch turns the stored answer into the tool result.
	KindQuestion = "question"
)

// Routes maps tool names to executor kinds. A pattern ending in "*" matches
// a prefix (e.g. "mcp__tickets__*").
type Routes map[string]string

// DefaultRoutes: the host tools (Bash, Read, Write, Edit, under every name
// identity.ToolNames gives them: the names the permission engine judges
// them by) run on the agent's machine, "noop" does nothing, and
// AskUserQuestion is answered by the human (KindQuestion).
var DefaultRoutes = func() Routes {
	r := Routes{"noop": KindNoop, identity.QuestionTool: KindQuestion}
	for _, tool := range []string{"Bash", "Read", "Write", "Edit"} {
		for _, name := range identity.ToolNames(tool) {
			r[name] = KindHost
		}
	}
	return r
}()

// Route returns the executor kind of a tool.
func (r Routes) Route(tool string) (string, bool) {
	if k, ok := r[tool]; ok {
		return k, true
	}
	best, kind := -1, ""
	for pat, k := range r {
		if strings.HasSuffix(pat, "*") && strings.HasPrefix(tool, strings.TrimSuffix(pat, "*")) && len(pat) > best {
			best, kind = len(pat), k
		}
	}
	return kind, best >= 0
}

// ParseRoutes reads "tool=kind,prefix*=kind" (from configuration).
func ParseRoutes(s string) (Routes, error) {
	r := Routes{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		tool, kind, ok := strings.Cut(part, "=")
		if !ok || tool == "" || kind == "" {
			return nil, fmt.Errorf("route %q: want tool=kind", part)
		}
		r[strings.TrimSpace(tool)] = strings.TrimSpace(kind)
	}
	return r, nil
}

// Merge returns r with o's routes added (o wins).
func (r Routes) Merge(o Routes) Routes {
	out := Routes{}
	for k, v := range r {
		out[k] = v
	}
	for k, v := range o {
		out[k] = v
	}
	return out
}
