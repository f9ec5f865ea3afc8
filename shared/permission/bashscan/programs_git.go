package bashscan

import (
	"fmt"
	"regexp"
	"strings"
)

// The model of git: configuration that names commands, subcommands that
// run, delete or write (see programs.go).

// --- git -------------------------------------------------------------------

// gitHarmlessKeys are configuration keys whose value never names a command.
var gitHarmlessKeys = set("user.name", "user.email", "user.signingkey", "core.autocrlf", "core.quotepath",
	"core.abbrev", "core.safecrlf", "core.filemode", "core.ignorecase", "core.longpaths", "core.eol",
	"init.defaultbranch", "diff.noprefix", "diff.renames", "diff.algorithm", "diff.colormoved",
	"merge.conflictstyle", "pull.rebase", "pull.ff", "push.default", "push.autosetupremote", "fetch.prune",
	"rebase.autostash", "gc.auto", "protocol.version", "safe.directory", "commit.gpgsign", "tag.gpgsign",
	"help.autocorrect", "log.showsignature", "format.pretty", "grep.linenumber", "column.ui", "status.short",
	"status.branch", "advice.detachedhead")

var gitHarmlessPrefixes = []string{"color.", "advice.", "i18n.", "user.", "log.", "status.", "http.", "pull.", "push.",
	"fetch.", "gc.", "feature.", "index.", "pack.", "rebase.", "commit.", "tag.", "format.", "blame.", "grep.", "branch.",
	"checkout.", "clone.", "rerere.", "column.", "init."}

var boolOrNumber = regexp.MustCompile(`^(?i:true|false|yes|no|on|off|-?[0-9]+[kmg]?)$`)

// gitSetting judges one configuration setting (git -c key=value, git
// config key value, git clone -c): a value that may name a command is run
// as a shell command, an alias as a git command line (or, after "!", a
// shell command). Only a small list of keys is known to be harmless.
func gitSetting(e *effects, label string, key string, value Word) {
	key = strings.ToLower(key)
	if value.Static && boolOrNumber.MatchString(value.Text) {
		return
	}
	if gitHarmlessKeys[key] {
		return
	}
	for _, p := range gitHarmlessPrefixes {
		if strings.HasPrefix(key, p) {
			return
		}
	}
	label = label + " " + key
	switch {
	case key == "core.hookspath" || key == "init.templatedir":
		e.setOpaque(label + " makes git run hook programs from a directory")
	case strings.HasPrefix(key, "alias."):
		if value.Static && !strings.HasPrefix(value.Text, "!") {
			e.script(label, literalWord("git "+value.Text, value.Pos))
			return
		}
		e.script(label, dropPrefix(value, "!"))
	default:
		if value.Static && strings.HasPrefix(value.Text, "!") {
			value = dropPrefix(value, "!")
		}
		e.script(label, value)
	}
}

// gitKeyValue splits a "key=value" word.
func gitKeyValue(w Word) (key string, value Word, ok bool) {
	lit := []rune{}
	for _, r := range w.Pattern {
		if r == Wild {
			break
		}
		lit = append(lit, r)
	}
	k, _, found := strings.Cut(string(lit), "=")
	if !found {
		if w.Static {
			return w.Text, literalWord("true", w.Pos), true
		}
		return "", Word{}, false
	}
	return k, dropPrefix(w, k+"="), true
}

// gitLongOptions are the long options the git model looks at. Git's
// option parser accepts any unambiguous prefix of a long option
// ("--upload-pa=cmd" is --upload-pack), so gitUnabbreviate writes such a
// prefix out before the model judges the words.
var gitLongOptions = []string{"--blob", "--branch", "--bundle-uri", "--cc-cmd", "--comment", "--commit-filter", "--config", "--config-env", "--default", "--depth", "--dry-run", "--env-filter", "--exclude", "--exec", "--exec-path", "--ext-diff", "--extcmd", "--file", "--filter", "--get", "--get-all", "--get-color", "--get-colorbool", "--get-regexp", "--get-urlmatch", "--git-dir", "--global", "--header-cmd", "--index-filter", "--jobs", "--list", "--msg-filter", "--name-only", "--namespace", "--open-files-in-pager", "--origin", "--output", "--output-directory", "--parent-filter", "--quiet", "--reason", "--receive-pack", "--recursive", "--ref-format", "--reference", "--remote", "--remove-section", "--rename-section", "--sendmail-cmd", "--separate-git-dir", "--server-option", "--shallow-exclude", "--shallow-since", "--show-origin", "--show-scope", "--smtp-server", "--super-prefix", "--system", "--tag-name-filter", "--template", "--to-cmd", "--tree-filter", "--type", "--unset", "--unset-all", "--upload-pack", "--value", "--work-tree"}

// gitUnabbreviate returns iv with every proper prefix of a modelled long
// option ("--outp=F") written out ("--output=F"). A prefix of several
// modelled options may mean any of them: the command is then Opaque (git
// itself refuses an ambiguous prefix, but the analysis does not know every
// option of every subcommand).
func gitUnabbreviate(iv Invocation, e *effects) (Invocation, bool) {
	var out []Word
	for i, w := range iv.Words {
		if i == 0 || !w.Static || !strings.HasPrefix(w.Text, "--") || len(w.Text) < 3 {
			if w.Static && w.Text == "--" {
				break
			}
			continue
		}
		name, value, hasValue := strings.Cut(w.Text, "=")
		if contains(gitLongOptions, name) {
			continue
		}
		var full []string
		for _, o := range gitLongOptions {
			if strings.HasPrefix(o, name) {
				full = append(full, o)
			}
		}
		switch {
		case len(full) > 1:
			e.setOpaque(fmt.Sprintf("git accepts abbreviated long options, and %s may abbreviate any of %s", name, strings.Join(full, ", ")))
			return iv, false
		case len(full) == 1:
			if out == nil {
				out = append([]Word(nil), iv.Words...)
			}
			t := full[0]
			if hasValue {
				t += "=" + value
			}
			nw := w
			nw.Text = t
			nw.Pattern = Literal(full[0])
			if n := len([]rune(name)); n <= len(w.Pattern) {
				nw.Pattern = append(nw.Pattern, w.Pattern[n:]...)
			}
			out[i] = nw
		}
	}
	if out != nil {
		iv.Words = out
	}
	return iv, true
}

func gitModel(iv Invocation, e *effects) {
	iv, ok := gitUnabbreviate(iv, e)
	if !ok {
		return
	}
	ws := iv.Words
	var dir *Word
	i := 1
	for i < len(ws) {
		w := ws[i]
		if !w.Static {
			e.setOpaque("a git option or subcommand is computed at run time")
			return
		}
		t := w.Text
		switch {
		case t == "-C" && i+1 < len(ws):
			d := joinUnder(dir, ws[i+1])
			dir = &d
			i += 2
			continue
		case t == "-c" && i+1 < len(ws):
			if key, val, ok := gitKeyValue(ws[i+1]); ok {
				gitSetting(e, "git -c", key, val)
			} else {
				e.script("git -c", ws[i+1])
			}
			i += 2
			continue
		case t == "--config-env" || strings.HasPrefix(t, "--config-env="):
			e.setOpaque("git --config-env takes configuration (which may name commands) from the environment")
			return
		case t == "--exec-path" || strings.HasPrefix(t, "--exec-path="):
			if t != "--exec-path" {
				e.setOpaque("git --exec-path makes git run its subcommands from another directory")
				return
			}
			i++
			continue
		case t == "--git-dir" || t == "--work-tree" || t == "--namespace" || t == "--super-prefix":
			i += 2
			continue
		case strings.HasPrefix(t, "-"):
			i++
			continue
		}
		break
	}
	if i >= len(ws) {
		return
	}
	sub, rest := ws[i].Text, ws[i+1:]
	label := "git " + sub
	under := func(w Word) Word { return joinUnder(dir, w) }
	switch sub {
	case "config":
		gitConfig(e, rest, dir)
	case "submodule":
		ops := operandsFrom(rest, nil)
		if len(ops) > 0 && ops[0].Static && ops[0].Text == "foreach" {
			cmd := ops[1:]
			for len(cmd) > 0 && cmd[0].Static && (cmd[0].Text == "--recursive" || cmd[0].Text == "-q" || cmd[0].Text == "--quiet") {
				cmd = cmd[1:]
			}
			if len(cmd) > 0 {
				e.script("git submodule foreach", joinWords(cmd))
			}
		}
	case "clean":
		if hasOpt(rest, "-n", "--dry-run") || clusterHas(rest, 'n') {
			return
		}
		var paths []Word
		for _, w := range operandsFrom(rest, []string{"-e", "--exclude"}) {
			paths = append(paths, under(w))
		}
		if len(paths) == 0 {
			d := literalWord(".", ws[i].Pos)
			if dir != nil {
				d = *dir
			}
			paths = []Word{d}
		}
		e.del("git clean", paths)
	case "log", "diff", "show", "format-patch", "range-diff", "whatchanged", "diff-tree", "diff-files", "diff-index", "archive":
		for k := 0; k < len(rest); k++ {
			if v, next, ok := optValue(rest, k, "--output"); ok {
				e.write(label+" --output", under(v), false)
				k = next - 1
				continue
			}
			if sub == "archive" {
				if v, next, ok := optValue(rest, k, "-o"); ok {
					e.write(label+" -o", under(v), false)
					k = next - 1
					continue
				}
				if v, next, ok := optValue(rest, k, "--exec", "--remote"); ok {
					if rest[k].Text == "--exec" || strings.HasPrefix(rest[k].Text, "--exec=") {
						e.script(label+" --exec", v)
					}
					k = next - 1
					continue
				}
			}
			if sub == "format-patch" {
				if v, next, ok := optValue(rest, k, "-o", "--output-directory"); ok {
					e.write(label+" --output-directory", under(v), true)
					k = next - 1
				}
			}
		}
		if sub == "diff" || sub == "log" || sub == "show" {
			if hasOpt(rest, "--ext-diff") {
				e.setOpaque("git " + sub + " --ext-diff runs the diff program the configuration names")
			}
		}
	case "difftool", "mergetool":
		for k := 0; k < len(rest); k++ {
			if v, next, ok := optValue(rest, k, "--extcmd", "-x"); ok {
				e.script(label+" --extcmd", v)
				k = next - 1
			}
		}
	case "rebase":
		for k := 0; k < len(rest); k++ {
			if v, next, ok := optValue(rest, k, "--exec", "-x"); ok {
				e.script(label+" --exec", v)
				k = next - 1
			}
		}
	case "bisect":
		if len(rest) > 0 && rest[0].Static && rest[0].Text == "run" {
			e.run("git bisect run", rest[1:])
		}
	case "filter-branch":
		for k := 0; k < len(rest); k++ {
			if v, next, ok := optValue(rest, k, "--env-filter", "--tree-filter", "--index-filter", "--parent-filter",
				"--msg-filter", "--commit-filter", "--tag-name-filter"); ok {
				e.script(label+" "+strings.SplitN(rest[k].Text, "=", 2)[0], v)
				k = next - 1
			}
		}
	case "fetch", "pull", "clone", "ls-remote", "push", "submodule-update":
		for k := 0; k < len(rest); k++ {
			names := []string{"--upload-pack", "--receive-pack", "--exec"}
			if sub == "clone" || sub == "ls-remote" {
				names = append(names, "-u")
			}
			if v, next, ok := optValue(rest, k, names...); ok {
				e.script(label+" "+strings.SplitN(rest[k].Text, "=", 2)[0], v)
				k = next - 1
				continue
			}
			if sub == "clone" {
				if v, next, ok := optValue(rest, k, "-c", "--config"); ok {
					if key, val, ok := gitKeyValue(v); ok {
						gitSetting(e, "git clone -c", key, val)
					} else {
						e.script("git clone -c", v)
					}
					k = next - 1
					continue
				}
				if _, _, ok := optValue(rest, k, "--template"); ok {
					e.setOpaque("git clone --template installs hook programs from a directory")
				}
			}
		}
		if sub == "clone" {
			ops := operandsFrom(rest, []string{"-o", "--origin", "-b", "--branch", "-u", "--upload-pack", "--reference",
				"--separate-git-dir", "--depth", "--shallow-since", "--shallow-exclude", "-j", "--jobs", "-c", "--config",
				"--filter", "--template", "--bundle-uri", "--server-option", "--ref-format"})
			if len(ops) >= 2 {
				e.write("git clone", under(ops[1]), true)
			}
		}
	case "grep":
		for k := 0; k < len(rest); k++ {
			w := rest[k]
			if w.Static && (strings.HasPrefix(w.Text, "-O") && len(w.Text) > 2 && !strings.HasPrefix(w.Text, "--")) {
				e.script("git grep -O", dropPrefix(w, "-O"))
			}
			if w.Static && strings.HasPrefix(w.Text, "--open-files-in-pager=") {
				e.script("git grep --open-files-in-pager", dropPrefix(w, "--open-files-in-pager="))
			}
		}
	case "worktree":
		ops := operandsFrom(rest, nil)
		if len(ops) >= 2 && ops[0].Static && ops[0].Text == "add" {
			if p := operandsFrom(ops[1:], []string{"-b", "-B", "--reason"}); len(p) > 0 {
				e.write("git worktree add", under(p[0]), true)
			}
		}
	case "send-email":
		for k := 0; k < len(rest); k++ {
			if v, next, ok := optValue(rest, k, "--sendmail-cmd", "--smtp-server", "--to-cmd", "--cc-cmd", "--header-cmd"); ok {
				e.script(label+" "+strings.SplitN(rest[k].Text, "=", 2)[0], v)
				k = next - 1
			}
		}
	}
}

// clusterHas reports whether a short-option cluster among words has letter.
func clusterHas(words []Word, letter byte) bool {
	for _, w := range words {
		if shortFlag(w, letter) {
			return true
		}
	}
	return false
}

// joinWords joins words into one script word (a computed word makes it
// computed).
func joinWords(words []Word) Word {
	out := Word{Static: AllStatic(words), Pos: words[0].Pos, Text: JoinText(words), Pattern: wordsPattern(words)}
	return out
}

// gitConfig: git config setting a key that may name a command (or any
// alias) runs that command later; writing --global/--system/--file config
// writes that file.
func gitConfig(e *effects, rest []Word, dir *Word) {
	reads := false
	var file *Word
	var ops []Word
	for k := 0; k < len(rest); k++ {
		w := rest[k]
		if !w.Static {
			ops = append(ops, w)
			continue
		}
		switch w.Text {
		case "--get", "--get-all", "--get-regexp", "--get-urlmatch", "--get-color", "--get-colorbool", "--list", "-l",
			"--unset", "--unset-all", "--remove-section", "--rename-section", "--show-origin", "--show-scope", "--name-only":
			if !strings.HasPrefix(w.Text, "--unset") && !strings.HasSuffix(w.Text, "-section") {
				reads = true
			}
			continue
		case "--global":
			f := literalWord("~/.gitconfig", w.Pos)
			f.Tilde = true
			file = &f
			continue
		case "--system":
			f := literalWord("/etc/gitconfig", w.Pos)
			file = &f
			continue
		}
		if v, next, ok := optValue(rest, k, "-f", "--file"); ok {
			f := joinUnder(dir, v)
			file = &f
			k = next - 1
			continue
		}
		if _, next, ok := optValue(rest, k, "--blob", "--type", "--default", "--comment", "--value"); ok {
			k = next - 1
			continue
		}
		if strings.HasPrefix(w.Text, "-") {
			continue
		}
		ops = append(ops, w)
	}
	if len(ops) > 0 && ops[0].Static {
		switch ops[0].Text {
		case "get", "list":
			return
		case "set":
			ops = ops[1:]
		case "unset", "rename-section", "remove-section":
			ops = nil
		case "edit":
			ops = nil
		}
	}
	if reads {
		return
	}
	if len(ops) >= 2 {
		if !ops[0].Static {
			e.setOpaque("git config sets a key computed at run time")
		} else {
			gitSetting(e, "git config", ops[0].Text, ops[1])
		}
	}
	if file != nil {
		e.write("git config", *file, false)
	}
}
