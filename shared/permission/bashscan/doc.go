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
//     ANSI-C or locale quoting). Unquoted pathname patterns (*, ?, [..])
//     keep Static but set Glob: their text is known, their expansion
//     depends on the file system.
//   - Brace expansion is performed as Bash performs it, before anything
//     else (mvdan.cc/sh/v3/expand): "cat {README.md,/etc/shadow}" has the
//     two arguments README.md and /etc/shadow, "find . -{delete,print}" is
//     "find . -delete -print", and each alternative is judged like a word
//     written out. A word that would expand to more than 64 words stays one
//     Glob word and its command is Opaque.
//   - An option word with pattern characters in its name (find . -del*,
//     -delet?, -delet[e], --pr?=sh) may expand to any option (a file named
//     like the option is enough): its command is Opaque. A pattern after a
//     long option's "=" is only its value (rg --glob=*.go).
//   - A Word's Pattern is what the word can turn into: its literal text with
//     Wild wherever the value is computed or expanded by the shell. Patterns
//     answer "could this command match that rule?" (see Intersect), which
//     is the question deny and ask rules need.
//   - A Command is Opaque when what it runs cannot be known from the text:
//     a computed command name ($CMD args), eval, a shell -c with a computed
//     script, source of a computed file, a nested script that does not
//     parse or nests too deep, a shell or interpreter that reads its script
//     from standard input (echo ... | sh, sh <<EOF, bash -s, bash -, bash
//     /dev/stdin, . /dev/stdin, python3 -, a bare python3, node, perl, ruby
//     or sqlite3), a script file computed at run time (bash <(...), source
//     <(...)), go generate, git -c core.hooksPath, ex mode, crontab and at,
//     find -exec or xargs -I putting their data into a script's text, an
//     alias where aliases are expanded (shopt -s expand_aliases, bash -i),
//     shell options computed at run time, a script file the same command
//     line writes first (echo ... > x.sh; sh x.sh, curl -o i.sh ...; bash
//     i.sh, tar -x ...; python3 d/setup.py), a script from a descriptor
//     (source /dev/fd/3), make -f -, enable -f, a computed BASH_ENV, a sed
//     script with the e command or the s///e flag (the command is the
//     pattern space), a vim/ex -c, --cmd or + command that may run code the
//     analysis does not parse (call system(), :terminal, :py, :lua, a
//     computed command) and an abbreviation of several modelled git long
//     options.
//     The literal here-document or
//     here-string a shell reads is still parsed, so its commands meet the
//     deny rules; literal alias values are parsed the same way.
//   - Invocations lists the command's own words and every command line a
//     wrapper may run (sudo, env, nice, timeout, xargs, busybox, ...).
//     For wrappers it over-approximates: every later word that is not an
//     option is a possible start of the wrapped command. Over-approximation
//     is used only to find possible matches (deny, ask, risk), never to allow.
//
// # The program model
//
// Allowing a program must not allow everything it can launch, write or
// delete. programs.go holds one model per well-known program (find, git,
// go, npm/npx/pnpm/yarn/bunx, pip, tar, rg, sort, less/more, man,
// vim/nvim/ex, emacs, awk/gawk, sed, xargs, env, rsync, ssh, sqlite3, zip,
// unzip, parallel, script, make, hyperfine, nix-shell, the runners uv run,
// uvx, pipx run, poetry/pipenv/pdm/hatch/rye run, bundle exec, conda run,
// direnv exec, op/doppler run, aws-vault exec, perf stat, the shells and
// the interpreters python, perl, ruby, node, php, lua, Rscript, osascript,
// gdb, ...). Each option that does more than the program's plain use
// becomes a fact:
//
//   - an executed command line is an Invocation whose Wrapper names the
//     option ("find -exec", "git bisect run", "npm exec", "rg --pre", "rg
//     --hostname-bin"); find -exec replaces {} with a path under each
//     starting point ("rm ./*");
//   - a shell command given as a value (git -c core.pager=..., git -c
//     alias.x='!...', git config alias.x ..., git submodule foreach, git
//     rebase -x, git difftool --extcmd, go test -exec, go build -toolexec,
//     go vet -vettool, tar --to-command / -I / --checkpoint-action=exec= /
//     -F, npm exec -c, man -P, ssh -o ProxyCommand=, rsync -e, the shell
//     command of a vim/ex command (:!cmd, :%!filter, :r !cmd), and
//     assignments of variables that hold commands: GIT_PAGER, EDITOR,
//     LESSOPEN, GIT_SSH_COMMAND, ...) is a Script invocation, parsed like
//     sh -c; every git -c key outside a short harmless list counts;
//   - a delete (find -delete, git clean without -n, tar --remove-files) is
//     a Synthetic invocation "rm -rf <paths>"; its forms also include rm,
//     rm -r, rm -f, rm -r -f, ..., so a deny of any usual rm pattern
//     catches it;
//   - a file written (find -fprint/-fprintf/-fls, sort -o, git log/diff
//     --output, git format-patch -o, git config --global, go build -o, go
//     env -w, tar -cf FILE, tar -x under -C or the working directory, cp -t,
//     pip --target, unzip -d, sqlite3's database) is a PathRef with
//     AccessWrite; Recursive marks a whole tree (rm -r, tar -x, git clean);
//   - inline code (python3 -c, perl -e / -lne, ruby -e, node -e / --eval,
//     php -r, lua -e, Rscript -e, vim -c / --cmd / +cmd, less +!cmd, emacs
//     --eval, gawk -l, an awk program calling system(), piping or printing
//     to a file, a sed script with the e command, the s///e flag or w, an
//     sqlite3 dot-command) is an InlineCode with the flag that introduced it.
//
// Git accepts any unambiguous prefix of a long option: --upload-pa=cmd is
// --upload-pack=cmd. The git model writes out a prefix of one modelled long
// option before judging the words, and a prefix of several is Opaque.
//
// Plain uses stay plain: git status, git log --oneline, find . -name
// '*.go', go test ./..., go run, npm test, npm run build, pip install, tar
// -czf out.tgz src, rg foo, python3 script.py, python3 -m pytest.
//
// A glob in a command word (/usr/bin/r[m], r?) keeps its wildcard in
// Pattern and in the base-name form, so a rule for every program it may
// expand to is a possible match.
//
// Input larger than MaxBytes is refused with *TooLargeError and input that
// does not parse with *SyntaxError: the caller must treat such input as
// unreviewable, never judge a prefix of it.
//
// This package only reads text. It never executes anything, never touches
// the file system and never decides a permission: it reports what the program
// contains, and the permission engine and reviewers decide.
package bashscan
