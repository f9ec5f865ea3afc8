package permission

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"strings"

	"github.com/gowebpki/jcs"

	"github.com/openprogram/lifecycle/shared/ids"
)

// Policy is the owner's permission policy at one version. It is a value:
// change it by parsing a new document with a new version, never in place
// while decisions are being made.
type Policy struct {
	// Version names this policy; every decision, grant, approval and
	// refusal-counter epoch is bound to it.
	Version string
	Mode    Mode
	// HardConstraints are never overridable and never turned into a prompt:
	// not by a grant, an approval, a mode or the refusal fallback.
	HardConstraints []Rule
	// Restrictions are the owner's explicit restrictions for this policy:
	// enforced like hard constraints, reported with their own source.
	Restrictions []Rule
	// Deny, Ask and Allow rules; deny beats ask beats allow.
	Deny, Ask, Allow []Rule
	// Grants allow exact operations (tool + args digest + this version).
	Grants []Grant
	// AdditionalDirectories extend the project scope (absolute paths).
	AdditionalDirectories []string
	// Sandbox chooses the sandbox profile of host tool calls (zero: the
	// default, confined, no network; see SandboxPolicy).
	Sandbox SandboxPolicy
}

// Grant is a scoped grant: exactly one operation (tool + canonical argument
// digest) under exactly one policy version. A modified command has another
// digest, so a grant never authorizes it.
type Grant struct {
	Tool          string `json:"tool"`
	ArgsDigest    string `json:"argsDigest"`
	PolicyVersion string `json:"policyVersion"`
	// Note says why it was granted (display only).
	Note string `json:"note,omitempty"`
}

// Covers reports whether the grant is for exactly this operation.
func (g Grant) Covers(tool, digest, version string) bool {
	return g.Tool == tool && g.ArgsDigest == digest && g.PolicyVersion == version
}

// ParseError is one problem in a policy document, with its location.
type ParseError struct {
	Line, Column int
	// Field is where in the document: "deny[2]", "mode", "grants[0]".
	Field string
	// Rule is the rule text, when the problem is a rule.
	Rule string
	Msg  string
}

func (e *ParseError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "policy line %d, column %d", e.Line, e.Column)
	if e.Field != "" {
		b.WriteString(": " + e.Field)
	}
	if e.Rule != "" {
		fmt.Fprintf(&b, " %q", e.Rule)
	}
	b.WriteString(": " + e.Msg)
	return b.String()
}

// PolicyError collects every problem of a policy document. A policy with
// any error is refused as a whole: no rule is ever silently dropped.
type PolicyError struct {
	Errors []*ParseError
}

func (e *PolicyError) Error() string {
	msgs := make([]string, len(e.Errors))
	for i, pe := range e.Errors {
		msgs[i] = pe.Error()
	}
	return strings.Join(msgs, "\n")
}

// Unwrap exposes the individual errors to errors.Is/As.
func (e *PolicyError) Unwrap() []error {
	out := make([]error, len(e.Errors))
	for i, pe := range e.Errors {
		out[i] = pe
	}
	return out
}

// MaxPolicyBytes bounds a policy document.
const MaxPolicyBytes = 1 << 20

var digestFormat = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// ParsePolicy reads a policy document:
//
//	{
//	  "version": "2025-01-07.1",
//	  "mode": "default",
//	  "hardConstraints": ["Bash(rm -rf /*)"],
//	  "restrictions": ["Bash(git push *)"],
//	  "deny": ["Read(./secrets/**)", "Edit(/etc/**)"],
//	  "ask": ["Bash(git push *)"],
//	  "allow": ["Bash(npm run test:*)", "WebFetch(domain:example.com)"],
//	  "grants": [{"tool": "Bash", "argsDigest": "sha256:...", "policyVersion": "2025-01-07.1"}],
//	  "additionalDirectories": ["/srv/shared"],
//	  "sandbox": {"network": false, "readOnly": ["/opt/sdk"],
//	    "tools": {"Bash": {"writable": ["/var/cache/build"]}},
//	    "rules": {"Bash(npm run test:*)": {"network": true}}}
//	}
//
// "sandbox" chooses the sandbox profile of host tool calls (SandboxPolicy):
// absent, every call runs confined with no network; "off" runs every host
// call unconfined (and every decision records mode off); per tool and per
// allow rule (keyed by the rule's text) it opens the network, turns the
// sandbox off ("mode": "off") or adds read-only or writable paths. A Bash
// call that relaxes its own sandbox (dangerouslyDisableSandbox, network)
// is asked unless the settings of the allow rule that allows it (or the
// tool's, or the policy's) already give that relaxation.
//
// Every key is optional except version. Unknown or duplicate keys, values
// of the wrong type, rules that do not parse and grants for another version
// are errors with their line and column; all of them are reported together
// in a *PolicyError, and no policy is returned.
func ParsePolicy(data []byte) (*Policy, error) {
	if len(data) > MaxPolicyBytes {
		return nil, &PolicyError{Errors: []*ParseError{{Line: 1, Column: 1, Msg: fmt.Sprintf("document is %d bytes, more than %d", len(data), MaxPolicyBytes)}}}
	}
	p := &policyParser{data: data, dec: json.NewDecoder(bytes.NewReader(data))}
	pol := p.parse()
	if len(p.errs) > 0 {
		return nil, &PolicyError{Errors: p.errs}
	}
	return pol, nil
}

// MustParsePolicy is ParsePolicy for documents known to be valid (tests).
func MustParsePolicy(doc string) *Policy {
	p, err := ParsePolicy([]byte(doc))
	if err != nil {
		panic(err)
	}
	return p
}

type policyParser struct {
	data []byte
	dec  *json.Decoder
	errs []*ParseError
}

// position converts a byte offset to a 1-based line and column.
func (p *policyParser) position(off int) (int, int) {
	if off > len(p.data) {
		off = len(p.data)
	}
	before := p.data[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := off - bytes.LastIndexByte(before, '\n')
	return line, col
}

// nextStart is the offset where the next token begins.
func (p *policyParser) nextStart() int {
	off := int(p.dec.InputOffset())
	for off < len(p.data) {
		switch p.data[off] {
		case ' ', '\t', '\n', '\r', ',', ':':
			off++
			continue
		}
		break
	}
	return off
}

func (p *policyParser) errAt(off int, field, rule, format string, a ...any) {
	line, col := p.position(off)
	p.errs = append(p.errs, &ParseError{Line: line, Column: col, Field: field, Rule: rule, Msg: fmt.Sprintf(format, a...)})
}

// syntaxErr records a JSON syntax error and reports whether err was one.
func (p *policyParser) fatal(err error, off int, field string) {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		off = int(se.Offset)
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		off = len(p.data)
		err = errors.New("unexpected end of document")
	}
	p.errAt(off, field, "", "%v", err)
}

func (p *policyParser) parse() *Policy {
	pol := &Policy{Mode: ModeDefault}
	start := p.nextStart()
	tok, err := p.dec.Token()
	if err != nil {
		p.fatal(err, start, "")
		return nil
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		p.errAt(start, "", "", "a policy is a JSON object")
		return nil
	}
	seen := map[string]bool{}
	versionOff := start
	sandboxOff := start
	for p.dec.More() {
		keyOff := p.nextStart()
		tok, err := p.dec.Token()
		if err != nil {
			p.fatal(err, keyOff, "")
			return nil
		}
		key, _ := tok.(string)
		if seen[key] {
			p.errAt(keyOff, key, "", "duplicate key")
		}
		seen[key] = true
		valOff := p.nextStart()
		switch key {
		case "version":
			versionOff = valOff
			if !p.str(&pol.Version, key) {
				return nil
			}
			if err := ids.Validate("policy version", pol.Version); err != nil {
				p.errAt(valOff, key, "", "%v", err)
			}
		case "mode":
			var s string
			if !p.str(&s, key) {
				return nil
			}
			m, err := ParseMode(s)
			if err != nil {
				p.errAt(valOff, key, "", "%v", err)
			}
			pol.Mode = m
		case "hardConstraints", "restrictions", "deny", "ask", "allow":
			lists := map[string]*[]Rule{"hardConstraints": &pol.HardConstraints, "restrictions": &pol.Restrictions,
				"deny": &pol.Deny, "ask": &pol.Ask, "allow": &pol.Allow}
			if !p.rules(lists[key], key) {
				return nil
			}
		case "grants":
			if !p.grants(pol, key) {
				return nil
			}
		case "additionalDirectories":
			if !p.strings(key, func(i, off int, s string) {
				if !path.IsAbs(s) {
					p.errAt(off, fmt.Sprintf("%s[%d]", key, i), "", "%q is not an absolute path", s)
					return
				}
				pol.AdditionalDirectories = append(pol.AdditionalDirectories, path.Clean(s))
			}) {
				return nil
			}
		case "sandbox":
			var raw json.RawMessage
			if err := p.dec.Decode(&raw); err != nil {
				p.fatal(err, valOff, key)
				return nil
			}
			sp, probs := parseSandbox(raw)
			for _, pr := range probs {
				p.errAt(valOff, pr.field, "", "%s", pr.msg)
			}
			pol.Sandbox = sp
			sandboxOff = valOff
		default:
			p.errAt(keyOff, key, "", "unknown key (known: version, mode, hardConstraints, restrictions, deny, ask, allow, grants, additionalDirectories, sandbox)")
			var skip json.RawMessage
			if err := p.dec.Decode(&skip); err != nil {
				p.fatal(err, valOff, key)
				return nil
			}
		}
	}
	if _, err := p.dec.Token(); err != nil { // the closing '}'
		p.fatal(err, p.nextStart(), "")
		return nil
	}
	if off := p.nextStart(); off < len(p.data) {
		p.errAt(off, "", "", "unexpected data after the policy object")
	}
	if pol.Version == "" && !seen["version"] {
		p.errAt(versionOff, "version", "", "a policy needs a version")
	}
	for _, pr := range pol.Sandbox.check(pol.Allow) {
		p.errAt(sandboxOff, pr.field, "", "%s", pr.msg)
	}
	for i, g := range pol.Grants {
		if g.PolicyVersion != pol.Version {
			p.errAt(versionOff, fmt.Sprintf("grants[%d]", i), "", "grant is bound to policy version %q, this policy is %q; remove it or re-grant under this version", g.PolicyVersion, pol.Version)
		}
	}
	return pol
}

func (p *policyParser) str(dst *string, field string) bool {
	off := p.nextStart()
	tok, err := p.dec.Token()
	if err != nil {
		p.fatal(err, off, field)
		return false
	}
	s, ok := tok.(string)
	if !ok {
		p.errAt(off, field, "", "want a string")
		return p.skipRest(tok, off, field)
	}
	*dst = s
	return true
}

// skipRest skips the rest of a value whose first token was tok.
func (p *policyParser) skipRest(tok json.Token, off int, field string) bool {
	d, ok := tok.(json.Delim)
	if !ok || (d != '{' && d != '[') {
		return true
	}
	depth := 1
	for depth > 0 {
		t, err := p.dec.Token()
		if err != nil {
			p.fatal(err, off, field)
			return false
		}
		if d, ok := t.(json.Delim); ok {
			switch d {
			case '{', '[':
				depth++
			default:
				depth--
			}
		}
	}
	return true
}

// strings reads an array of strings, calling each for every element.
func (p *policyParser) strings(field string, each func(i, off int, s string)) bool {
	off := p.nextStart()
	tok, err := p.dec.Token()
	if err != nil {
		p.fatal(err, off, field)
		return false
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		p.errAt(off, field, "", "want an array of strings")
		return p.skipRest(tok, off, field)
	}
	for i := 0; p.dec.More(); i++ {
		eoff := p.nextStart()
		t, err := p.dec.Token()
		if err != nil {
			p.fatal(err, eoff, field)
			return false
		}
		s, ok := t.(string)
		if !ok {
			p.errAt(eoff, fmt.Sprintf("%s[%d]", field, i), "", "want a string")
			if !p.skipRest(t, eoff, field) {
				return false
			}
			continue
		}
		each(i, eoff, s)
	}
	if _, err := p.dec.Token(); err != nil { // ']'
		p.fatal(err, p.nextStart(), field)
		return false
	}
	return true
}

func (p *policyParser) rules(dst *[]Rule, field string) bool {
	return p.strings(field, func(i, off int, s string) {
		r, err := ParseRule(s)
		if err != nil {
			var re *RuleError
			msg := err.Error()
			if errors.As(err, &re) {
				msg = re.Msg
			}
			p.errAt(off, fmt.Sprintf("%s[%d]", field, i), s, "%s", msg)
			return
		}
		*dst = append(*dst, r)
	})
}

func (p *policyParser) grants(pol *Policy, field string) bool {
	off := p.nextStart()
	tok, err := p.dec.Token()
	if err != nil {
		p.fatal(err, off, field)
		return false
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		p.errAt(off, field, "", "want an array of grants")
		return p.skipRest(tok, off, field)
	}
	for i := 0; p.dec.More(); i++ {
		goff := p.nextStart()
		name := fmt.Sprintf("%s[%d]", field, i)
		var raw json.RawMessage
		if err := p.dec.Decode(&raw); err != nil {
			p.fatal(err, goff, name)
			return false
		}
		var g Grant
		d := json.NewDecoder(bytes.NewReader(raw))
		d.DisallowUnknownFields()
		if err := d.Decode(&g); err != nil {
			p.errAt(goff, name, "", "grant: %v", err)
			continue
		}
		switch {
		case g.Tool == "":
			p.errAt(goff, name, "", "grant needs a tool")
		case !digestFormat.MatchString(g.ArgsDigest):
			p.errAt(goff, name, "", "grant argsDigest %q is not sha256:<64 hex>", g.ArgsDigest)
		case g.PolicyVersion == "":
			p.errAt(goff, name, "", "grant needs a policyVersion")
		default:
			pol.Grants = append(pol.Grants, g)
		}
	}
	if _, err := p.dec.Token(); err != nil {
		p.fatal(err, p.nextStart(), field)
		return false
	}
	return true
}

// document is the JSON form of a policy.
type document struct {
	Version               string         `json:"version"`
	Mode                  Mode           `json:"mode"`
	HardConstraints       []string       `json:"hardConstraints,omitempty"`
	Restrictions          []string       `json:"restrictions,omitempty"`
	Deny                  []string       `json:"deny,omitempty"`
	Ask                   []string       `json:"ask,omitempty"`
	Allow                 []string       `json:"allow,omitempty"`
	Grants                []Grant        `json:"grants,omitempty"`
	AdditionalDirectories []string       `json:"additionalDirectories,omitempty"`
	Sandbox               *SandboxPolicy `json:"sandbox,omitempty"`
}

func texts(rules []Rule) []string {
	out := make([]string, len(rules))
	for i, r := range rules {
		out[i] = r.Text
	}
	return out
}

// MarshalJSON writes the policy document ParsePolicy reads.
func (p *Policy) MarshalJSON() ([]byte, error) {
	return json.Marshal(document{
		Version: p.Version, Mode: p.Mode,
		HardConstraints: texts(p.HardConstraints), Restrictions: texts(p.Restrictions),
		Deny: texts(p.Deny), Ask: texts(p.Ask), Allow: texts(p.Allow),
		Grants: p.Grants, AdditionalDirectories: p.AdditionalDirectories,
		Sandbox: sandboxDoc(p.Sandbox),
	})
}

func sandboxDoc(s SandboxPolicy) *SandboxPolicy {
	if s.isZero() {
		return nil
	}
	return &s
}

// UnmarshalJSON parses a policy document with ParsePolicy.
func (p *Policy) UnmarshalJSON(b []byte) error {
	parsed, err := ParsePolicy(b)
	if err != nil {
		return err
	}
	*p = *parsed
	return nil
}

// Digest fingerprints everything in the policy that can change a decision
// (mode, every rule, grants, directories): "sha256:<hex>" of its canonical
// JSON. Revalidation compares it, so a mode or rule change invalidates a
// decision even if someone forgot to bump the version.
func (p *Policy) Digest() string {
	b, err := p.MarshalJSON()
	if err == nil {
		b, err = jcs.Transform(b)
	}
	if err != nil {
		// Marshalling plain strings cannot fail; a fingerprint that never
		// matches is the safe answer if it ever does.
		return "unavailable:" + err.Error()
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// validate checks a policy built in code rather than parsed.
func (p *Policy) validate() error {
	if p == nil {
		return errors.New("no policy")
	}
	if err := ids.Validate("policy version", p.Version); err != nil {
		return err
	}
	if !p.Mode.Valid() {
		return fmt.Errorf("policy %s: unknown mode %q", p.Version, p.Mode)
	}
	for _, list := range [][]Rule{p.HardConstraints, p.Restrictions, p.Deny, p.Ask, p.Allow} {
		for _, r := range list {
			if r.Text == "" || r.Tool == "" {
				return fmt.Errorf("policy %s: a rule was not built with ParseRule", p.Version)
			}
		}
	}
	sp := p.Sandbox
	if probs := sp.check(p.Allow); len(probs) > 0 {
		return fmt.Errorf("policy %s: %s: %s", p.Version, probs[0].field, probs[0].msg)
	}
	return nil
}
