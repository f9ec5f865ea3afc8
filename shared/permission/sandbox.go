package permission

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/openprogram/lifecycle/shared/sandbox"
)

// SandboxSettings change the sandbox profile of host tool calls. At the
// policy level they replace the default (sandbox.Default); per tool and per
// allow rule they are applied on top, in that order: Mode and Network
// replace when set, ReadOnly and Writable add paths.
type SandboxSettings struct {
	// Mode "off" runs the calls unconfined; at the policy level "bwrap"
	// (the default) is also accepted. A tool or rule can only turn the
	// sandbox off, never back on under a policy that turned it off.
	Mode string `json:"mode,omitempty"`
	// Network opens (true) or closes (false) the network.
	Network *bool `json:"network,omitempty"`
	// ReadOnly and Writable are extra paths visible read-only or writable
	// (absolute, cleaned). A writable path may not be, contain or lie in a
	// protected path (the state directory, a credential store); a
	// read-only one may not be or lie in one.
	ReadOnly []string `json:"readOnly,omitempty"`
	Writable []string `json:"writable,omitempty"`
}

// SandboxPolicy is the policy document's "sandbox" key: the settings of
// every host tool call, per tool (canonical names: Bash, Read, Write,
// Edit) and per allow rule (keyed by the rule's text as written in
// "allow"). The string "off" is short for {"mode":"off"}, "bwrap" for the
// default.
type SandboxPolicy struct {
	SandboxSettings
	Tools map[string]SandboxSettings `json:"tools,omitempty"`
	Rules map[string]SandboxSettings `json:"rules,omitempty"`
}

func (s SandboxPolicy) isZero() bool {
	return s.Mode == "" && s.Network == nil && len(s.ReadOnly) == 0 && len(s.Writable) == 0 &&
		len(s.Tools) == 0 && len(s.Rules) == 0
}

// hostTools are the tools the host worker runs, and so the tools a
// decision chooses a sandbox profile for.
var hostTools = map[string]bool{"Bash": true, "Read": true, "Write": true, "Edit": true}

// IsHostTool reports whether tool (any spelling) runs on the host worker
// and therefore in a sandbox profile.
func IsHostTool(tool string) bool { return hostTools[canonicalTool(tool)] }

// sandboxProblem is one invalid sandbox setting, named by its field.
type sandboxProblem struct{ field, msg string }

// parseSandbox reads the "sandbox" value: a string shorthand or an object.
func parseSandbox(raw json.RawMessage) (SandboxPolicy, []sandboxProblem) {
	var sp SandboxPolicy
	var short string
	if err := json.Unmarshal(raw, &short); err == nil {
		switch short {
		case sandbox.ModeOff:
			sp.Mode = sandbox.ModeOff
		case sandbox.ModeBwrap:
		default:
			return sp, []sandboxProblem{{"sandbox", fmt.Sprintf("%q: want \"bwrap\" (the default), \"off\" or an object", short)}}
		}
		return sp, nil
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	if err := d.Decode(&sp); err != nil {
		return SandboxPolicy{}, []sandboxProblem{{"sandbox", fmt.Sprintf("want \"bwrap\", \"off\" or an object with mode, network, readOnly, writable, tools, rules: %v", err)}}
	}
	return sp, nil
}

// check validates the settings against the policy's allow rules. The
// tools' keys are canonicalized in place.
func (sp *SandboxPolicy) check(allow []Rule) []sandboxProblem {
	var out []sandboxProblem
	out = append(out, sp.SandboxSettings.check("sandbox", true)...)
	if len(sp.Tools) > 0 {
		tools := map[string]SandboxSettings{}
		for _, name := range sortedKeys(sp.Tools) {
			field := fmt.Sprintf("sandbox.tools[%q]", name)
			c := canonicalTool(name)
			if !hostTools[c] {
				out = append(out, sandboxProblem{field, "not a host tool (Bash, Read, Write, Edit): only host tools run in a sandbox"})
				continue
			}
			if _, dup := tools[c]; dup {
				out = append(out, sandboxProblem{field, fmt.Sprintf("%s is already configured under another spelling", c)})
				continue
			}
			out = append(out, sp.Tools[name].check(field, false)...)
			tools[c] = sp.Tools[name]
		}
		sp.Tools = tools
	}
	texts := map[string]Rule{}
	for _, r := range allow {
		texts[r.Text] = r
	}
	for _, text := range sortedKeys(sp.Rules) {
		field := fmt.Sprintf("sandbox.rules[%q]", text)
		r, ok := texts[text]
		if !ok {
			out = append(out, sandboxProblem{field, "no allow rule has this text; sandbox settings apply to the allow rule of the same text"})
			continue
		}
		if !hostTools[r.Tool] {
			out = append(out, sandboxProblem{field, fmt.Sprintf("rule for %s: only host tools (Bash, Read, Write, Edit) run in a sandbox", r.Tool)})
			continue
		}
		out = append(out, sp.Rules[text].check(field, false)...)
	}
	return out
}

func sortedKeys(m map[string]SandboxSettings) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// homeLike are directories that hold home directories: a writable extra at
// one of them (or one level below, a home) would contain the credential
// stores wherever the home of the trusted context is. The engine checks
// the real home and the state directory again when it decides.
var homeLike = []string{"/home", "/Users", "/root"}

func (s SandboxSettings) check(field string, top bool) []sandboxProblem {
	var out []sandboxProblem
	switch {
	case s.Mode == "" || s.Mode == sandbox.ModeOff:
	case s.Mode == sandbox.ModeBwrap && top:
	case s.Mode == sandbox.ModeBwrap:
		out = append(out, sandboxProblem{field + ".mode", "a tool or rule can only turn the sandbox off (\"off\"); it is on unless the policy says \"sandbox\": \"off\""})
	default:
		out = append(out, sandboxProblem{field + ".mode", fmt.Sprintf("%q: want \"bwrap\" or \"off\"", s.Mode)})
	}
	for _, l := range []struct {
		name     string
		paths    []string
		writable bool
	}{{"readOnly", s.ReadOnly, false}, {"writable", s.Writable, true}} {
		for i, p := range l.paths {
			f := fmt.Sprintf("%s.%s[%d]", field, l.name, i)
			if msg := checkSandboxPath(p, l.writable); msg != "" {
				out = append(out, sandboxProblem{f, msg})
			}
		}
	}
	return out
}

// checkSandboxPath is the check a path can get without the trusted
// context: absolute, clean, not "/", not in a credential store by name,
// and (writable) not a directory that holds home directories.
func checkSandboxPath(p string, writable bool) string {
	if !path.IsAbs(p) {
		return fmt.Sprintf("%q is not an absolute path", p)
	}
	if path.Clean(p) != p {
		return fmt.Sprintf("%q is not clean; write %q", p, path.Clean(p))
	}
	if p == "/" {
		return "\"/\" is the whole file system"
	}
	for _, cs := range defaultCredentialStores {
		rel := "/" + strings.TrimPrefix(cs, "~/")
		if strings.HasSuffix(p, rel) || strings.Contains(p, rel+"/") {
			return fmt.Sprintf("%q is in the credential store %s; credential stores are never visible in the sandbox", p, cs)
		}
	}
	if writable {
		for _, h := range homeLike {
			if p == h || path.Dir(p) == h {
				return fmt.Sprintf("%q may be or contain a home directory and its credential stores (~/.ssh, ~/.aws, ...); name the directory inside it", p)
			}
		}
	}
	return ""
}

// apply adds the settings s to the profile.
func (s SandboxSettings) apply(p *sandbox.Profile) {
	if s.Mode != "" {
		p.Mode = s.Mode
	}
	if s.Network != nil {
		p.Network = *s.Network
	}
	p.ReadOnly = appendNew(p.ReadOnly, s.ReadOnly)
	p.Writable = appendNew(p.Writable, s.Writable)
}

func appendNew(dst, add []string) []string {
	for _, a := range add {
		if !contains(dst, a) {
			dst = append(dst, a)
		}
	}
	return dst
}

// relaxation is what a Bash call asks beyond its profile: the sandbox off
// (dangerouslyDisableSandbox) or the network (network).
type relaxation struct{ off, network bool }

func (r relaxation) any() bool { return r.off || r.network }

func (r relaxation) String() string {
	switch {
	case r.off && r.network:
		return "dangerouslyDisableSandbox and network"
	case r.off:
		return "dangerouslyDisableSandbox"
	}
	return "network"
}

// exceeds reports whether the relaxation asks for more than p gives.
func (r relaxation) exceeds(p sandbox.Profile) bool {
	if p.Mode == sandbox.ModeOff {
		return false
	}
	return r.off || (r.network && !p.Network)
}

// applyTo is p with the relaxation granted.
func (r relaxation) applyTo(p sandbox.Profile) sandbox.Profile {
	if r.off {
		p.Mode = sandbox.ModeOff
	}
	if r.network {
		p.Network = true
	}
	return p
}

// profile is the sandbox the call runs in for a result: the policy's
// settings, the tool's, the settings of the allow rule the result names
// (an allow rule that decided it, or the one whose relaxation was not
// enough), then the call's relaxation. nil for tools the host does not run.
func (x *evalCtx) profile(res result) *sandbox.Profile {
	tool := canonicalTool(x.req.Call.Tool)
	if !hostTools[tool] {
		return nil
	}
	p := x.baseProfile(res)
	p = x.view.relax.applyTo(p)
	return &p
}

// baseProfile is the profile before the call's relaxation. A policy's
// "off" stays off: tool and rule settings can only turn the sandbox off
// (SandboxSettings.check).
func (x *evalCtx) baseProfile(res result) sandbox.Profile {
	p := sandbox.Default()
	sp := x.pol.Sandbox
	sp.SandboxSettings.apply(&p)
	if s, ok := sp.Tools[canonicalTool(x.req.Call.Tool)]; ok {
		s.apply(&p)
	}
	if res.reason.Rule != "" && (res.reason.Source == SourceAllowRule || res.reason.Source == SourceSandbox) {
		if s, ok := sp.Rules[res.reason.Rule]; ok {
			s.apply(&p)
		}
	}
	return p
}

// relaxed turns an allow the call's relaxation is not covered by into a
// question for a person: only a rule whose sandbox settings give the
// relaxation (or the policy's, or a grant of exactly this relaxed call)
// lets it run without one.
func (x *evalCtx) relaxed(res result) result {
	r := x.view.relax
	if !r.any() || res.out != outAllow || res.reason.Source == SourceGrant {
		return res
	}
	if !r.exceeds(x.baseProfile(res)) {
		return res
	}
	rule := ""
	if res.reason.Source == SourceAllowRule {
		rule = res.reason.Rule
	}
	return result{outHuman, x.relaxReason(rule, res.reason.Detail)}
}

func (x *evalCtx) relaxReason(rule, allowedBy string) Reason {
	detail := fmt.Sprintf("the call asks to relax the sandbox (%s); no rule allows that relaxation, so a person decides", x.view.relax)
	if allowedBy != "" {
		detail = fmt.Sprintf("the call asks to relax the sandbox (%s); it is otherwise %s, which does not allow that relaxation, so a person decides", x.view.relax, allowedBy)
	}
	return Reason{Source: SourceSandbox, Code: CodeSandboxRelaxation, Rule: rule, Detail: detail}
}

// SandboxPathError is a sandbox path of a policy that opens a protected
// path (the state directory, a credential store under the home).
type SandboxPathError struct {
	// Field names the setting: sandbox.writable[0],
	// sandbox.rules["Bash(x)"].readOnly[1].
	Field     string
	Path      string
	Protected string
}

func (e *SandboxPathError) Error() string {
	return fmt.Sprintf("%s: %q opens the protected path %s (the service's state directory or a credential store); sandbox paths may not be, contain or lie in one", e.Field, e.Path, e.Protected)
}

// CheckSandbox checks a policy's sandbox paths against the protected paths
// of this engine (Config.ProtectedPaths, the credential stores under home)
// and returns the first that opens one as a *SandboxPathError: what
// ParsePolicy cannot know. The service runs it when a policy is stored,
// so such a policy is refused (400) before any decision denies under it.
func (e *Engine) CheckSandbox(p *Policy, home string) error {
	if p == nil {
		return nil
	}
	prot := e.protect.paths(home)
	check := func(field string, s SandboxSettings) error {
		for _, l := range []struct {
			name    string
			paths   []string
			contain bool
		}{{"readOnly", s.ReadOnly, false}, {"writable", s.Writable, true}} {
			for i, w := range l.paths {
				if pp, ok := opens(w, prot, l.contain); ok {
					return &SandboxPathError{Field: fmt.Sprintf("%s.%s[%d]", field, l.name, i), Path: w, Protected: pp}
				}
			}
		}
		return nil
	}
	sp := p.Sandbox
	if err := check("sandbox", sp.SandboxSettings); err != nil {
		return err
	}
	for _, k := range sortedKeys(sp.Tools) {
		if err := check(fmt.Sprintf("sandbox.tools[%q]", k), sp.Tools[k]); err != nil {
			return err
		}
	}
	for _, k := range sortedKeys(sp.Rules) {
		if err := check(fmt.Sprintf("sandbox.rules[%q]", k), sp.Rules[k]); err != nil {
			return err
		}
	}
	return nil
}

// opens finds the protected path w is, lies in, or (contain) contains.
func opens(w string, prot []string, contain bool) (string, bool) {
	for _, pp := range prot {
		if w == pp || isUnder(w, pp) || (contain && isUnder(pp, w)) {
			return pp, true
		}
	}
	return "", false
}

// protectedProfile finds an extra path of the profile that opens a
// protected path (the state directory, a credential store under the
// trusted home): a writable path that is, contains or lies in one, a
// read-only path that is or lies in one.
func (e *Engine) protectedProfile(x *evalCtx, p *sandbox.Profile) (Reason, bool) {
	if p == nil {
		return Reason{}, false
	}
	prot := e.protect.paths(x.req.Trusted.HomeDir)
	check := func(kind string, list []string, contain bool) (Reason, bool) {
		for _, w := range list {
			if pp, ok := opens(w, prot, contain); ok {
				return Reason{Source: SourceHardConstraint, Code: CodeProtectedPath,
					Detail: fmt.Sprintf("the policy's sandbox settings make %s %s, which opens the protected path %s; fix the policy's sandbox %s paths", kind, w, pp, kind)}, true
			}
		}
		return Reason{}, false
	}
	if r, ok := check("writable", p.Writable, true); ok {
		return r, true
	}
	return check("readOnly", p.ReadOnly, false)
}

// isUnder reports whether p lies strictly below dir.
func isUnder(p, dir string) bool {
	return strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}
