package permission

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"path"
	"strings"

	"github.com/openprogram/lifecycle/shared/identity"
)

type family int

const (
	famOther family = iota
	famBash
	famRead
	famEdit
	famWeb
)

// callView is what the engine reads from a call's (untrusted) arguments.
type callView struct {
	fam family
	// paths are the path arguments of file tools, as given.
	paths []string
	// host of a WebFetch URL (lower case, no port).
	host    string
	command string
	// cwd is the Bash tool's working directory argument, as given.
	cwd string
	// relax is what a Bash call asks beyond its sandbox profile
	// (dangerouslyDisableSandbox, network).
	relax relaxation
}

// canonicalTool is the tool a call or rule names, whatever its spelling:
// bash, read_file, write_file and edit_file are Bash, Read, Write and Edit
// (identity.CanonicalTool, the one list the host runner shares). Every
// judgement by tool name (family, argument fields, rules, visibility) goes
// through it, so a spelling can never walk around a rule.
func canonicalTool(tool string) string { return identity.CanonicalTool(tool) }

// hostFileTools are the file tools the host runner executes. It reads the
// path from file_path and, when that is empty, from path: the engine
// judges file_path only, so a call that carries path at all, or an empty
// file_path, is refused rather than judged on a different field than the
// one that runs.
var hostFileTools = map[string]bool{"Read": true, "Write": true, "Edit": true}

func familyOf(tool string) family {
	tool = canonicalTool(tool)
	switch {
	case tool == "Bash":
		return famBash
	case readFamily[tool]:
		return famRead
	case editFamily[tool]:
		return famEdit
	case tool == "WebFetch":
		return famWeb
	}
	return famOther
}

// viewCall extracts the fields the rules judge. Arguments must be a JSON
// object; a field the tool needs that is missing or not a string is an
// *InvalidCallError, so it can never be mistaken for "no path".
func viewCall(c Call) (callView, error) {
	v := callView{fam: familyOf(c.Tool)}
	dec := json.NewDecoder(bytes.NewReader(c.Args))
	dec.UseNumber()
	var fields map[string]json.RawMessage
	if err := dec.Decode(&fields); err != nil || fields == nil {
		return v, &InvalidCallError{ActionID: c.ActionID, Tool: c.Tool, Msg: "arguments are not a JSON object"}
	}
	str := func(name string, required bool) (string, bool, error) {
		raw, ok := fields[name]
		if !ok {
			if required {
				return "", false, &InvalidCallError{ActionID: c.ActionID, Tool: c.Tool, Field: name, Msg: "missing"}
			}
			return "", false, nil
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", false, &InvalidCallError{ActionID: c.ActionID, Tool: c.Tool, Field: name, Msg: "want a string"}
		}
		return s, true, nil
	}
	tool := canonicalTool(c.Tool)
	if hostFileTools[tool] {
		if _, ok := fields["path"]; ok {
			return v, &InvalidCallError{ActionID: c.ActionID, Tool: c.Tool, Field: "path",
				Msg: fmt.Sprintf("not an argument of %s: the field is named \"file_path\"", c.Tool)}
		}
	}
	switch tool {
	case "Bash":
		cmd, _, err := str("command", true)
		if err != nil {
			return v, err
		}
		v.command = cmd
		if v.cwd, _, err = str("cwd", false); err != nil {
			return v, err
		}
		for _, f := range []struct {
			name string
			dst  *bool
		}{{"dangerouslyDisableSandbox", &v.relax.off}, {"network", &v.relax.network}} {
			raw, ok := fields[f.name]
			if !ok {
				continue
			}
			if err := json.Unmarshal(raw, f.dst); err != nil || (string(raw) != "true" && string(raw) != "false") {
				return v, &InvalidCallError{ActionID: c.ActionID, Tool: c.Tool, Field: f.name, Msg: "want true or false"}
			}
		}
	case "Read", "Write", "Edit", "MultiEdit":
		p, _, err := str("file_path", true)
		if err != nil {
			return v, err
		}
		if hostFileTools[tool] && p == "" {
			return v, &InvalidCallError{ActionID: c.ActionID, Tool: c.Tool, Field: "file_path", Msg: "must not be empty"}
		}
		v.paths = []string{p}
	case "NotebookEdit", "NotebookRead":
		p, _, err := str("notebook_path", true)
		if err != nil {
			return v, err
		}
		v.paths = []string{p}
	case "LS":
		p, _, err := str("path", true)
		if err != nil {
			return v, err
		}
		v.paths = []string{p}
	case "Grep":
		p, ok, err := str("path", false)
		if err != nil {
			return v, err
		}
		if !ok || p == "" {
			p = "."
		}
		v.paths = []string{p}
	case "Glob":
		p, ok, err := str("path", false)
		if err != nil {
			return v, err
		}
		if !ok || p == "" {
			p = "."
		}
		v.paths = []string{p}
		pat, _, err := str("pattern", true)
		if err != nil {
			return v, err
		}
		// A pattern that climbs out (../x/*), is absolute or has a static
		// directory (which may be a link: notes/.ssh/*) searches elsewhere:
		// judge the static directory it starts from as well.
		if path.IsAbs(pat) || strings.Contains(pat, "..") || strings.Contains(staticPart(pat), "/") {
			base := pat
			if i := strings.IndexAny(base, "*?[{"); i >= 0 {
				base = path.Dir(base[:i] + "x")
			}
			if !path.IsAbs(base) {
				base = path.Join(p, base)
			}
			v.paths = append(v.paths, base)
		}
	case "WebFetch":
		raw, _, err := str("url", true)
		if err != nil {
			return v, err
		}
		u, perr := url.Parse(raw)
		if perr != nil || u.Hostname() == "" || (u.Scheme != "http" && u.Scheme != "https") {
			return v, &InvalidCallError{ActionID: c.ActionID, Tool: c.Tool, Field: "url", Msg: "want an absolute http(s) URL"}
		}
		v.host = strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	}
	return v, nil
}

// staticPart is a glob pattern up to its first pattern character.
func staticPart(pat string) string {
	if i := strings.IndexAny(pat, "*?[{"); i >= 0 {
		return pat[:i]
	}
	return pat
}

// ToolSpec is one tool as the model sees it in a provider request.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema,omitempty"`
}

// HiddenBy reports the whole-tool rule (hard constraint, restriction or
// deny) that removes tool from what the model sees, and the list it is in.
// A scoped rule (Bash(rm *)) never hides a tool: it blocks matching calls.
func HiddenBy(p *Policy, tool string) (Rule, Source, bool) {
	if p == nil {
		return Rule{}, "", false
	}
	lists := []struct {
		rules []Rule
		src   Source
	}{{p.HardConstraints, SourceHardConstraint}, {p.Restrictions, SourceRestriction}, {p.Deny, SourceDenyRule}}
	for _, l := range lists {
		for _, r := range l.rules {
			if r.WholeTool() && r.AppliesTo(tool) {
				return r, l.src, true
			}
		}
	}
	return Rule{}, "", false
}

// VisibleTools filters the model-facing tool list of one provider request
// against the live policy: a tool removed by a whole-tool deny (or hard
// constraint, or restriction) is left out; every other tool stays, in
// order. It does not change any saved execution contract; Decide still
// denies a hidden tool that an older model turn invokes.
func VisibleTools(p *Policy, tools []ToolSpec) []ToolSpec {
	out := make([]ToolSpec, 0, len(tools))
	for _, t := range tools {
		if _, _, hidden := HiddenBy(p, t.Name); !hidden {
			out = append(out, t)
		}
	}
	return out
}
