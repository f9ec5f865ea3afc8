package bashscan

import "strings"

// Wild stands for "any text, possibly empty" inside a Pattern. It is not a
// valid Unicode code point, so it can never come from the analysed text.
const Wild rune = -1

// Pattern is literal text with Wild where anything may appear.
type Pattern []rune

// Literal makes a pattern that matches exactly s.
func Literal(s string) Pattern { return Pattern([]rune(s)) }

// String renders the pattern with "*" for Wild, for messages.
func (p Pattern) String() string {
	var b strings.Builder
	for _, r := range p {
		if r == Wild {
			b.WriteByte('*')
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// key is an exact map key: Wild becomes NUL, which Analyze never lets
// into the text.
func (p Pattern) key() string {
	var b strings.Builder
	for _, r := range p {
		if r == Wild {
			b.WriteByte(0)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// HasWild reports whether the pattern contains a wildcard.
func (p Pattern) HasWild() bool {
	for _, r := range p {
		if r == Wild {
			return true
		}
	}
	return false
}

// Intersect reports whether some text is matched by both a and b: whether a
// command that may become b could be one that a rule pattern a describes.
// When b has no wildcard this is ordinary glob matching of the text b
// against a.
//
// It is a dynamic program over the two patterns in O(len(a)*len(b)) time and
// O(len(b)) memory, with no recursion, so input size cannot blow the stack.
func Intersect(a, b Pattern) bool {
	// Literal heads and tails must agree; most rule/command pairs differ in
	// their first characters, so this settles them without the table.
	for i := 0; i < len(a) && i < len(b) && a[i] != Wild && b[i] != Wild; i++ {
		if a[i] != b[i] {
			return false
		}
	}
	for i, j := len(a)-1, len(b)-1; i >= 0 && j >= 0 && a[i] != Wild && b[j] != Wild; i, j = i-1, j-1 {
		if a[i] != b[j] {
			return false
		}
	}
	m, n := len(a), len(b)
	next := make([]bool, n+1) // row i+1
	cur := make([]bool, n+1)  // row i
	// Row m: a is exhausted; b's rest must be able to produce the empty text.
	next[n] = true
	for j := n - 1; j >= 0; j-- {
		next[j] = b[j] == Wild && next[j+1]
	}
	for i := m - 1; i >= 0; i-- {
		cur[n] = a[i] == Wild && next[n]
		for j := n - 1; j >= 0; j-- {
			switch {
			case a[i] == Wild:
				// a's wildcard ends here, or absorbs b[j] (a character or
				// whatever b's wildcard produces).
				cur[j] = next[j] || cur[j+1]
			case b[j] == Wild:
				// b's wildcard ends here, or absorbs the literal a[i].
				cur[j] = cur[j+1] || next[j]
			default:
				cur[j] = a[i] == b[j] && next[j+1]
			}
		}
		next, cur = cur, next
	}
	return next[0]
}
