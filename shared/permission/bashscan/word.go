package bashscan

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Pos is a 1-based position in the analysed text.
type Pos struct {
	Line int `json:"line"`
	Col  int `json:"col"`
}

func posOf(p syntax.Pos) Pos {
	if !p.IsValid() {
		return Pos{}
	}
	return Pos{Line: int(p.Line()), Col: int(p.Col())}
}

// Word is one shell word as the analysis sees it.
type Word struct {
	// Text is the value with quotes removed when Static; otherwise the
	// word's source text (for display only).
	Text string `json:"text"`
	// Static: the value is fully known before run time.
	Static bool `json:"static"`
	// Glob: unquoted pathname-expansion or brace characters; the shell
	// expands the word against the file system.
	Glob bool `json:"glob,omitempty"`
	// Tilde: an unquoted leading ~ that the shell expands to a home directory.
	Tilde bool `json:"tilde,omitempty"`
	// Pattern is what the word may become (Wild where computed or expanded).
	Pattern Pattern `json:"-"`
	Pos     Pos     `json:"pos"`
}

// Option reports whether the word is a static option (starts with '-').
func (w Word) Option() bool { return w.Static && strings.HasPrefix(w.Text, "-") }

// literalWord builds a static word from a known value (used for words that a
// wrapper or assignment splitting produces).
func literalWord(s string, pos Pos) Word {
	return Word{Text: s, Static: true, Pattern: Literal(s), Pos: pos}
}

// convertWord describes w. src is the text the word was parsed from (for the
// source text of computed words).
func convertWord(w *syntax.Word, src string) Word {
	out := Word{Static: true, Pos: posOf(w.Pos())}
	var text strings.Builder
	for i, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			if i == 0 && strings.HasPrefix(p.Value, "~") {
				out.Tilde = true
			}
			unquotedLit(p.Value, &text, &out)
		case *syntax.SglQuoted:
			if p.Dollar {
				// $'...' decodes ANSI-C escapes ($'\x72m' is "rm"): treat the
				// value as computed rather than re-implement the decoder.
				out.Static = false
				out.Pattern = append(out.Pattern, Wild)
				continue
			}
			text.WriteString(p.Value)
			out.Pattern = append(out.Pattern, []rune(p.Value)...)
		case *syntax.DblQuoted:
			if p.Dollar {
				// $"..." is translated through the locale at run time.
				out.Static = false
				out.Pattern = append(out.Pattern, Wild)
				continue
			}
			for _, in := range p.Parts {
				if lit, ok := in.(*syntax.Lit); ok {
					v := unescapeDouble(lit.Value)
					text.WriteString(v)
					out.Pattern = append(out.Pattern, []rune(v)...)
					continue
				}
				out.Static = false
				out.Pattern = appendWild(out.Pattern)
			}
		default:
			// Parameter expansion, command/arithmetic/process substitution,
			// extended glob, brace expansion: computed at run time.
			out.Static = false
			out.Pattern = appendWild(out.Pattern)
		}
	}
	if out.Static {
		out.Text = text.String()
	} else {
		out.Text = sourceText(src, w)
	}
	return out
}

func appendWild(p Pattern) Pattern {
	if len(p) > 0 && p[len(p)-1] == Wild {
		return p
	}
	return append(p, Wild)
}

// unquotedLit appends the value of an unquoted literal: a backslash quotes
// the next character, backslash-newline disappears, and unescaped glob or
// brace characters make the rest of the literal a wildcard in the pattern.
func unquotedLit(v string, text *strings.Builder, w *Word) {
	rs := []rune(v)
	globbing := false
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		if r == '\\' && i+1 < len(rs) {
			i++
			if rs[i] == '\n' {
				continue
			}
			text.WriteRune(rs[i])
			if !globbing {
				w.Pattern = append(w.Pattern, rs[i])
			}
			continue
		}
		text.WriteRune(r)
		if globbing {
			continue
		}
		switch r {
		case '*', '?':
			w.Glob = true
			w.Pattern = appendWild(w.Pattern)
		case '[':
			// A bracket expression: the rest of this literal may expand to
			// anything (an over-approximation).
			w.Glob = true
			globbing = true
			w.Pattern = appendWild(w.Pattern)
		case '{':
			if !braceExpansion(rs[i+1:]) {
				w.Pattern = append(w.Pattern, r)
				continue
			}
			w.Glob = true
			globbing = true
			w.Pattern = appendWild(w.Pattern)
		default:
			w.Pattern = append(w.Pattern, r)
		}
	}
}

// braceExpansion reports whether the text after a '{' forms a brace
// expansion ({a,b} or {1..3}); "{}" and "{x}" stay literal, as in Bash.
func braceExpansion(rest []rune) bool {
	depth := 0
	for i, r := range rest {
		switch r {
		case '\\':
			return true // escapes inside: do not guess, treat as an expansion
		case '{':
			depth++
		case '}':
			if depth == 0 {
				inner := string(rest[:i])
				return strings.Contains(inner, ",") || strings.Contains(inner, "..")
			}
			depth--
		}
	}
	return false
}

// unescapeDouble removes the backslashes that are special inside double
// quotes: before $, `, ", \ and newline (where both disappear).
func unescapeDouble(v string) string {
	if !strings.Contains(v, `\`) {
		return v
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] == '\\' && i+1 < len(v) {
			switch v[i+1] {
			case '$', '`', '"', '\\':
				b.WriteByte(v[i+1])
				i++
				continue
			case '\n':
				i++
				continue
			}
		}
		b.WriteByte(v[i])
	}
	return b.String()
}

func sourceText(src string, n syntax.Node) string {
	start, end := n.Pos(), n.End()
	if !start.IsValid() || !end.IsValid() {
		return ""
	}
	s, e := int(start.Offset()), int(end.Offset())
	if s < 0 || e > len(src) || s > e {
		return ""
	}
	return src[s:e]
}

// wordsPattern joins word patterns with single spaces.
func wordsPattern(words []Word) Pattern {
	var p Pattern
	for i, w := range words {
		if i > 0 {
			p = append(p, ' ')
		}
		p = append(p, w.Pattern...)
	}
	return p
}

// JoinText joins the words' texts with single spaces.
func JoinText(words []Word) string {
	parts := make([]string, len(words))
	for i, w := range words {
		parts[i] = w.Text
	}
	return strings.Join(parts, " ")
}

// AllStatic reports whether every word is static.
func AllStatic(words []Word) bool {
	for _, w := range words {
		if !w.Static {
			return false
		}
	}
	return true
}
