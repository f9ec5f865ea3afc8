package bashscan

import "strings"

// readOnly are programs that only read, given no disqualifying option.
var readOnly = set("ls", "cat", "tac", "head", "tail", "wc", "grep", "egrep", "fgrep", "rg", "ag", "pwd",
	"echo", "printf", "which", "type", "file", "stat", "du", "df", "tree", "sort", "cut", "diff", "cmp",
	"basename", "dirname", "realpath", "readlink", "whoami", "id", "uname", "true", "false", "test", "[",
	"jq", "nl", "md5sum", "sha1sum", "sha256sum", "sha512sum", "shasum", "less", "more", "rev", "column",
	"comm", "expand", "fold", "od", "hexdump", "strings", "printenv", "date", "find", "git", "cd", "pushd",
	"popd", "dirs", "tr", "seq", "sleep", "whereis", "uniq", "env", "locate")

// gitReadOnly are git subcommands that only read the repository.
var gitReadOnly = set("status", "log", "diff", "show", "rev-parse", "ls-files", "ls-tree", "blame",
	"describe", "shortlog", "grep", "cat-file", "show-ref", "for-each-ref", "rev-list", "merge-base")

// ReadOnly reports whether the command only reads: a read-only program
// with no option that writes or runs something else, a static test or
// arithmetic clause, a static assignment or declaration, or a script runner
// or function call (whose commands are judged on their own).
func (c *Command) ReadOnly() bool {
	if c.Opaque || !c.Static() {
		return false
	}
	switch c.Kind {
	case KindTest, KindArith, KindAssign, KindDecl, KindFuncCall:
		return true
	}
	if c.Script {
		return true
	}
	if len(c.Invocations) > 1 {
		return false // a wrapper runs something else
	}
	name := c.BaseName()
	if !readOnly[name] {
		return false
	}
	args := c.Args[1:]
	has := func(prefixes ...string) bool {
		for _, a := range args {
			for _, p := range prefixes {
				if a.Text == p || (strings.HasPrefix(p, "--") && strings.HasPrefix(a.Text, p+"=")) {
					return true
				}
			}
		}
		return false
	}
	switch name {
	case "find":
		return !has("-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls")
	case "sort":
		return !has("-o", "--output", "--compress-program")
	case "rg":
		// --pre and --hostname-bin run a program; -z runs decompressors.
		if has("--pre", "--pre-glob", "--hostname-bin", "--search-zip") {
			return false
		}
		for _, a := range args {
			if a.Option() && !strings.HasPrefix(a.Text, "--") && strings.Contains(a.Text, "z") {
				return false
			}
		}
		return true
	case "tree":
		return !has("-o", "-R")
	case "file":
		return !has("-C", "--compile")
	case "uniq":
		return len(operands(args)) <= 1
	case "date":
		return !has("-s", "--set")
	case "env":
		return len(operands(args)) == 0
	case "git":
		return gitReadOnlyArgs(args)
	}
	return true
}

func gitReadOnlyArgs(args []Word) bool {
	// Skip global options; -C and -c take values.
	i := 0
	for i < len(args) && args[i].Option() {
		t := args[i].Text
		switch {
		case t == "-c" || strings.HasPrefix(t, "-c") || strings.HasPrefix(t, "--config-env"):
			return false // sets configuration, e.g. core.pager to a command
		case t == "-p" || t == "--paginate" || strings.HasPrefix(t, "--exec-path="):
			return false // starts a pager, or runs git's programs from elsewhere
		case t == "-C":
			i++
		}
		i++
	}
	if i >= len(args) {
		return true
	}
	sub := args[i].Text
	rest := args[i+1:]
	if gitReadOnly[sub] {
		for _, a := range rest {
			t := a.Text
			if strings.HasPrefix(t, "--output") || t == "--ext-diff" || strings.HasPrefix(t, "--textconv") ||
				t == "--filters" || strings.HasPrefix(t, "--exec") || t == "--paginate" ||
				strings.HasPrefix(t, "--open-files-in-pager") || strings.HasPrefix(t, "-O") {
				return false // writes a file, or runs a program or a pager
			}
		}
		return true
	}
	switch sub {
	case "branch", "tag", "remote", "stash", "worktree":
		for _, a := range rest {
			switch a.Text {
			case "-a", "-r", "-v", "-vv", "--all", "--remotes", "--list", "-l", "--show-current":
			case "list":
				if sub != "stash" && sub != "worktree" {
					return false
				}
			default:
				return false
			}
		}
		return true
	case "config":
		for _, a := range rest {
			if a.Option() {
				switch a.Text {
				case "--get", "--get-all", "--list", "-l", "--global", "--local", "--system", "--show-origin":
				default:
					return false
				}
			}
		}
		return len(operands(rest)) <= 1
	}
	return false
}

// ReadOnly reports whether the whole program only reads: every command is
// read-only and no redirection writes a file.
func (p *Program) ReadOnly() bool {
	for i := range p.Commands {
		if !p.Commands[i].ReadOnly() {
			return false
		}
	}
	for _, r := range p.Redirects {
		if r.Access.Writes() && !(r.Target.Static && HarmlessDevice(r.Target.Text)) {
			return false
		}
	}
	return true
}
