package activity

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/identity"
	"github.com/openprogram/lifecycle/shared/ids"
)

// Heading lengths, in runes (characters as people count them, never bytes:
// a cut never splits a character).
const (
	// MaxHeadingRunes bounds a branch or execution heading, suffix included.
	MaxHeadingRunes = 80
	// MaxSummaryRunes bounds an action's argument summary.
	MaxSummaryRunes = 64
)

// Words that say how an execution came to be, appended to its heading.
const (
	SuffixFork  = " · fork"
	SuffixRetry = " · retry"
)

// Summary is a one-line summary of a tool call's arguments, for people:
// what a Bash command runs, which file a file tool touches, the pattern
// or URL of a search or fetch, and for any other tool (an MCP tool, say)
// its top-level arguments as key=value pairs. Whitespace runs (newlines
// included) become one space, control and bidirectional formatting
// characters are dropped, and the result is cut at MaxSummaryRunes runes
// with an ellipsis. Empty when the arguments say nothing printable.
func Summary(tool string, args json.RawMessage) string {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(args, &fields); err != nil {
		return ""
	}
	str := func(name string) string {
		var v string
		if raw, ok := fields[name]; ok && json.Unmarshal(raw, &v) == nil {
			return v
		}
		return ""
	}
	var s string
	switch identity.CanonicalTool(tool) {
	case "Bash":
		s = str("command")
		if oneLine(s) == "" {
			s = str("description")
		}
	case "Read", "Write", "Edit", "MultiEdit", "NotebookRead", "NotebookEdit":
		s = firstOf(str, "file_path", "path", "notebook_path")
	case "Glob", "Grep":
		s = str("pattern")
		if p := str("path"); p != "" && s != "" {
			s += " in " + p
		}
	case "LS":
		s = str("path")
	case "WebFetch":
		s = str("url")
	case "WebSearch":
		s = str("query")
	case "Task", "Agent":
		s = firstOf(str, "description", "prompt")
	case "AskUserQuestion":
		// The first question asked (and how many more came with it).
		var qs []struct {
			Question string `json:"question"`
		}
		if raw, ok := fields["questions"]; ok && json.Unmarshal(raw, &qs) == nil && len(qs) > 0 {
			s = qs[0].Question
			if len(qs) > 1 {
				s += fmt.Sprintf(" (+%d more)", len(qs)-1)
			}
		}
	default:
		s = pairs(fields)
	}
	return truncate(oneLine(s), MaxSummaryRunes)
}

func firstOf(str func(string) string, names ...string) string {
	for _, n := range names {
		if v := str(n); v != "" {
			return v
		}
	}
	return ""
}

// pairs is "key=value key=value" over the top-level arguments in key
// order: strings as they are (quoted when they hold a space), numbers,
// booleans and null as JSON, objects and arrays as {…} and […].
func pairs(fields map[string]json.RawMessage) string {
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		raw := bytes.TrimSpace(fields[k])
		var v string
		switch {
		case len(raw) == 0:
			continue
		case raw[0] == '"':
			var s string
			if json.Unmarshal(raw, &s) != nil {
				continue
			}
			s = oneLine(s)
			if strings.ContainsRune(s, ' ') || s == "" {
				s = strconv.Quote(s)
			}
			v = s
		case raw[0] == '{':
			v = "{…}"
		case raw[0] == '[':
			v = "[…]"
		default:
			v = string(raw)
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(oneLine(k) + "=" + v)
		if utf8.RuneCountInString(b.String()) > MaxSummaryRunes {
			break // the rest would be cut anyway
		}
	}
	return b.String()
}

// oneLine collapses whitespace runs to one space and drops control and
// bidirectional formatting characters, so a summary is one plain line.
func oneLine(s string) string {
	var b strings.Builder
	space := false
	for _, r := range s {
		switch {
		case r == utf8.RuneError:
			continue
		case unicode.IsSpace(r):
			space = b.Len() > 0
			continue
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r):
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	return b.String()
}

// truncate cuts s to at most n runes, the last one an ellipsis when cut.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	rs := []rune(s)
	return strings.TrimRightFunc(string(rs[:n-1]), unicode.IsSpace) + "…"
}

// actionHeading is "Tool: summary", or the tool alone when its arguments
// summarise to nothing.
func actionHeading(a actionflow.Action) string {
	tool := truncate(oneLine(a.Tool), MaxSummaryRunes)
	if s := Summary(a.Tool, a.Arguments); s != "" {
		return tool + ": " + s
	}
	return tool
}

// origin is how an execution came to be: "fork" (a Fork: a new branch
// from a saved point of another), "retry" (a Retry: on its source's
// branch), or "" (started by a submission, or a child task).
func origin(e actionflow.Execution) string {
	if e.ParentID == "" || isChildTask(e) {
		return ""
	}
	if e.BranchID == "" || e.BranchID == string(e.ExecutionID) {
		return "fork"
	}
	return "retry"
}

func suffix(e actionflow.Execution) string {
	switch origin(e) {
	case "fork":
		return SuffixFork
	case "retry":
		return SuffixRetry
	}
	return ""
}

// baseHeading is what an execution is about, without how it came to be:
// its title; else, for a fork or retry, what its source is about (the
// conversation it continues); else its first tool call. ok is false when
// none of these exists (the caller falls back to the kind).
func (x *index) baseHeading(e actionflow.Execution, depth int) (string, bool) {
	if t := oneLine(e.Title); t != "" {
		return t, true
	}
	if p, ok := x.execs[e.ParentID]; ok && origin(e) != "" && depth < 64 {
		if h, ok := x.baseHeading(p, depth+1); ok {
			return h, true
		}
	}
	if a, ok := x.firstAction(e.ExecutionID); ok {
		return actionHeading(a), true
	}
	return "", false
}

// execHeading is an execution's own heading: its base heading (or its
// kind) and, for a fork or retry, the word that says so.
func (x *index) execHeading(e actionflow.Execution) string {
	base, ok := x.baseHeading(e, 0)
	if !ok {
		base = kindName(e.Kind)
	}
	return withSuffix(base, suffix(e))
}

// branchHeading is a branch's heading: the heading of its first own
// execution (the one that started the branch: a submission's, or a
// fork's), else the branch's first tool call, else the kind. Never an id.
func (x *index) branchHeading(own []actionflow.Execution) string {
	first := own[0]
	base, ok := x.baseHeading(first, 0)
	for _, e := range own {
		if ok {
			break
		}
		var a actionflow.Action
		if a, ok = x.firstAction(e.ExecutionID); ok {
			base = actionHeading(a)
		}
	}
	if !ok {
		base = kindName(first.Kind)
	}
	return withSuffix(base, suffix(first))
}

func withSuffix(base, suffix string) string {
	return truncate(base, MaxHeadingRunes-utf8.RuneCountInString(suffix)) + suffix
}

// firstAction is the execution's oldest tool call.
func (x *index) firstAction(exec ids.ExecutionID) (actionflow.Action, bool) {
	as := x.actions[exec]
	if len(as) == 0 {
		return actionflow.Action{}, false
	}
	first := as[0]
	for _, a := range as[1:] {
		if a.CreatedAt.Before(first.CreatedAt) || (a.CreatedAt.Equal(first.CreatedAt) && a.ActionID < first.ActionID) {
			first = a
		}
	}
	return first, true
}

func kindName(kind string) string {
	switch kind {
	case "", "agent_chat":
		return "Agent chat"
	case "job":
		return "Job"
	case "function":
		return "Function"
	}
	return oneLine(kind)
}
