package bashscan

import (
	"regexp"
	"strings"
)

// PathRef is a path the program reads or writes: a redirection target, or a
// file argument of a command whose file arguments are known (cat, rm, cp,
// tee, dd, sed -i, curl -o / -d @file, ...). The list of commands is
// deliberately small and explicit; a command not in it contributes no
// argument paths (its redirections still count).
type PathRef struct {
	// Command is the command the path belongs to (-1: a redirection of a
	// compound statement).
	Command int
	Path    Word
	Access  Access
	// Source says where the path comes from ("redirection >", "argument of
	// rm", "find -fprint", "tar -x").
	Source string
	// Recursive: the access covers everything below the path too (rm -r,
	// find -delete, tar -x under a directory, git clean).
	Recursive bool
}

var readers = set("cat", "tac", "head", "tail", "less", "more", "nl", "od", "xxd", "hexdump", "strings",
	"base64", "bat", "batcat", "wc", "sort", "uniq", "diff", "cmp", "md5sum", "sha1sum", "sha256sum",
	"sha512sum", "shasum", "file", "grep", "egrep", "fgrep", "rg", "ag", "jq", "yq", "source", ".",
	"openssl", "gpg", "cut", "paste", "column", "comm", "awk", "gawk", "perl", "python", "python3", "node", "ruby")

var writers = set("rm", "rmdir", "unlink", "shred", "touch", "mkdir", "truncate", "tee", "mv", "wipe", "srm")

// lastIsDest: the last argument is written, the others are read.
var lastIsDest = set("cp", "install", "ln", "rsync")

// ownerMode: the first argument is a mode or owner, the rest are written.
var ownerMode = set("chmod", "chown", "chgrp", "chattr", "setfacl")

func set(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// operands returns the non-option words (after a "--" everything counts).
func operands(words []Word) []Word {
	var out []Word
	opts := true
	for _, w := range words {
		if opts && w.Static && w.Text == "--" {
			opts = false
			continue
		}
		if opts && w.Option() {
			continue
		}
		out = append(out, w)
	}
	return out
}

// PathRefs lists every path the program is known to read or write.
func (p *Program) PathRefs() []PathRef { return p.pathRefs }

func (p *Program) collectPathRefs() []PathRef {
	var out []PathRef
	for _, r := range p.Redirects {
		out = append(out, PathRef{Command: r.Command, Path: r.Target, Access: r.Access, Source: "redirection " + r.Op})
	}
	for i := range p.Commands {
		c := &p.Commands[i]
		if c.Kind != KindSimple {
			continue
		}
		for _, iv := range c.Invocations {
			if iv.Script || len(iv.Words) == 0 {
				continue
			}
			for _, ref := range argPaths(iv) {
				ref.Command = i
				out = append(out, ref)
			}
		}
		for _, ref := range c.effectPaths {
			ref.Command = i
			out = append(out, ref)
		}
	}
	return out
}

// recursiveFlag reports whether rm, cp, chmod and the like were asked to
// work on whole trees.
func recursiveFlag(args []Word) bool {
	for _, w := range args {
		if !w.Static {
			continue
		}
		if w.Text == "--recursive" || shortFlag(w, 'r') || shortFlag(w, 'R') {
			return true
		}
	}
	return false
}

// targetDir finds cp/install/ln -t DIR (--target-directory=DIR) and
// returns the other words.
func targetDir(args []Word) (Word, []Word, bool) {
	for k := range args {
		if v, next, ok := optValue(args, k, "-t", "--target-directory"); ok {
			rest := append(append([]Word(nil), args[:k]...), args[next:]...)
			return v, rest, true
		}
	}
	return Word{}, nil, false
}

var ddOperand = regexp.MustCompile(`^(if|of)=(.*)$`)

func argPaths(iv Invocation) []PathRef {
	name := iv.Name()
	args := iv.Words[1:]
	src := "argument of " + name
	ref := func(w Word, a Access) PathRef { return PathRef{Path: w, Access: a, Source: src} }
	var out []PathRef
	if iv.appends && (writers[name] || lastIsDest[name] || ownerMode[name]) {
		// xargs rm, rg --pre rm: the files come from input at run time.
		out = append(out, PathRef{Path: computedWord("(names read at run time)", iv.Words[0].Pos), Access: AccessWrite, Source: src + " (" + iv.Wrapper + ")"})
	}
	switch {
	case readers[name] && name != "perl":
		for _, w := range operands(args) {
			out = append(out, ref(w, AccessRead))
		}
	case writers[name]:
		rec := (name == "rm" || name == "shred" || name == "wipe" || name == "srm") && recursiveFlag(args)
		for _, w := range operands(args) {
			r := ref(w, AccessWrite)
			r.Recursive = rec
			out = append(out, r)
		}
	case lastIsDest[name]:
		if dir, rest, ok := targetDir(args); ok {
			// cp -t DIR src...: DIR is written, the rest are read.
			out = append(out, PathRef{Path: dir, Access: AccessWrite, Source: src, Recursive: true})
			for _, w := range operands(rest) {
				out = append(out, ref(w, AccessRead))
			}
			break
		}
		ops := operands(args)
		for k, w := range ops {
			if k == len(ops)-1 && len(ops) > 1 {
				out = append(out, ref(w, AccessWrite))
			} else {
				out = append(out, ref(w, AccessRead))
			}
		}
	case ownerMode[name]:
		ops := operands(args)
		for k, w := range ops {
			if k > 0 {
				out = append(out, ref(w, AccessWrite))
			}
		}
	case name == "dd":
		for _, w := range args {
			if !w.Static {
				continue
			}
			if m := ddOperand.FindStringSubmatch(w.Text); m != nil {
				a := AccessRead
				if m[1] == "of" {
					a = AccessWrite
				}
				out = append(out, ref(literalWord(m[2], w.Pos), a))
			}
		}
	case name == "sed" || name == "perl":
		inPlace, script := false, false
		for _, w := range args {
			if w.Static && (strings.HasPrefix(w.Text, "-i") || strings.HasPrefix(w.Text, "--in-place") || (name == "perl" && strings.HasPrefix(w.Text, "-pi"))) {
				inPlace = true
			}
			if w.Static && (w.Text == "-e" || w.Text == "-f" || w.Text == "--expression") {
				script = true
			}
		}
		ops := operands(args)
		if !script && len(ops) > 0 {
			ops = ops[1:]
		}
		a := AccessRead
		if inPlace {
			a = AccessWrite
		}
		for _, w := range ops {
			out = append(out, ref(w, a))
		}
	case name == "curl" || name == "wget":
		out = append(out, transferPaths(name, args, src)...)
	}
	return out
}

// transferPaths finds the files curl and wget read (uploads) or write
// (downloads).
func transferPaths(name string, args []Word, src string) []PathRef {
	var out []PathRef
	for k := 0; k < len(args); k++ {
		w := args[k]
		if !w.Static {
			continue
		}
		opt, val, hasVal := strings.Cut(w.Text, "=")
		next := func() (Word, bool) {
			if hasVal && strings.HasPrefix(opt, "--") {
				return literalWord(val, w.Pos), true
			}
			if k+1 < len(args) {
				k++
				return args[k], true
			}
			return Word{}, false
		}
		if !strings.HasPrefix(w.Text, "--") {
			opt = w.Text
			hasVal = false
			if name == "curl" && len(opt) > 2 && opt[0] == '-' {
				// A cluster (-sSLo FILE): its last letter takes the next word.
				opt = "-" + opt[len(opt)-1:]
			}
		}
		switch {
		case name == "curl" && (opt == "-o" || opt == "--output"),
			name == "wget" && (opt == "-O" || opt == "--output-document"):
			if v, ok := next(); ok && !(v.Static && v.Text == "-") {
				out = append(out, PathRef{Path: v, Access: AccessWrite, Source: src})
			}
		case name == "curl" && (opt == "-d" || opt == "--data" || opt == "--data-binary" || opt == "--data-urlencode" ||
			opt == "--json" || opt == "-F" || opt == "--form" || opt == "--data-ascii"):
			if v, ok := next(); ok {
				if f, ok := uploadFile(v); ok {
					out = append(out, PathRef{Path: f, Access: AccessRead, Source: src})
				}
			}
		case name == "curl" && (opt == "-T" || opt == "--upload-file" || opt == "-K" || opt == "--config"),
			name == "wget" && (opt == "--post-file" || opt == "--body-file" || opt == "-i" || opt == "--input-file"):
			if v, ok := next(); ok {
				out = append(out, PathRef{Path: v, Access: AccessRead, Source: src})
			}
		}
	}
	return out
}

// uploadFile extracts the file of a curl data value "@file" or form value
// "name=@file" / "name=<file". A computed value may name any file.
func uploadFile(v Word) (Word, bool) {
	if !v.Static {
		return v, true
	}
	t := v.Text
	if strings.HasPrefix(t, "@") {
		return literalWord(t[1:], v.Pos), true
	}
	if _, rest, ok := strings.Cut(t, "=@"); ok {
		return literalWord(strings.SplitN(rest, ";", 2)[0], v.Pos), true
	}
	if _, rest, ok := strings.Cut(t, "=<"); ok {
		return literalWord(strings.SplitN(rest, ";", 2)[0], v.Pos), true
	}
	return Word{}, false
}

// DirChange is a cd/pushd/popd: relative paths after it resolve elsewhere.
type DirChange struct {
	Command int
	// Target is the new directory; Known is false when it cannot be known
	// (computed, "cd -", popd).
	Target Word
	Known  bool
}

// DirChanges lists every change of working directory in the program.
func (p *Program) DirChanges() []DirChange { return p.dirChanges }

func (p *Program) collectDirChanges() []DirChange {
	var out []DirChange
	for i := range p.Commands {
		c := &p.Commands[i]
		if c.Kind != KindSimple {
			continue
		}
		switch c.BaseName() {
		case "cd", "pushd":
			ops := operands(c.Args[1:])
			switch {
			case len(ops) == 0:
				out = append(out, DirChange{Command: i, Target: literalWord("~", c.Pos), Known: true})
			case ops[0].Static && ops[0].Text != "-" && !ops[0].Glob:
				out = append(out, DirChange{Command: i, Target: ops[0], Known: true})
			default:
				out = append(out, DirChange{Command: i, Target: ops[0], Known: false})
			}
		case "popd":
			out = append(out, DirChange{Command: i, Known: false})
		}
	}
	return out
}

// HarmlessDevice reports whether writing to path has no effect on files:
// /dev/null, the standard streams and the terminal.
func HarmlessDevice(path string) bool {
	switch path {
	case "/dev/null", "/dev/stdout", "/dev/stderr", "/dev/stdin", "/dev/tty", "/dev/zero":
		return true
	}
	return strings.HasPrefix(path, "/dev/fd/")
}

// sensitiveVars change how later commands are found or behave (which
// program "ls" is, what a shell runs at startup, how words split).
var sensitiveVars = set("PATH", "IFS", "BASH_ENV", "ENV", "PS4", "PROMPT_COMMAND", "SHELLOPTS", "BASHOPTS",
	"GLOBIGNORE", "CDPATH", "HOME", "PYTHONPATH", "PYTHONSTARTUP", "NODE_OPTIONS", "NODE_PATH", "PERL5LIB",
	"PERL5OPT", "RUBYLIB", "RUBYOPT", "GIT_SSH", "GIT_SSH_COMMAND", "GIT_EXEC_PATH", "GIT_DIR", "GIT_WORK_TREE",
	"EDITOR", "VISUAL", "PAGER", "GIT_PAGER", "BROWSER", "SHELL", "BASH_FUNC", "FPATH", "ZDOTDIR", "TMPDIR",
	"GIT_EDITOR", "GIT_EXTERNAL_DIFF", "GIT_SEQUENCE_EDITOR", "GIT_ASKPASS", "SSH_ASKPASS", "SUDO_ASKPASS",
	"GIT_PROXY_COMMAND", "GIT_TEMPLATE_DIR", "LESSOPEN", "LESSCLOSE", "LESSKEY", "MANPAGER", "SYSTEMD_PAGER",
	"CC", "CXX", "FC", "LD", "AR", "PKG_CONFIG", "GOFLAGS", "GOTOOLCHAIN", "GOENV", "RSYNC_RSH", "MAKEFLAGS",
	"NPM_CONFIG_SCRIPT_SHELL", "npm_config_script_shell", "PIP_CONFIG_FILE", "PYTHONHOME", "RUBYOPT", "JAVA_TOOL_OPTIONS",
	"EMACSLOADPATH", "VIMINIT", "EXINIT", "MYVIMRC", "GIT_CONFIG_PARAMETERS")

// SensitiveAssignment reports whether an assignment word (NAME=value, as
// recorded in Command.Assigns) sets a variable that changes how later
// commands resolve or behave (PATH, LD_PRELOAD, BASH_ENV, IFS, GIT_*...).
// A computed assignment is sensitive: its name may not even be known.
func SensitiveAssignment(w Word) bool {
	if !w.Static {
		return true
	}
	name, _, _ := strings.Cut(w.Text, "=")
	name = strings.TrimSuffix(name, "+")
	switch {
	case sensitiveVars[name],
		strings.HasPrefix(name, "LD_"), strings.HasPrefix(name, "DYLD_"),
		strings.HasPrefix(name, "GIT_CONFIG"), strings.HasPrefix(name, "BASH_FUNC_"):
		return true
	}
	return false
}
