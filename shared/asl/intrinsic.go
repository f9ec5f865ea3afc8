package asl

import (
	"crypto/md5"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	mrand "math/rand/v2"
	"strings"
)

// Intrinsic is a parsed intrinsic function call such as
// States.Format('Hello {}', $.name). Arguments are literals, paths or nested
// calls.
type Intrinsic struct {
	Name string
	args []intrinsicArg
	text string
}

func (c *Intrinsic) String() string { return c.text }

type intrinsicArg struct {
	literal   any // string, json.Number, bool or nil
	isLiteral bool
	// fmtParts: for a string literal, the text split at unescaped {} (only
	// used when the literal is the template of States.Format).
	fmtParts []string
	path     *Path
	call     *Intrinsic
}

// arity: minimum and maximum argument count (-1: unbounded).
var intrinsicArity = map[string][2]int{
	"States.Format":         {1, -1},
	"States.StringToJson":   {1, 1},
	"States.JsonToString":   {1, 1},
	"States.Array":          {0, -1},
	"States.ArrayPartition": {2, 2},
	"States.ArrayContains":  {2, 2},
	"States.ArrayRange":     {3, 3},
	"States.ArrayGetItem":   {2, 2},
	"States.ArrayLength":    {1, 1},
	"States.ArrayUnique":    {1, 1},
	"States.Base64Encode":   {1, 1},
	"States.Base64Decode":   {1, 1},
	"States.Hash":           {2, 2},
	"States.JsonMerge":      {3, 3},
	"States.MathRandom":     {2, 3},
	"States.MathAdd":        {2, 2},
	"States.StringSplit":    {2, 2},
	"States.UUID":           {0, 0},
}

// IsIntrinsic reports whether a string is written as an intrinsic function call.
func IsIntrinsic(s string) bool { return strings.HasPrefix(s, "States.") }

// ParseIntrinsic parses an intrinsic function call. Unknown functions, wrong
// argument counts and literal arguments of the wrong type are refused here,
// at load, rather than when an execution reaches the state.
func ParseIntrinsic(s string) (*Intrinsic, error) {
	c, rest, err := scanCall(s)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(rest) != "" {
		return nil, fmt.Errorf("intrinsic function %q: unexpected %q after the call", s, rest)
	}
	return c, nil
}

func scanCall(s string) (*Intrinsic, string, error) {
	orig := s
	open := strings.IndexByte(s, '(')
	if open < 0 {
		return nil, s, fmt.Errorf("intrinsic function %q: missing (", orig)
	}
	name := s[:open]
	arity, ok := intrinsicArity[name]
	if !ok {
		return nil, s, fmt.Errorf("intrinsic function %q is not supported", name)
	}
	c := &Intrinsic{Name: name}
	s = strings.TrimLeft(s[open+1:], " \t\r\n")
	if strings.HasPrefix(s, ")") {
		s = s[1:]
	} else {
		for {
			var a intrinsicArg
			var err error
			a, s, err = scanArg(s)
			if err != nil {
				return nil, s, fmt.Errorf("intrinsic function %s: %w", name, err)
			}
			c.args = append(c.args, a)
			s = strings.TrimLeft(s, " \t\r\n")
			if strings.HasPrefix(s, ",") {
				s = strings.TrimLeft(s[1:], " \t\r\n")
				continue
			}
			if strings.HasPrefix(s, ")") {
				s = s[1:]
				break
			}
			return nil, s, fmt.Errorf("intrinsic function %s: expected , or ) at %q", name, s)
		}
	}
	c.text = orig[:len(orig)-len(s)]
	n := len(c.args)
	if n < arity[0] || (arity[1] >= 0 && n > arity[1]) {
		want := fmt.Sprintf("%d", arity[0])
		switch {
		case arity[1] < 0:
			want = fmt.Sprintf("at least %d", arity[0])
		case arity[1] != arity[0]:
			want = fmt.Sprintf("%d to %d", arity[0], arity[1])
		}
		return nil, s, fmt.Errorf("intrinsic function %s takes %s arguments, got %d", name, want, n)
	}
	if err := c.checkLiterals(); err != nil {
		return nil, s, fmt.Errorf("intrinsic function %s: %w", name, err)
	}
	return c, s, nil
}

func scanArg(s string) (intrinsicArg, string, error) {
	switch {
	case s == "":
		return intrinsicArg{}, s, fmt.Errorf("missing argument")
	case s[0] == '\'':
		return scanStringLiteral(s)
	case s[0] == '$':
		p, rest, err := scanPath(s, true)
		if err != nil {
			return intrinsicArg{}, rest, err
		}
		return intrinsicArg{path: p}, rest, nil
	case strings.HasPrefix(s, "States."):
		c, rest, err := scanCall(s)
		if err != nil {
			return intrinsicArg{}, rest, err
		}
		return intrinsicArg{call: c}, rest, nil
	}
	end := strings.IndexAny(s, ",) \t\r\n")
	if end < 0 {
		end = len(s)
	}
	tok, rest := s[:end], s[end:]
	switch tok {
	case "true":
		return intrinsicArg{literal: true, isLiteral: true}, rest, nil
	case "false":
		return intrinsicArg{literal: false, isLiteral: true}, rest, nil
	case "null":
		return intrinsicArg{literal: nil, isLiteral: true}, rest, nil
	}
	v, err := DecodeJSON([]byte(tok))
	if err != nil || !isNumber(v) {
		return intrinsicArg{}, rest, fmt.Errorf("argument %q is not a string, number, boolean, null, path or intrinsic function", tok)
	}
	return intrinsicArg{literal: v, isLiteral: true}, rest, nil
}

// scanStringLiteral reads '...' with the escapes \' \{ \} \\. The literal
// is kept both unescaped and split at unescaped {} for States.Format.
func scanStringLiteral(s string) (intrinsicArg, string, error) {
	var b strings.Builder
	parts := []string{}
	var part strings.Builder
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch c {
		case '\\':
			if i+1 >= len(s) {
				return intrinsicArg{}, "", fmt.Errorf("unterminated string literal")
			}
			n := s[i+1]
			switch n {
			case '\'', '{', '}', '\\':
			default:
				return intrinsicArg{}, "", fmt.Errorf("invalid escape \\%c in string literal (only \\' \\{ \\} \\\\ are allowed)", n)
			}
			b.WriteByte(n)
			part.WriteByte(n)
			i++
		case '\'':
			parts = append(parts, part.String())
			return intrinsicArg{literal: b.String(), isLiteral: true, fmtParts: parts}, s[i+1:], nil
		case '{':
			if i+1 < len(s) && s[i+1] == '}' {
				parts = append(parts, part.String())
				part.Reset()
				b.WriteString("{}")
				i++
				continue
			}
			b.WriteByte(c)
			part.WriteByte(c)
		default:
			b.WriteByte(c)
			part.WriteByte(c)
		}
	}
	return intrinsicArg{}, "", fmt.Errorf("unterminated string literal")
}

// checkLiterals refuses literal arguments whose type can never be right.
func (c *Intrinsic) checkLiterals() error {
	lit := func(i int) (any, bool) {
		if i < len(c.args) && c.args[i].isLiteral {
			return c.args[i].literal, true
		}
		return nil, false
	}
	wantString := func(i int) error {
		if v, ok := lit(i); ok {
			if _, isStr := v.(string); !isStr {
				return fmt.Errorf("argument %d must be a string, got %s", i+1, typeName(v))
			}
		}
		return nil
	}
	wantInt := func(i int) error {
		if v, ok := lit(i); ok {
			if _, isInt := integer(v); !isInt {
				return fmt.Errorf("argument %d must be an integer, got %s", i+1, mustEncode(v))
			}
		}
		return nil
	}
	var errs []error
	switch c.Name {
	case "States.Format":
		if c.args[0].isLiteral {
			if _, ok := c.args[0].literal.(string); !ok {
				return fmt.Errorf("the template must be a string")
			}
			if holes := len(c.args[0].fmtParts) - 1; holes != len(c.args)-1 {
				return fmt.Errorf("the template has %d {} placeholders but %d values are given", holes, len(c.args)-1)
			}
		}
	case "States.StringToJson", "States.Base64Encode", "States.Base64Decode":
		errs = append(errs, wantString(0))
	case "States.StringSplit":
		errs = append(errs, wantString(0), wantString(1))
	case "States.Hash":
		if err := wantString(1); err != nil {
			return err
		}
		if v, ok := lit(1); ok {
			if _, ok := hashAlgorithms[v.(string)]; !ok {
				return fmt.Errorf("hash algorithm %q is not one of MD5, SHA-1, SHA-256, SHA-384, SHA-512", v)
			}
		}
	case "States.ArrayPartition", "States.ArrayGetItem":
		errs = append(errs, wantInt(1))
	case "States.ArrayRange":
		errs = append(errs, wantInt(0), wantInt(1), wantInt(2))
	case "States.MathAdd":
		errs = append(errs, wantInt(0), wantInt(1))
	case "States.MathRandom":
		errs = append(errs, wantInt(0), wantInt(1), wantInt(2))
	case "States.JsonMerge":
		if v, ok := lit(2); ok && v != false {
			return fmt.Errorf("the third argument (deep merge) must be false: Step Functions only merges shallowly")
		}
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// usesTaskToken reports whether the call reads $$.Task.Token.
func (c *Intrinsic) usesTaskToken() bool {
	for _, a := range c.args {
		if a.path != nil && isTaskTokenPath(a.path) {
			return true
		}
		if a.call != nil && a.call.usesTaskToken() {
			return true
		}
	}
	return false
}

// Eval evaluates the call against the state's data and context object.
// Failures are *RuntimeError (States.Runtime).
func (c *Intrinsic) Eval(data any, ctx ContextFunc) (any, error) {
	vals := make([]any, len(c.args))
	for i, a := range c.args {
		switch {
		case a.isLiteral:
			vals[i] = a.literal
		case a.path != nil:
			v, err := a.path.Get(data, ctx)
			if err != nil {
				return nil, c.fail("%v", err.(*RuntimeError).Cause)
			}
			vals[i] = v
		default:
			v, err := a.call.Eval(data, ctx)
			if err != nil {
				return nil, err
			}
			vals[i] = v
		}
	}
	return c.apply(vals)
}

func (c *Intrinsic) fail(format string, args ...any) *RuntimeError {
	return runtimeErrorf("The function '%s' had the following error: %s", c.text, fmt.Sprintf(format, args...))
}

var hashAlgorithms = map[string]func() hash.Hash{
	"MD5": md5.New, "SHA-1": sha1.New, "SHA-256": sha256.New, "SHA-384": sha512.New384, "SHA-512": sha512.New,
}

// maxArrayRange is the largest array States.ArrayRange may build (AWS: 1000).
const maxArrayRange = 1000

func (c *Intrinsic) apply(v []any) (any, error) {
	str := func(i int) (string, error) {
		s, ok := v[i].(string)
		if !ok {
			return "", c.fail("argument %d must be a string, got %s", i+1, typeName(v[i]))
		}
		return s, nil
	}
	arr := func(i int) ([]any, error) {
		a, ok := v[i].([]any)
		if !ok {
			return nil, c.fail("argument %d must be an array, got %s", i+1, typeName(v[i]))
		}
		return a, nil
	}
	integ := func(i int) (int64, error) {
		n, ok := integer(v[i])
		if !ok {
			return 0, c.fail("argument %d must be an integer, got %s", i+1, mustEncode(v[i]))
		}
		return n, nil
	}
	switch c.Name {
	case "States.Format":
		return c.format(v)
	case "States.StringToJson":
		s, err := str(0)
		if err != nil {
			return nil, err
		}
		out, err := DecodeJSON([]byte(s))
		if err != nil {
			return nil, c.fail("%v", err)
		}
		return out, nil
	case "States.JsonToString":
		return mustEncode(v[0]), nil
	case "States.Array":
		return append([]any{}, v...), nil
	case "States.ArrayPartition":
		a, err := arr(0)
		if err != nil {
			return nil, err
		}
		size, err := integ(1)
		if err != nil {
			return nil, err
		}
		if size <= 0 {
			return nil, c.fail("the chunk size must be positive, got %d", size)
		}
		out := []any{}
		for i := 0; i < len(a); i += int(size) {
			end := min(i+int(size), len(a))
			out = append(out, append([]any{}, a[i:end]...))
		}
		return out, nil
	case "States.ArrayContains":
		a, err := arr(0)
		if err != nil {
			return nil, err
		}
		for _, x := range a {
			if equalJSON(x, v[1]) {
				return true, nil
			}
		}
		return false, nil
	case "States.ArrayRange":
		start, err := integ(0)
		if err != nil {
			return nil, err
		}
		end, err := integ(1)
		if err != nil {
			return nil, err
		}
		step, err := integ(2)
		if err != nil {
			return nil, err
		}
		if step == 0 {
			return nil, c.fail("the step must not be 0")
		}
		out := []any{}
		for i := start; (step > 0 && i <= end) || (step < 0 && i >= end); i += step {
			if len(out) == maxArrayRange {
				return nil, c.fail("the range has more than %d items", maxArrayRange)
			}
			out = append(out, jsonInt(i))
		}
		return out, nil
	case "States.ArrayGetItem":
		a, err := arr(0)
		if err != nil {
			return nil, err
		}
		i, err := integ(1)
		if err != nil {
			return nil, err
		}
		if i < 0 || i >= int64(len(a)) {
			return nil, c.fail("index %d is out of bounds for an array of %d items", i, len(a))
		}
		return a[i], nil
	case "States.ArrayLength":
		a, err := arr(0)
		if err != nil {
			return nil, err
		}
		return jsonInt(int64(len(a))), nil
	case "States.ArrayUnique":
		a, err := arr(0)
		if err != nil {
			return nil, err
		}
		out := []any{}
	next:
		for _, x := range a {
			for _, y := range out {
				if equalJSON(x, y) {
					continue next
				}
			}
			out = append(out, x)
		}
		return out, nil
	case "States.Base64Encode":
		s, err := str(0)
		if err != nil {
			return nil, err
		}
		return base64.StdEncoding.EncodeToString([]byte(s)), nil
	case "States.Base64Decode":
		s, err := str(0)
		if err != nil {
			return nil, err
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, c.fail("not valid base64: %v", err)
		}
		return string(b), nil
	case "States.Hash":
		alg, err := str(1)
		if err != nil {
			return nil, err
		}
		newHash, ok := hashAlgorithms[alg]
		if !ok {
			return nil, c.fail("hash algorithm %q is not one of MD5, SHA-1, SHA-256, SHA-384, SHA-512", alg)
		}
		data, isStr := v[0].(string)
		if !isStr {
			data = mustEncode(v[0])
		}
		h := newHash()
		h.Write([]byte(data))
		return hex.EncodeToString(h.Sum(nil)), nil
	case "States.JsonMerge":
		a, ok1 := v[0].(map[string]any)
		b, ok2 := v[1].(map[string]any)
		if !ok1 || !ok2 {
			return nil, c.fail("both arguments must be objects, got %s and %s", typeName(v[0]), typeName(v[1]))
		}
		if v[2] != false {
			return nil, c.fail("the third argument (deep merge) must be false")
		}
		out := copyObject(a)
		for k, x := range b {
			out[k] = x
		}
		return out, nil
	case "States.MathRandom":
		lo, err := integ(0)
		if err != nil {
			return nil, err
		}
		hi, err := integ(1)
		if err != nil {
			return nil, err
		}
		if hi <= lo {
			return nil, c.fail("the end (%d) must be greater than the start (%d)", hi, lo)
		}
		var r *mrand.Rand
		if len(v) == 3 {
			seed, err := integ(2)
			if err != nil {
				return nil, err
			}
			r = mrand.New(mrand.NewPCG(uint64(seed), 0))
		} else {
			var b [8]byte
			_, _ = rand.Read(b[:])
			r = mrand.New(mrand.NewPCG(binary.LittleEndian.Uint64(b[:]), 0))
		}
		return jsonInt(lo + r.Int64N(hi-lo)), nil
	case "States.MathAdd":
		a, err := integ(0)
		if err != nil {
			return nil, err
		}
		b, err := integ(1)
		if err != nil {
			return nil, err
		}
		return jsonInt(a + b), nil
	case "States.StringSplit":
		s, err := str(0)
		if err != nil {
			return nil, err
		}
		delims, err := str(1)
		if err != nil {
			return nil, err
		}
		out := []any{}
		for _, f := range strings.FieldsFunc(s, func(r rune) bool { return strings.ContainsRune(delims, r) }) {
			out = append(out, f)
		}
		return out, nil
	case "States.UUID":
		return NewUUID(), nil
	}
	return nil, c.fail("not implemented")
}

func (c *Intrinsic) format(v []any) (any, error) {
	var parts []string
	if c.args[0].isLiteral {
		parts = c.args[0].fmtParts
	} else {
		tmpl, ok := v[0].(string)
		if !ok {
			return nil, c.fail("the template must be a string, got %s", typeName(v[0]))
		}
		parts = strings.Split(tmpl, "{}")
	}
	if len(parts)-1 != len(v)-1 {
		return nil, c.fail("the template has %d {} placeholders but %d values are given", len(parts)-1, len(v)-1)
	}
	var b strings.Builder
	for i, p := range parts {
		b.WriteString(p)
		if i == len(parts)-1 {
			break
		}
		switch x := v[i+1].(type) {
		case string:
			b.WriteString(x)
		case bool, nil, json.Number:
			b.WriteString(mustEncode(x))
		default:
			if isNumber(x) {
				b.WriteString(mustEncode(x))
				break
			}
			return nil, c.fail("value %d must be a string, number, boolean or null, got %s", i+1, typeName(x))
		}
	}
	return b.String(), nil
}

// NewUUID returns a random (version 4) UUID.
func NewUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

func isTaskTokenPath(p *Path) bool {
	return p.context && len(p.steps) == 2 && p.steps[0].field == "Task" && p.steps[1].field == "Token"
}
