package bashscan

import (
	"fmt"
	"path"
	"strings"
)

// MaxBytes is the reviewable bound: a command longer than 64 KiB is not
// analysed at all (so never allowed from a prefix). 64 KiB is far above any
// command a person reviews in a prompt, and keeps every analysis and
// pattern match below a few milliseconds.
const MaxBytes = 64 << 10

// MaxNesting bounds how deep literal scripts handed to a shell (bash -c
// '...') are parsed. A command nested deeper is Opaque.
const MaxNesting = 4

// TooLargeError: the input exceeds MaxBytes.
type TooLargeError struct {
	Size, Limit int
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("command is %d bytes, more than the reviewable %d bytes", e.Size, e.Limit)
}

// SyntaxError: the input does not parse as Bash.
type SyntaxError struct {
	Pos Pos
	Msg string
}

func (e *SyntaxError) Error() string {
	if e.Pos.Line == 0 {
		return "bash syntax: " + e.Msg
	}
	return fmt.Sprintf("bash syntax at line %d, column %d: %s", e.Pos.Line, e.Pos.Col, e.Msg)
}

// Via says how a command is reached.
type Via string

const (
	// ViaTop: a statement of the program (also inside pipelines, lists,
	// subshells, blocks and control flow).
	ViaTop Via = ""
	// ViaCommandSubst: inside $(...) or `...`; its output becomes words of
	// the enclosing command (Parent).
	ViaCommandSubst Via = "command_substitution"
	// ViaProcessSubst: inside <(...) or >(...) of the enclosing command.
	ViaProcessSubst Via = "process_substitution"
	// ViaScript: inside a literal script handed to a shell (bash -c '...',
	// su -c, trap, watch) by the command Parent.
	ViaScript Via = "script"
)

// Kind classifies a recorded command.
type Kind string

const (
	// KindSimple is an ordinary command: a program, builtin or function call.
	KindSimple Kind = "simple"
	// KindAssign is a statement made only of variable assignments (X=1).
	KindAssign Kind = "assign"
	// KindDecl is export/declare/local/readonly/typeset/nameref.
	KindDecl Kind = "decl"
	// KindTest is [[ ... ]]; KindArith is (( ... )) or let.
	KindTest  Kind = "test"
	KindArith Kind = "arith"
	// KindFuncCall is a call of a function the program itself declares: it
	// runs that function's body, whose commands are recorded separately.
	KindFuncCall Kind = "func_call"
)

// Command is one command the program can run.
type Command struct {
	Index int `json:"index"`
	Kind  Kind
	// Assigns are the NAME=value words before the command (or the whole
	// statement for KindAssign and the arguments of KindDecl).
	Assigns []Word
	// Args are the command's words: Args[0] is the name.
	Args []Word
	Pos  Pos
	Via  Via
	// Parent is the index of the command whose words contain this one
	// (substitutions) or that runs it as a script; -1 at the top.
	Parent int
	// Function is the name of the enclosing function declaration, if any.
	Function string
	// Pipes are the pipelines (a|b|c) the command belongs to, innermost
	// first, each with the stage (from 0 at the left) that contains it.
	Pipes []PipeStage
	// Background: started with & (or as a coprocess).
	Background bool
	// Opaque: what runs cannot be known from the text; OpaqueReason says why.
	Opaque       bool
	OpaqueReason string
	// Script: the command only runs a literal script (bash -c '...') whose
	// commands are recorded with Via == ViaScript and Parent == Index.
	Script bool
	// Invocations are the command lines this command may run: its own words
	// first, then those a wrapper (sudo, env, xargs, ...) or an option of the
	// program (find -exec, git -c core.pager=..., go test -exec, tar
	// --to-command, find -delete as a synthetic rm -rf, ...) may run. See
	// programs.go for the model of each program.
	Invocations []Invocation
	// InlineCode lists the program code an interpreter is given on the
	// command line (python3 -c, perl -e, node --eval, vim -c, an awk or sed
	// program that runs commands or writes files). A rule naming only the
	// program never covers it.
	InlineCode []InlineCode
	// Computed: a test or arithmetic clause that expands parameters or
	// substitutions (arithmetic evaluation of a computed value can run
	// commands), so it is not static.
	Computed bool

	suffixes [][]Word
	// effectPaths are the files the program model says the command writes
	// (find -fprint, sort -o, tar -x under -C, git --output, ...).
	effectPaths []PathRef
	// readsStdin: a shell (or source) that reads its script from standard
	// input; stdinText is the literal here-document or here-string given
	// to it, if any.
	readsStdin   bool
	stdinText    string
	hasStdinText bool
	// scriptFiles are the script files a shell, interpreter or source
	// runs (bash FILE, python3 FILE, . FILE).
	scriptFiles []Word
}

// InlineCode is program text an interpreter runs straight from the command
// line.
type InlineCode struct {
	// Invocation is the index in Command.Invocations of the command line
	// that runs the code.
	Invocation int
	// Flag is the option that introduced the code, as written ("-c", "-e",
	// "--eval", "+!make"); for programs whose code is an operand (awk, sed)
	// it is the code itself. An allow rule covers the code only when its
	// literal text contains Flag as a word.
	Flag string
	// Code is the word holding the code.
	Code Word
}

// PipeStage places a command in one pipeline.
type PipeStage struct {
	Pipeline, Stage int
}

// Invocation is one command line a command may run.
type Invocation struct {
	Words []Word
	// Wrapper is the wrapper that runs it ("sudo", "xargs", "find -exec"...),
	// empty for the command's own words.
	Wrapper string
	// Script: Words are a shell script the wrapper hands to a shell (su -c,
	// flock -c, env -S, watch, git -c core.pager=..., tar --to-command),
	// joined with spaces. Its commands are recorded as commands of their own
	// (Via == ViaScript) when it is literal; a computed script makes the
	// command Opaque.
	Script bool
	// Synthetic: the words were made by the analysis, not written in the
	// command: a delete (find -delete, git clean, tar --remove-files) is the
	// invocation "rm -rf <paths>", so rules about rm judge it.
	Synthetic bool

	// appends: the runner adds arguments known only at run time (xargs, rg
	// --pre), so the files a writer touches are unknown.
	appends bool
	// runsScript: set by the analysis when this command line only hands a
	// literal script to a shell (bash -c '...').
	runsScript bool
}

// RunsScript reports whether the command line only hands a literal script
// to a shell (bash -c '...', sudo sh -c '...'): the script's commands are
// recorded as commands of their own and judged one by one.
func (iv Invocation) RunsScript() bool { return iv.runsScript }

// Name is the static base name of the invoked program ("" when computed).
func (iv Invocation) Name() string {
	if len(iv.Words) == 0 || !iv.Words[0].Static {
		return ""
	}
	return path.Base(iv.Words[0].Text)
}

// Name is the static command name as written ("" when computed or absent).
func (c *Command) Name() string {
	if len(c.Args) == 0 || !c.Args[0].Static {
		return ""
	}
	return c.Args[0].Text
}

// BaseName is path.Base of Name ("/bin/rm" -> "rm").
func (c *Command) BaseName() string {
	n := c.Name()
	if n == "" {
		return ""
	}
	return path.Base(n)
}

// Plain reports whether the command does only its program's plain use: it
// is not opaque, runs no other command line (a wrapped command, a command
// or script an option runs, a synthetic delete, a variable holding a
// command), runs no inline code and writes no file through an option of its
// program. A script handed to a shell (bash -c '...') is plain: its
// commands are recorded and judged on their own. Redirections and file
// arguments are reported by PathRefs. A
// known-safe (read-only) analysis must require Plain: less '+!cmd', git -c
// core.pager=..., find -delete and sort -o are not plain.
func (c *Command) Plain() bool {
	if c.Opaque || len(c.InlineCode) > 0 || len(c.effectPaths) > 0 {
		return false
	}
	for k, iv := range c.Invocations {
		if k > 0 || iv.Wrapper != "" || iv.Script || iv.Synthetic {
			return false
		}
	}
	return true
}

// Static reports whether every word of the command (assignments included)
// is known before run time and the command is not opaque or computed.
func (c *Command) Static() bool {
	return !c.Opaque && !c.Computed && AllStatic(c.Assigns) && AllStatic(c.Args)
}

// Text is the command as the rules see it: assignments and words, quotes
// removed, joined by single spaces (source text for computed words).
func (c *Command) Text() string { return JoinText(c.words()) }

// words are the command's words in source order: assignments first, except
// for declarations (export A=1), whose name comes first.
func (c *Command) words() []Word {
	if c.Kind == KindDecl {
		return append(append([]Word{}, c.Args...), c.Assigns...)
	}
	return append(append([]Word{}, c.Assigns...), c.Args...)
}

// Forms are the patterns a rule is checked against to find a possible match:
// the full text, the text without leading assignments, the text with the
// program's base name (/bin/rm -> rm) and every invocation a wrapper may run.
func (c *Command) Forms() []Pattern {
	var forms []Pattern
	seen := map[string]bool{}
	push := func(p Pattern) {
		key := p.key()
		if !seen[key] {
			seen[key] = true
			forms = append(forms, p)
		}
	}
	add := func(words []Word) {
		if len(words) == 0 {
			return
		}
		push(wordsPattern(words))
		if words[0].Static && strings.Contains(words[0].Text, "/") {
			head := literalWord(path.Base(words[0].Text), words[0].Pos)
			if words[0].Glob {
				// /usr/bin/r[m]: the base name is what follows the last
				// literal slash, with the glob's wildcard kept.
				head = Word{Text: head.Text, Static: true, Glob: true, Pattern: basePattern(words[0].Pattern), Pos: words[0].Pos}
			}
			base := append([]Word{head}, words[1:]...)
			push(wordsPattern(base))
		}
	}
	if len(c.Assigns) > 0 {
		push(wordsPattern(c.words()))
	}
	for _, iv := range c.Invocations {
		if iv.Script {
			continue
		}
		add(iv.Words)
		if iv.Synthetic && len(iv.Words) > 2 {
			// A deny of "rm -r *" or "rm -f *" must catch a delete too.
			for _, flags := range deleteSpellings {
				add(append(append([]Word{literalWord("rm", iv.Words[0].Pos)}, flags...), iv.Words[2:]...))
			}
		}
	}
	for _, words := range c.suffixes {
		add(words)
	}
	return forms
}

var deleteSpellings = func() [][]Word {
	var out [][]Word
	for _, f := range [][]string{{}, {"-r"}, {"-R"}, {"-f"}, {"-fr"}, {"-rf"}, {"-Rf"}, {"-r", "-f"}, {"-f", "-r"}, {"-R", "-f"}, {"--recursive"}, {"--recursive", "--force"}, {"--force", "--recursive"}} {
		var ws []Word
		for _, x := range f {
			ws = append(ws, literalWord(x, Pos{}))
		}
		out = append(out, ws)
	}
	return out
}()

// basePattern is the part of a command word's pattern after its last
// literal slash: what a glob path like /usr/bin/r[m] may name as a base name.
func basePattern(p Pattern) Pattern {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			return append(Pattern(nil), p[i+1:]...)
		}
	}
	return p
}

// Access is how a path is used.
type Access string

const (
	AccessRead      Access = "read"
	AccessWrite     Access = "write"
	AccessReadWrite Access = "read_write"
)

// Reads reports whether the access reads the path.
func (a Access) Reads() bool { return a == AccessRead || a == AccessReadWrite }

// Writes reports whether the access writes the path.
func (a Access) Writes() bool { return a == AccessWrite || a == AccessReadWrite }

// Redirect is a redirection to or from a file (fd duplications and
// here-documents are not recorded: they name no file).
type Redirect struct {
	// Command is the simple command the redirection belongs to, or -1 when
	// it applies to a compound statement ({ ...; } > f).
	Command int
	Op      string
	Target  Word
	Access  Access
	Pos     Pos
}

// Program is the analysis of one command string.
type Program struct {
	Source    string
	Commands  []Command
	Redirects []Redirect
	// Functions are the names of functions the program declares.
	Functions []string

	// Computed once by Analyze: callers ask for them per rule and per word.
	pathRefs   []PathRef
	dirChanges []DirChange
}

// Static reports whether every command is static (no opaque command, no
// computed word). Only a static program can be allowed by a rule.
func (p *Program) Static() bool {
	for i := range p.Commands {
		if !p.Commands[i].Static() {
			return false
		}
	}
	for _, r := range p.Redirects {
		if !r.Target.Static {
			return false
		}
	}
	return true
}

// Opaque returns the first opaque command, if any.
func (p *Program) Opaque() (*Command, bool) {
	for i := range p.Commands {
		if p.Commands[i].Opaque {
			return &p.Commands[i], true
		}
	}
	return nil, false
}

// PipelineStages groups the commands of one pipeline by stage.
func (p *Program) PipelineStages(id int) [][]int {
	var stages [][]int
	for i := range p.Commands {
		for _, ps := range p.Commands[i].Pipes {
			if ps.Pipeline != id {
				continue
			}
			for len(stages) <= ps.Stage {
				stages = append(stages, nil)
			}
			stages[ps.Stage] = append(stages[ps.Stage], i)
		}
	}
	return stages
}

// Pipelines returns the ids of all pipelines.
func (p *Program) Pipelines() []int {
	seen := map[int]bool{}
	var ids []int
	for i := range p.Commands {
		for _, ps := range p.Commands[i].Pipes {
			if !seen[ps.Pipeline] {
				seen[ps.Pipeline] = true
				ids = append(ids, ps.Pipeline)
			}
		}
	}
	return ids
}

// Ancestors returns the indexes of the commands that contain command i
// (through substitutions or scripts), nearest first.
func (p *Program) Ancestors(i int) []int {
	var out []int
	for j := p.Commands[i].Parent; j >= 0 && len(out) < len(p.Commands); j = p.Commands[j].Parent {
		out = append(out, j)
	}
	return out
}
