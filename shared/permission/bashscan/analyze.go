package bashscan

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"
	"unicode/utf8"

	shexpand "mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// Analyze parses src as one Bash program and extracts every command and
// redirection in it. Input over MaxBytes is a *TooLargeError; input that
// does not parse (or is not UTF-8) is a *SyntaxError. It never panics.
func Analyze(src string) (*Program, error) {
	if len(src) > MaxBytes {
		return nil, &TooLargeError{Size: len(src), Limit: MaxBytes}
	}
	if !utf8.ValidString(src) {
		return nil, &SyntaxError{Msg: "input is not valid UTF-8"}
	}
	if strings.ContainsRune(src, 0) {
		return nil, &SyntaxError{Msg: "input contains a NUL byte"}
	}
	f, err := parse(src)
	if err != nil {
		return nil, err
	}
	a := &analyzer{prog: &Program{Source: src}, leaves: map[*syntax.Stmt]PipeStage{}}
	a.walkScript(f, script{src: src, parent: -1, via: ViaTop})
	a.finish()
	return a.prog, nil
}

func parse(src string) (f *syntax.File, err error) {
	defer func() {
		// The parser is not expected to panic; if it ever does, the input is
		// unreviewable, never a crash of the caller.
		if r := recover(); r != nil {
			f, err = nil, &SyntaxError{Msg: fmt.Sprintf("parser failure: %v", r)}
		}
	}()
	p := syntax.NewParser(syntax.Variant(syntax.LangBash))
	f, err = p.Parse(strings.NewReader(src), "")
	if err == nil {
		return f, nil
	}
	var pe syntax.ParseError
	if errors.As(err, &pe) {
		return nil, &SyntaxError{Pos: posOf(pe.Pos), Msg: pe.Text}
	}
	var le syntax.LangError
	if errors.As(err, &le) {
		return nil, &SyntaxError{Pos: posOf(le.Pos), Msg: le.Feature + " is not Bash"}
	}
	return nil, &SyntaxError{Msg: err.Error()}
}

// script is one parsed text: the program itself or a literal script a
// command hands to a shell.
type script struct {
	src    string
	parent int
	via    Via
	depth  int
	pipes  []PipeStage
	fn     string
	pos    *Pos // nested scripts report the position of the command that runs them
	bg     bool
}

type frame struct {
	node  syntax.Node
	cmd   int // command recorded for this node (or its statement), -1 if none
	subst Via // set on CmdSubst/ProcSubst frames
	pipe  *PipeStage
	fn    string
}

type analyzer struct {
	prog     *Program
	leaves   map[*syntax.Stmt]PipeStage
	nextPipe int
	// braced counts the words brace expansion made in the whole program
	// (bounded by maxBraceTotal).
	braced int
}

func (a *analyzer) walkScript(f *syntax.File, sc script) {
	var stack []frame
	syntax.Walk(f, func(n syntax.Node) bool {
		if n == nil {
			stack = stack[:len(stack)-1]
			return true
		}
		stack = append(stack, frame{node: n, cmd: -1})
		top := &stack[len(stack)-1]
		switch n := n.(type) {
		case *syntax.BinaryCmd:
			if isPipe(n) && !continuesPipe(stack) {
				id := a.nextPipe
				a.nextPipe++
				for k, leaf := range flattenPipe(n, nil) {
					a.leaves[leaf] = PipeStage{Pipeline: id, Stage: k}
				}
			}
		case *syntax.Stmt:
			if ps, ok := a.leaves[n]; ok {
				top.pipe = &ps
			}
		case *syntax.FuncDecl:
			if n.Name != nil {
				top.fn = n.Name.Value
				a.prog.Functions = append(a.prog.Functions, n.Name.Value)
			}
		case *syntax.CmdSubst:
			top.subst = ViaCommandSubst
		case *syntax.ProcSubst:
			top.subst = ViaProcessSubst
		case *syntax.CallExpr:
			c := a.callCommand(n, sc)
			if len(stack) >= 2 {
				if st, ok := stack[len(stack)-2].node.(*syntax.Stmt); ok {
					c.stdinText, c.hasStdinText = stdinScript(st, sc.src)
				}
			}
			a.record(stack, sc, c)
		case *syntax.DeclClause:
			a.record(stack, sc, declCommand(n, sc.src))
		case *syntax.TestClause:
			a.record(stack, sc, clauseCommand(KindTest, "[[", n, sc.src))
		case *syntax.ArithmCmd:
			a.record(stack, sc, clauseCommand(KindArith, "((", n, sc.src))
		case *syntax.LetClause:
			a.record(stack, sc, clauseCommand(KindArith, "let", n, sc.src))
		case *syntax.Redirect:
			a.redirect(stack, sc, n)
		}
		return true
	})
}

func isPipe(b *syntax.BinaryCmd) bool { return b.Op == syntax.Pipe || b.Op == syntax.PipeAll }

// continuesPipe: the BinaryCmd on top of the stack is an operand of an
// enclosing pipe operator, so it was already flattened with it.
func continuesPipe(stack []frame) bool {
	if len(stack) < 3 {
		return false
	}
	st, ok := stack[len(stack)-2].node.(*syntax.Stmt)
	if !ok {
		return false
	}
	b, ok := stack[len(stack)-3].node.(*syntax.BinaryCmd)
	return ok && isPipe(b) && (b.X == st || b.Y == st)
}

func flattenPipe(b *syntax.BinaryCmd, out []*syntax.Stmt) []*syntax.Stmt {
	for _, st := range []*syntax.Stmt{b.X, b.Y} {
		if inner, ok := st.Cmd.(*syntax.BinaryCmd); ok && isPipe(inner) && len(st.Redirs) == 0 && !st.Negated {
			out = flattenPipe(inner, out)
			continue
		}
		out = append(out, st)
	}
	return out
}

// record places c in its context (parent, pipelines, function, background)
// and appends it to the program. It returns the command's index.
func (a *analyzer) record(stack []frame, sc script, c Command) int {
	c.Parent, c.Via = sc.parent, sc.via
	c.Function = sc.fn
	c.Background = sc.bg
	substSeen, parentFound, fnFound := false, false, false
	// stack[len-1] is the node being recorded; walk its ancestors from the
	// innermost out.
	for i := len(stack) - 2; i >= 0; i-- {
		fr := stack[i]
		if fr.subst != "" && !substSeen {
			substSeen = true
			c.Via = fr.subst
		}
		if substSeen && !parentFound && fr.cmd >= 0 {
			c.Parent = fr.cmd
			parentFound = true
		}
		if fr.pipe != nil {
			c.Pipes = append(c.Pipes, *fr.pipe)
		}
		if fr.fn != "" && !fnFound {
			c.Function = fr.fn
			fnFound = true
		}
		if st, ok := fr.node.(*syntax.Stmt); ok && (st.Background || st.Coprocess) {
			c.Background = true
		}
	}
	c.Pipes = append(c.Pipes, sc.pipes...)
	if sc.pos != nil {
		c.Pos = *sc.pos
	}
	c.Index = len(a.prog.Commands)
	a.prog.Commands = append(a.prog.Commands, c)
	stack[len(stack)-1].cmd = c.Index
	if len(stack) >= 2 {
		if _, ok := stack[len(stack)-2].node.(*syntax.Stmt); ok {
			stack[len(stack)-2].cmd = c.Index
		}
	}
	a.nested(c.Index, sc)
	return c.Index
}

func (a *analyzer) callCommand(call *syntax.CallExpr, sc script) Command {
	c := Command{Pos: posOf(call.Pos())}
	for _, as := range call.Assigns {
		c.Assigns = append(c.Assigns, assignWord(as, sc.src))
	}
	if len(call.Args) == 0 {
		c.Kind = KindAssign
		c.expand()
		return c
	}
	c.Kind = KindSimple
	tooMany := false
	for _, w := range call.Args {
		words, ok := braceWords(w, sc.src, maxBraceTotal-a.braced)
		if len(words) > 1 {
			a.braced += len(words)
		}
		tooMany = tooMany || !ok
		c.Args = append(c.Args, words...)
	}
	c.expand()
	if why := optionPattern(c.Args); why != "" && !c.Opaque {
		c.Opaque, c.OpaqueReason = true, why
	}
	if tooMany && !c.Opaque {
		c.Opaque, c.OpaqueReason = true, fmt.Sprintf("a brace expansion makes more than %d words (or the program more than %d)", maxBraceWords, maxBraceTotal)
	}
	return c
}

// maxBraceWords bounds the words one brace expansion may make before the
// command is judged Opaque instead ({1..100000} is not enumerated).
const maxBraceWords = 64

// maxBraceTotal bounds the words brace expansion makes in one program, so
// that 64 KiB of braces cannot make the analysis slow.
const maxBraceTotal = 1024

// braceWords is w after brace expansion, as Bash performs it before any
// other expansion: "cat {README.md,/etc/shadow}" runs cat on both paths,
// "find . -{delete,print}" is "find . -delete -print". Each alternative is
// judged like a word written out. ok is false (and w is returned as one
// pattern word) when the expansion makes more than maxBraceWords words or
// more than budget.
func braceWords(w *syntax.Word, src string, budget int) ([]Word, bool) {
	one := convertWord(w, src)
	if !one.Glob || !strings.Contains(sourceText(src, w), "{") {
		return []Word{one}, true
	}
	cp := &syntax.Word{Parts: append([]syntax.WordPart(nil), w.Parts...)}
	if !syntax.SplitBraces(cp) {
		return []Word{one}, true
	}
	var out []Word
	for alt, err := range shexpand.BracesSeq(nil, cp) {
		if err != nil || len(out) == maxBraceWords || len(out) >= budget {
			return []Word{one}, false
		}
		cw := convertWord(alt, src)
		cw.Pos = one.Pos
		if !cw.Static {
			cw.Text = one.Text
		}
		out = append(out, cw)
	}
	if len(out) == 0 {
		return []Word{one}, true
	}
	return out, true
}

// optionPattern: an option word with pattern characters in its name
// ("-del*", "-delet?", "-delet[e]", "--pr?=sh") is expanded by the shell
// against the file names in the directory, so it may become any option (a
// file named "-delete" is enough). Such a command is Opaque: never
// allowed, a possible match of every deny rule and of every executing or
// deleting option of the program model.
func optionPattern(args []Word) string {
	for _, w := range args[1:] {
		if !w.Static || !w.Glob || !strings.HasPrefix(w.Text, "-") {
			continue
		}
		name := w.Text
		if strings.HasPrefix(name, "--") {
			name, _, _ = strings.Cut(name, "=")
		}
		if strings.ContainsAny(name, "*?[") {
			return fmt.Sprintf("the option word %s has pattern characters, so the shell may expand it to any option (a file named like an option is enough)", w.Text)
		}
	}
	return ""
}

func assignWord(as *syntax.Assign, src string) Word {
	if as.Name == nil {
		if as.Value != nil {
			return convertWord(as.Value, src)
		}
		return Word{Text: sourceText(src, as), Pattern: Pattern{Wild}, Pos: posOf(as.Pos())}
	}
	name := as.Name.Value
	if as.Naked && as.Index == nil {
		return literalWord(name, posOf(as.Pos()))
	}
	if as.Index != nil || as.Array != nil {
		// Array elements and indexes are evaluated (arithmetically) at run time.
		return Word{Text: sourceText(src, as), Pattern: append(Literal(name+"="), Wild), Pos: posOf(as.Pos())}
	}
	op := "="
	if as.Append {
		op = "+="
	}
	w := Word{Text: name + op, Static: true, Pattern: Literal(name + op), Pos: posOf(as.Pos())}
	if as.Value != nil {
		v := convertWord(as.Value, src)
		w.Static = v.Static
		w.Glob = v.Glob
		w.Pattern = append(w.Pattern, v.Pattern...)
		if v.Static {
			w.Text += v.Text
		} else {
			w.Text = sourceText(src, as)
		}
	}
	return w
}

func declCommand(d *syntax.DeclClause, src string) Command {
	c := Command{Kind: KindDecl, Pos: posOf(d.Pos())}
	name := "declare"
	if d.Variant != nil {
		name = d.Variant.Value
	}
	c.Args = []Word{literalWord(name, posOf(d.Pos()))}
	for _, as := range d.Args {
		c.Assigns = append(c.Assigns, assignWord(as, src))
	}
	if name == "export" || name == "declare" || name == "typeset" || name == "local" || name == "readonly" {
		// export GIT_PAGER='...': later commands run the value.
		c.Invocations = varScripts(c.Assigns)
	}
	return c
}

// expand fills in what the command may run, write and execute inline (the
// wrappers of invocation.go and the program model of programs.go).
func (c *Command) expand() {
	x := expand(c.Args, c.Assigns)
	c.Invocations = x.invs
	c.InlineCode = x.inline
	c.effectPaths = x.paths
	c.readsStdin = x.readsStdin
	c.scriptFiles = x.scriptFiles
	if x.opaque != "" {
		c.Opaque, c.OpaqueReason = true, x.opaque
	}
	c.suffixes = wrapperSuffixes(c.Invocations)
}

var number = regexp.MustCompile(`^[0-9]+$`)

// clauseCommand records [[ ]], (( )) and let. They run no program, but
// arithmetic evaluation of a computed value can run commands (a[$(cmd)]),
// so a clause that expands anything, or evaluates a name arithmetically, is
// Computed.
func clauseCommand(kind Kind, name string, n syntax.Node, src string) Command {
	c := Command{Kind: kind, Pos: posOf(n.Pos())}
	arith := kind == KindArith
	syntax.Walk(n, func(m syntax.Node) bool {
		switch m := m.(type) {
		case *syntax.ParamExp, *syntax.CmdSubst, *syntax.ArithmExp, *syntax.ProcSubst:
			c.Computed = true
			return false
		case *syntax.BinaryTest:
			switch m.Op {
			case syntax.TsEql, syntax.TsNeq, syntax.TsLeq, syntax.TsGeq, syntax.TsLss, syntax.TsGtr:
				for _, operand := range []syntax.TestExpr{m.X, m.Y} {
					if w, ok := operand.(*syntax.Word); !ok || !number.MatchString(w.Lit()) {
						c.Computed = true
					}
				}
			}
		case *syntax.Lit:
			if arith && !number.MatchString(m.Value) {
				c.Computed = true
			}
		}
		return true
	})
	text := sourceText(src, n)
	if text == "" {
		text = name
	}
	w := Word{Text: text, Static: !c.Computed, Pattern: Literal(text), Pos: posOf(n.Pos())}
	if c.Computed {
		w.Pattern = Pattern{Wild}
	}
	c.Args = []Word{w}
	return c
}

func (a *analyzer) redirect(stack []frame, sc script, r *syntax.Redirect) {
	cmd := -1
	if len(stack) >= 2 {
		if _, ok := stack[len(stack)-2].node.(*syntax.Stmt); ok {
			cmd = stack[len(stack)-2].cmd
		}
	}
	if r.Word == nil {
		return
	}
	target := convertWord(r.Word, sc.src)
	var access Access
	switch r.Op {
	case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.AppClob,
		syntax.RdrAll, syntax.RdrAllClob, syntax.AppAll, syntax.AppAllClob:
		access = AccessWrite
	case syntax.RdrIn:
		access = AccessRead
	case syntax.RdrInOut:
		access = AccessReadWrite
	case syntax.DplOut, syntax.DplIn:
		// >&2, <&0, >&- duplicate or close descriptors; ">& file" writes.
		if target.Static && (target.Text == "-" || number.MatchString(strings.TrimSuffix(target.Text, "-"))) {
			return
		}
		if r.Op == syntax.DplIn {
			access = AccessRead
		} else {
			access = AccessWrite
		}
	default:
		// Here-documents and here-strings name no file; their bodies are
		// walked for substitutions like any other word.
		return
	}
	pos := posOf(r.Pos())
	if sc.pos != nil {
		pos = *sc.pos
	}
	a.prog.Redirects = append(a.prog.Redirects, Redirect{
		Command: cmd, Op: r.Op.String(), Target: target, Access: access, Pos: pos,
	})
}

// nested parses the literal scripts command i hands to a shell and records
// their commands with Via == ViaScript and Parent == i. A computed or
// unparseable script, or one nested too deep, makes command i Opaque.
func (a *analyzer) nested(i int, sc script) {
	opaque := func(why string) {
		c := &a.prog.Commands[i]
		if !c.Opaque {
			c.Opaque, c.OpaqueReason = true, why
		}
	}
	a.stdinCommands(i, sc)
	invs := a.prog.Commands[i].Invocations
	for k, iv := range invs {
		if !iv.Script {
			name := iv.Name()
			switch {
			case len(iv.Words) > 0 && name == "":
				opaque("the command name is computed at run time")
				continue
			case name == "eval":
				opaque("eval runs text computed at run time")
				continue
			case (name == "source" || name == ".") && len(iv.Words) > 1 && !iv.Words[1].Static:
				opaque("the sourced file is computed at run time")
				continue
			}
		}
		if !iv.Script && iv.Name() == "alias" && k == 0 {
			a.aliasValues(i, iv, sc)
			continue
		}
		words, ok, why := scriptOf(iv)
		if !ok {
			continue
		}
		if why != "" {
			opaque(why)
			continue
		}
		if sc.depth+1 > MaxNesting {
			opaque("scripts nest deeper than the analysis follows")
			continue
		}
		text := JoinText(words)
		f, err := parse(text)
		if err != nil {
			opaque("the script it runs does not parse: " + err.Error())
			continue
		}
		c := &a.prog.Commands[i]
		if k == 0 && iv.Wrapper == "" && c.Kind == KindSimple {
			// Only a script the command itself runs makes it a pure script
			// runner; a wrapper in front (sudo bash -c) still matters.
			c.Script = true
		}
		if !iv.Script {
			c.Invocations[k].runsScript = true
		}
		pos := c.Pos
		if sc.pos != nil {
			pos = *sc.pos
		}
		a.walkScript(f, script{
			src: text, parent: i, via: ViaScript, depth: sc.depth + 1,
			pipes: append([]PipeStage(nil), c.Pipes...), fn: c.Function, pos: &pos, bg: c.Background,
		})
	}
}

// stdinScript returns the literal text a here-document or here-string
// gives the statement's standard input (the last one wins, as in Bash).
// ok is false when there is none or it is computed.
func stdinScript(st *syntax.Stmt, src string) (text string, ok bool) {
	for _, r := range st.Redirs {
		switch r.Op {
		case syntax.Hdoc, syntax.DashHdoc:
			text, ok = "", false
			if r.Hdoc == nil {
				ok = true
				continue
			}
			quoted := r.Word != nil && !isPlainLit(r.Word)
			var b strings.Builder
			lit := true
			for _, part := range r.Hdoc.Parts {
				l, isLit := part.(*syntax.Lit)
				if !isLit || (!quoted && strings.ContainsRune(l.Value, '\\')) {
					lit = false
					break
				}
				b.WriteString(l.Value)
			}
			text, ok = b.String(), lit
		case syntax.WordHdoc:
			text, ok = "", false
			if r.Word != nil {
				if w := convertWord(r.Word, src); w.Static && !w.Glob {
					text, ok = w.Text+"\n", true
				}
			}
		case syntax.RdrIn, syntax.RdrInOut:
			text, ok = "", false
		}
	}
	return text, ok
}

// isPlainLit reports whether a here-document delimiter is unquoted (its
// body is expanded).
func isPlainLit(w *syntax.Word) bool {
	if len(w.Parts) != 1 {
		return false
	}
	l, ok := w.Parts[0].(*syntax.Lit)
	return ok && !strings.ContainsRune(l.Value, '\\')
}

// stdinCommands parses the literal here-document or here-string a shell
// (or source /dev/stdin) reads its script from, so the commands in it meet
// the deny rules. The command stays Opaque: it is never allowed.
func (a *analyzer) stdinCommands(i int, sc script) {
	c := &a.prog.Commands[i]
	if !c.readsStdin || !c.hasStdinText || sc.depth+1 > MaxNesting {
		return
	}
	f, err := parse(c.stdinText)
	if err != nil {
		return
	}
	pos := c.Pos
	a.walkScript(f, script{
		src: c.stdinText, parent: i, via: ViaScript, depth: sc.depth + 1,
		pipes: append([]PipeStage(nil), c.Pipes...), fn: c.Function, pos: &pos, bg: c.Background,
	})
}

// aliasValues parses the literal values of alias definitions (alias
// ll='ls -l') as scripts, so their commands are judged; a computed value
// makes the alias opaque.
func (a *analyzer) aliasValues(i int, iv Invocation, sc script) {
	for _, w := range iv.Words[1:] {
		if w.Option() {
			continue
		}
		if !w.Static {
			c := &a.prog.Commands[i]
			if !c.Opaque {
				c.Opaque, c.OpaqueReason = true, "the alias is defined with a value computed at run time"
			}
			continue
		}
		_, value, ok := strings.Cut(w.Text, "=")
		if !ok || strings.TrimSpace(value) == "" {
			continue
		}
		c := &a.prog.Commands[i]
		if sc.depth+1 > MaxNesting {
			c.Opaque, c.OpaqueReason = true, "scripts nest deeper than the analysis follows"
			continue
		}
		f, err := parse(value)
		if err != nil {
			// An alias value may be a fragment ("alias x='if true;'"):
			// what it becomes depends on where it is used.
			c.Opaque, c.OpaqueReason = true, "the alias value is not a complete command: "+err.Error()
			continue
		}
		pos := c.Pos
		a.walkScript(f, script{
			src: value, parent: i, via: ViaScript, depth: sc.depth + 1,
			pipes: append([]PipeStage(nil), c.Pipes...), fn: c.Function, pos: &pos, bg: c.Background,
		})
	}
}

// aliasesExpanded reports whether aliases may be expanded in the program:
// shopt -s expand_aliases (or shell options computed at run time), or a
// shell started interactive (-i) or with -O expand_aliases.
func (p *Program) aliasesExpanded() bool {
	for i := range p.Commands {
		c := &p.Commands[i]
		for _, iv := range c.Invocations {
			if iv.Script || len(iv.Words) == 0 {
				continue
			}
			name := iv.Name()
			args := iv.Words[1:]
			switch {
			case name == "shopt":
				if !AllStatic(args) {
					return true
				}
				for _, w := range args {
					if w.Text == "expand_aliases" {
						return true
					}
				}
			case shells[name]:
				for k, w := range args {
					if !w.Static {
						break
					}
					if (w.Text == "-O" || w.Text == "+O") && k+1 < len(args) && (!args[k+1].Static || args[k+1].Text == "expand_aliases") {
						return true
					}
					if shortFlag(w, 'i') {
						return true
					}
				}
			}
		}
	}
	return false
}

// markAliases makes alias definitions opaque where aliases are expanded:
// any later word may then run the alias's text, which the analysis cannot
// place. A shopt or set -o with a computed option is opaque too.
func (a *analyzer) markAliases() {
	p := a.prog
	on := p.aliasesExpanded()
	for i := range p.Commands {
		c := &p.Commands[i]
		if c.Kind != KindSimple || c.Opaque {
			continue
		}
		switch c.BaseName() {
		case "alias":
			if on && len(c.Args) > 1 {
				c.Opaque, c.OpaqueReason = true, "aliases are expanded here (shopt -s expand_aliases or an interactive shell), so later words may run the alias's text"
			}
		case "shopt":
			if !AllStatic(c.Args) {
				c.Opaque, c.OpaqueReason = true, "it sets shell options computed at run time"
			}
		case "set":
			for k, w := range c.Args[1:] {
				if w.Static && (w.Text == "-o" || w.Text == "+o") && k+2 < len(c.Args) && !c.Args[k+2].Static {
					c.Opaque, c.OpaqueReason = true, "it sets shell options computed at run time"
				}
			}
		}
	}
}

// markWrittenScripts makes a command opaque when it runs a script file (sh
// FILE, source FILE, python3 FILE, ./FILE) that the same command line
// writes (echo ... > FILE, curl -o FILE, cp, tar -x): the script exists only
// at run time.
func (a *analyzer) markWrittenScripts() {
	var written []PathRef
	for _, r := range a.prog.pathRefs {
		// A program built by the go tool runs the project's own code,
		// like go run; anything else written and then run is new code.
		if r.Access.Writes() && r.Path.Static && !HarmlessDevice(r.Path.Text) && !strings.HasPrefix(r.Source, "go ") {
			written = append(written, r)
		}
	}
	if len(written) == 0 {
		return
	}
	for i := range a.prog.Commands {
		c := &a.prog.Commands[i]
		if c.Opaque || c.Kind != KindSimple {
			continue
		}
		files := c.scriptFiles
		for _, iv := range c.Invocations {
			if !iv.Script && len(iv.Words) > 0 && iv.Words[0].Static && strings.Contains(iv.Words[0].Text, "/") {
				files = append(files, iv.Words[0])
			}
		}
		for _, f := range files {
			if !f.Static {
				continue
			}
			for _, w := range written {
				if w.Command == i && len(c.scriptFiles) == 0 {
					continue // a program writing its own output file
				}
				p, q := path.Clean(f.Text), path.Clean(w.Path.Text)
				if p == q || (w.Recursive || w.Path.Glob) && (q == "." || strings.HasPrefix(p, strings.TrimSuffix(q, "*")) || strings.HasPrefix(p, q+"/")) {
					c.Opaque, c.OpaqueReason = true, fmt.Sprintf("it runs %s, which this command line writes first (%s)", f.Text, w.Source)
					break
				}
			}
			if c.Opaque {
				break
			}
		}
	}
}

// finish marks calls of functions the program declares and collects the
// program's paths and directory changes.
func (a *analyzer) finish() {
	a.markAliases()
	defer func() {
		a.prog.pathRefs = a.prog.collectPathRefs()
		a.prog.dirChanges = a.prog.collectDirChanges()
		a.markWrittenScripts()
	}()
	if len(a.prog.Functions) == 0 {
		return
	}
	declared := map[string]bool{}
	for _, f := range a.prog.Functions {
		declared[f] = true
	}
	for i := range a.prog.Commands {
		c := &a.prog.Commands[i]
		if c.Kind == KindSimple && declared[c.Name()] {
			c.Kind = KindFuncCall
		}
	}
}
