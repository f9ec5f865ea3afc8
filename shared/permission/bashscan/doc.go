// Package bashscan analyses a Bash command as a whole program, so that the
// permission engine and the risk reviewer judge every command it can run and
// not a prefix of its text.
//
// Analyze parses the complete input with mvdan.cc/sh/v3/syntax (Bash
// dialect) and extracts every simple command wherever it appears: in
// pipelines, lists (&&, ||, ;, &), subshells, blocks, if/while/for/case
// bodies, function bodies, command substitutions ($(...) and `...`),
// process substitutions (<(...), >(...)), here-document bodies, redirection
// targets and parameter-expansion defaults. Scripts handed to a shell as a
// literal (bash -c '...', sh -c, su -c, trap '...', watch '...') are parsed
// in turn, up to MaxNesting levels. Every redirection is recorded with the
// path it reads or writes.
//
// What a command may become at run time is described honestly:
//
//   - A Word is Static when its value is fully known before run time (quotes
//     removed, no parameter expansion, command or arithmetic substitution,
//     ANSI-C or locale quoting). Unquoted pathname patterns (*, ?, [..]) and
//     brace expressions keep Static but set Glob: their text is known, their
//     expansion depends on the file system.
//   - A Word's Pattern is what the word can turn into: its literal text with
//     Wild wherever the value is computed or expanded by the shell. Patterns
//     answer "could this command match that rule?" (see Intersect), which
//     is the question deny and ask rules need.
//   - A Command is Opaque when what it runs cannot be known from the text:
//     a computed command name ($CMD args), eval, a shell -c with a computed
//     script, source of a computed file, or a nested script that does not
//     parse or nests too deep.
//   - Invocations lists the command's own words and every command line a
//     wrapper may run (sudo, env, nice, timeout, xargs, find -exec, ...).
//     For wrappers it over-approximates: every later word that is not an
//     option is a possible start of the wrapped command. Over-approximation
//     is used only to find possible matches (deny, ask, risk), never to allow.
//
// Input larger than MaxBytes is refused with *TooLargeError and input that
// does not parse with *SyntaxError: the caller must treat such input as
// unreviewable, never judge a prefix of it.
//
// This package only reads text. It never executes anything, never touches
// the file system and never decides a permission: it reports what the program
// contains, and the permission engine and reviewers decide.
package bashscan
