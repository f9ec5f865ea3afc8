package permission

import (
	"errors"
	"fmt"
	"strings"

	"github.com/openprogram/lifecycle/shared/permission/bashscan"
)

// bashEval is the analysis of a Bash call.
type bashEval struct {
	prog *bashscan.Program
	err  error // *bashscan.TooLargeError or *bashscan.SyntaxError
	// forms[i] are the forms of command i, computed once per call.
	forms [][]bashscan.Pattern
}

func newBashEval(command string) *bashEval {
	prog, err := bashscan.Analyze(command)
	b := &bashEval{prog: prog, err: err}
	if err == nil {
		b.forms = make([][]bashscan.Pattern, len(prog.Commands))
		for i := range prog.Commands {
			b.forms[i] = prog.Commands[i].Forms()
		}
	}
	return b
}

// hit is a rule that matches a call.
type hit struct {
	rule Rule
	// what is the command or path the rule matched.
	what string
	// possible: the call might match (computed or unanalysable input), it
	// was not shown to match.
	possible bool
}

// matchConservative finds a rule that matches the call, or failing that
// one that might match it (computed input: hit.possible). Deny-like lists
// (hard constraints, restrictions, deny, ask) use it: input that cannot be
// shown not to match is never allowed.
func (x *evalCtx) matchConservative(rules []Rule) (hit, bool) {
	var possible *hit
	for _, r := range rules {
		h, ok := x.matchRule(r)
		if !ok {
			continue
		}
		if !h.possible {
			return h, true
		}
		if possible == nil {
			possible = &h
		}
	}
	if possible != nil {
		return *possible, true
	}
	return hit{}, false
}

// matchRule matches one rule conservatively.
func (x *evalCtx) matchRule(r Rule) (hit, bool) {
	if x.view.fam == famBash {
		return x.matchBashRule(r)
	}
	if !r.AppliesTo(x.req.Call.Tool) {
		return hit{}, false
	}
	switch r.kind {
	case kindWhole, kindMCP:
		return hit{rule: r, what: x.req.Call.Tool}, true
	case kindPath:
		pat, _ := x.scope.rulePattern(r.path) // placeable: checked in prepare
		var possible *hit
		for _, p := range x.view.paths {
			names, ok := x.scope.Names(p) // as written and where it leads
			for _, abs := range names {
				if pathMatch(pat, abs, true) {
					return hit{rule: r, what: abs}, true
				}
			}
			if !ok {
				possible = &hit{rule: r, what: p, possible: true}
			}
		}
		if possible != nil {
			return *possible, true
		}
	case kindDomain:
		if hostMatch(r, x.view.host, true) {
			return hit{rule: r, what: x.view.host}, true
		}
	}
	return hit{}, false
}

func hostMatch(r Rule, host string, conservative bool) bool {
	if host == "" {
		return false
	}
	sub := strings.HasSuffix(host, "."+r.domain)
	if r.domainWildcard {
		return sub || (conservative && host == r.domain)
	}
	return host == r.domain || (conservative && sub)
}

// matchBashRule matches one rule against every command and path of a Bash
// program. Input that could not be analysed matches only whole-tool rules:
// the caller asks a person about it (SourceAnalysis). An opaque command (what
// it runs cannot be known: eval, $CMD, a shell reading its script from
// standard input) is a possible match of every Bash pattern rule, so a deny
// or hard constraint that might match it is named and it is never allowed.
func (x *evalCtx) matchBashRule(r Rule) (hit, bool) {
	b := x.bash
	if r.kind == kindWhole && r.AppliesTo("Bash") {
		return hit{rule: r, what: "Bash"}, true
	}
	if b.err != nil {
		return hit{}, false
	}
	var possible *hit
	if r.kind == kindBash {
		for i := range b.prog.Commands {
			c := &b.prog.Commands[i]
			for _, f := range b.forms[i] {
				for _, alt := range r.bash {
					if !bashscan.Intersect(alt, f) {
						continue
					}
					h := hit{rule: r, what: c.Text(), possible: !covers(alt, f)}
					if !h.possible {
						return h, true
					}
					if possible == nil {
						possible = &h
					}
				}
			}
		}
	}
	if r.kind == kindPath {
		pat, _ := x.scope.rulePattern(r.path)
		for _, ref := range b.prog.PathRefs() {
			if !r.appliesToBashPath(ref.Access) {
				continue
			}
			what := ref.Path.Text + " (" + ref.Source + ")"
			cands, exact := x.scope.BashPath(b.prog, ref.Path)
			if len(cands) == 0 && possible == nil {
				possible = &hit{rule: r, what: what, possible: true}
			}
			for _, cand := range cands {
				matched, sure := false, exact
				switch {
				case ref.Path.Glob:
					matched = mayMatchUnder(pat, cand)
				case pathMatch(pat, cand, true):
					matched = true
				case ref.Recursive && mayMatchUnder(pat, cand):
					// rm -rf ~ may delete ~/.ssh: a possible match.
					matched, sure = true, false
				}
				if !matched {
					continue
				}
				h := hit{rule: r, what: what, possible: !sure}
				if !h.possible {
					return h, true
				}
				if possible == nil {
					possible = &h
				}
			}
		}
	}
	if possible == nil && r.kind == kindBash {
		if c, ok := b.prog.Opaque(); ok {
			possible = &hit{rule: r, what: c.Text() + " (" + c.OpaqueReason + ")", possible: true}
		}
	}
	if possible != nil {
		return *possible, true
	}
	return hit{}, false
}

// covers reports whether every text the command form f may become matches
// the rule pattern alt: alt is literal text ending in one wildcard ("rm *")
// and f starts with that text literally ("rm ./*", "rm $X"), or alt and f
// are the same literal text. Intersect without covers is a possible match.
func covers(alt, f bashscan.Pattern) bool {
	if !f.HasWild() {
		return true // Intersect on a literal form is exact matching
	}
	if len(alt) == 0 || alt[len(alt)-1] != bashscan.Wild {
		return false
	}
	prefix := alt[:len(alt)-1]
	if prefix.HasWild() || len(prefix) > len(f) {
		return false
	}
	for i, r := range prefix {
		if f[i] != r {
			return false
		}
	}
	return true
}

// matchAllow finds the allow rule that allows the call exactly. For Bash,
// every command of the program must be allowed (by a rule or because it
// has no effect of its own) and every redirection must stay in the project
// scope or be allowed by a Read/Edit rule; ok is false otherwise, with why.
func (x *evalCtx) matchAllow(rules []Rule) (hit, bool, string) {
	if x.view.fam == famBash {
		return x.matchBashAllow(rules)
	}
	for _, r := range rules {
		if !r.AppliesTo(x.req.Call.Tool) {
			continue
		}
		switch r.kind {
		case kindWhole, kindMCP:
			return hit{rule: r, what: x.req.Call.Tool}, true, ""
		case kindPath:
			pat, _ := x.scope.rulePattern(r.path)
			all := len(x.view.paths) > 0
			for _, p := range x.view.paths {
				abs, ok := x.scope.Resolve(p)
				if !ok || !pathMatch(pat, abs, false) {
					all = false
					break
				}
			}
			if all {
				return hit{rule: r, what: strings.Join(x.view.paths, ", ")}, true, ""
			}
		case kindDomain:
			if hostMatch(r, x.view.host, false) {
				return hit{rule: r, what: x.view.host}, true, ""
			}
		}
	}
	return hit{}, false, "no allow rule matches"
}

func (x *evalCtx) matchBashAllow(rules []Rule) (hit, bool, string) {
	prog := x.bash.prog
	var used []string
	var first Rule
	note := func(r Rule) {
		if len(used) == 0 {
			first = r
		}
		if !contains(used, r.Text) {
			used = append(used, r.Text)
		}
	}
	for i := range prog.Commands {
		c := &prog.Commands[i]
		if effectless(c) {
			continue
		}
		if !c.Static() {
			return hit{}, false, fmt.Sprintf("%q is computed at run time, so no allow rule can match it", c.Text())
		}
		// The command's own text, then every command line it may run
		// (wrappers, find -exec, synthetic deletes, ...): each needs an
		// allow rule of its own. Scripts are judged through their commands.
		for k, iv := range c.Invocations {
			own := k == 0 && c.Kind == bashscan.KindSimple
			if !own && (iv.Script || iv.RunsScript()) {
				continue
			}
			text := bashscan.JoinText(iv.Words)
			if own {
				text = c.Text()
			}
			r, ok, why := allowRuleFor(rules, text, iv, inlineOf(c, k))
			if !ok {
				return hit{}, false, why
			}
			note(r)
		}
		if c.Kind != bashscan.KindSimple {
			r, ok, why := allowRuleFor(rules, c.Text(), bashscan.Invocation{}, nil)
			if !ok {
				return hit{}, false, why
			}
			note(r)
		}
	}
	for _, ref := range prog.PathRefs() {
		if ok, why := x.pathAllowed(ref, rules); !ok {
			return hit{}, false, why
		}
	}
	if len(used) == 0 {
		return hit{}, false, "no allow rule matches"
	}
	h := hit{rule: first, what: prog.Source}
	if len(used) > 1 {
		h.rule.Text = strings.Join(used, " + ")
	}
	return h, true, ""
}

// inlineOf returns the inline code command c runs through invocation k.
func inlineOf(c *bashscan.Command, k int) []bashscan.InlineCode {
	var out []bashscan.InlineCode
	for _, ic := range c.InlineCode {
		if ic.Invocation == k {
			out = append(out, ic)
		}
	}
	return out
}

// allowRuleFor finds the allow rule that covers one command line: a
// whole-tool Bash rule, or a Bash rule matching its text whose literal text
// names the flag of every inline code it runs (Bash(python3 -c *) covers
// python3 -c '...'; Bash(python3 *) does not). A command name that is a
// glob (/usr/bin/r[m]) is covered by no pattern rule.
func allowRuleFor(rules []Rule, text string, iv bashscan.Invocation, inline []bashscan.InlineCode) (Rule, bool, string) {
	lit := bashscan.Literal(text)
	glob := len(iv.Words) > 0 && iv.Words[0].Glob
	label := ""
	if iv.Wrapper != "" {
		label = " (" + iv.Wrapper + ")"
	}
	matchedWithoutFlag := false
	for _, r := range rules {
		if !r.AppliesTo("Bash") {
			continue
		}
		if r.kind == kindWhole {
			return r, true, ""
		}
		if r.kind != kindBash || glob {
			continue
		}
		for _, alt := range r.bash {
			if !bashscan.Intersect(alt, lit) {
				continue
			}
			if !namesFlags(alt, inline) {
				matchedWithoutFlag = true
				continue
			}
			return r, true, ""
		}
	}
	switch {
	case glob:
		return Rule{}, false, fmt.Sprintf("the command name %q is a pattern the shell expands at run time, so no allow rule can match it", iv.Words[0].Text)
	case matchedWithoutFlag:
		ic := inline[0]
		return Rule{}, false, fmt.Sprintf("%q runs inline code (%s); a rule for the program does not cover it, only one that names %s, like Bash(%s %s *)",
			text, ic.Flag, ic.Flag, iv.Name(), ic.Flag)
	}
	return Rule{}, false, fmt.Sprintf("no allow rule matches %q%s", text, label)
}

// namesFlags reports whether a rule pattern contains the flag of every
// inline code as a literal word.
func namesFlags(alt bashscan.Pattern, inline []bashscan.InlineCode) bool {
	for _, ic := range inline {
		if !hasWord(alt, []rune(ic.Flag)) {
			return false
		}
	}
	return true
}

func hasWord(p bashscan.Pattern, w []rune) bool {
	if len(w) == 0 {
		return false
	}
	for i := 0; i+len(w) <= len(p); i++ {
		if (i > 0 && p[i-1] != ' ') || (i+len(w) < len(p) && p[i+len(w)] != ' ') {
			continue
		}
		same := true
		for j, r := range w {
			if p[i+j] != r {
				same = false
				break
			}
		}
		if same {
			return true
		}
	}
	return false
}

// effectless: commands that are allowed when every command they run is:
// scripts handed to a shell and calls of the program's own functions (their
// commands are judged one by one), static [[ ]] / (( )) clauses, and
// static assignments and declarations of ordinary variables.
func effectless(c *bashscan.Command) bool {
	if !c.Static() {
		return false
	}
	switch c.Kind {
	case bashscan.KindTest, bashscan.KindArith, bashscan.KindFuncCall:
		return true
	case bashscan.KindAssign, bashscan.KindDecl:
		for _, a := range c.Assigns {
			if bashscan.SensitiveAssignment(a) {
				return false
			}
		}
		return true
	}
	return c.Script && len(c.Assigns) == 0
}

// pathAllowed: under an allow rule, a Bash program may write only inside
// the project scope (or where an Edit allow rule says), and read through a
// redirection only from a path known before run time. File arguments of
// reading commands are not restricted here: the allow rule covers them, and
// Read deny rules still apply to them.
func (x *evalCtx) pathAllowed(ref bashscan.PathRef, rules []Rule) (bool, string) {
	t := ref.Path
	if t.Static && bashscan.HarmlessDevice(t.Text) {
		return true, ""
	}
	redirect := strings.HasPrefix(ref.Source, "redirection")
	if !ref.Access.Writes() {
		if !redirect {
			return true, ""
		}
		if _, exact := x.scope.BashPath(x.bash.prog, t); !exact {
			return false, fmt.Sprintf("%s %s: the path cannot be known before run time", ref.Source, t.Text)
		}
		return true, ""
	}
	if x.scope.contained(x.bash.prog, t) {
		return true, ""
	}
	cands, exact := x.scope.BashPath(x.bash.prog, t)
	if !exact {
		return false, fmt.Sprintf("%s writes %s, which cannot be shown to stay in the project scope", ref.Source, t.Text)
	}
	abs := cands[0]
	for _, r := range rules {
		if r.kind == kindWhole && r.Tool == "Edit" {
			return true, ""
		}
		if r.kind != kindPath || r.Tool != "Edit" {
			continue
		}
		if pat, ok := x.scope.rulePattern(r.path); ok && pathMatch(pat, abs, false) {
			return true, ""
		}
	}
	return false, fmt.Sprintf("%s writes %s, outside the project scope", ref.Source, abs)
}

// unanalysable explains why a Bash call cannot be reviewed at all.
func (b *bashEval) unanalysable() (Code, string, bool) {
	var tl *bashscan.TooLargeError
	var se *bashscan.SyntaxError
	switch {
	case errors.As(b.err, &tl):
		return CodeOversized, tl.Error() + "; split it into smaller commands", true
	case errors.As(b.err, &se):
		return CodeUnparseable, se.Error(), true
	case b.err != nil:
		return CodeUnparseable, b.err.Error(), true
	}
	if c, ok := b.prog.Opaque(); ok {
		return CodeOpaque, fmt.Sprintf("%q: %s", c.Text(), c.OpaqueReason), true
	}
	return "", "", false
}
