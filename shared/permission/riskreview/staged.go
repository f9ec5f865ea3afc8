package riskreview

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"path"
	"strings"

	"github.com/openprogram/lifecycle/shared/identity"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/permission"
	"github.com/openprogram/lifecycle/shared/permission/bashscan"
)

// MaxPriorCalls bounds the lookback of the multi-step check: only the
// execution's most recent calls are read (the decider reads no more), so a
// decision costs at most one bounded index read, and only when the call
// runs a local file.
const MaxPriorCalls = 32

// scriptRunners run the file named by their first operand.
var scriptRunners = set("sh", "bash", "zsh", "dash", "ksh", "fish", "python", "python2", "python3", "perl", "ruby",
	"node", "php", "pwsh", "source", ".", "Rscript", "lua")

// inlineFlags make a script runner run inline code instead of a file.
var inlineFlags = set("-c", "-e", "-E", "-m", "--eval", "-p", "--print", "-r", "--command")

// staged finds the multi-step download-and-run pattern: this call runs a
// local file (./x, /tmp/x, bash x.sh, python3 x.py, source x) that an
// earlier call of the same execution downloaded (curl -o, curl -O,
// wget, curl ... > x). Paths are compared lexically in the trusted
// context's scope (never through the file system: the earlier call's view
// of it is gone). recent is read only when the call runs a local file.
func (rv reviewer) staged(ctx context.Context, prog *bashscan.Program, recent permission.RecentCalls) (*finding, error) {
	if recent == nil {
		return nil, nil
	}
	runs := executedFiles(prog)
	if len(runs) == 0 {
		return nil, nil
	}
	want := map[string]string{} // absolute path -> as written
	for _, w := range runs {
		cands, _ := rv.lexical.BashPath(prog, w)
		for _, abs := range cands {
			want[abs] = w.Text
		}
	}
	if len(want) == 0 {
		return nil, nil
	}
	prior, err := recent(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the execution's earlier calls: %w", err)
	}
	if len(prior) > MaxPriorCalls {
		prior = prior[:MaxPriorCalls]
	}
	for _, pc := range prior {
		if pc.Permission == lifecycle.PermissionDeny || identity.CanonicalTool(pc.Tool) != "Bash" {
			continue
		}
		var a struct {
			Command string `json:"command"`
		}
		if json.Unmarshal(pc.Args, &a) != nil || a.Command == "" {
			continue
		}
		pp, err := bashscan.Analyze(a.Command)
		if err != nil {
			continue
		}
		for _, w := range downloadedFiles(pp) {
			cands, _ := rv.lexical.BashPath(pp, w)
			for _, abs := range cands {
				if as, ok := want[abs]; ok {
					return &finding{DownloadExec, fmt.Sprintf("runs %s, which an earlier call of this execution (%s) downloaded from the network", as, pc.ActionID)}, nil
				}
			}
		}
	}
	return nil, nil
}

// executedFiles are the local files the program runs: a command named by
// a path (./x, bin/x, /tmp/x) and the script operand of a shell or
// interpreter (bash x.sh, python3 x.py, source x).
func executedFiles(prog *bashscan.Program) []bashscan.Word {
	var out []bashscan.Word
	for i := range prog.Commands {
		for _, iv := range prog.Commands[i].Invocations {
			if iv.Script || len(iv.Words) == 0 || !iv.Words[0].Static {
				continue
			}
			if w0 := iv.Words[0]; strings.Contains(w0.Text, "/") && !scriptRunners[path.Base(w0.Text)] {
				out = append(out, w0)
				continue
			}
			if !scriptRunners[iv.Name()] {
				continue
			}
			for _, a := range iv.Words[1:] {
				if !a.Static {
					break
				}
				if inlineFlags[a.Text] {
					break
				}
				if a.Option() {
					continue
				}
				out = append(out, a)
				break
			}
		}
	}
	return out
}

// downloadedFiles are the files a program's downloads write: curl -o F,
// wget -O F, a download's redirection (curl URL > F), and the remote
// name curl -O and a plain wget save to (the URL's last path segment, in
// wget -P's directory).
func downloadedFiles(prog *bashscan.Program) []bashscan.Word {
	var out []bashscan.Word
	isDownload := func(ci int) bool {
		if ci < 0 || ci >= len(prog.Commands) {
			return false
		}
		_, ok := anyIn(invocationNames(&prog.Commands[ci]), downloaders)
		return ok
	}
	for _, ref := range prog.PathRefs() {
		if ref.Access.Writes() && ref.Path.Static && !bashscan.HarmlessDevice(ref.Path.Text) && isDownload(ref.Command) {
			out = append(out, ref.Path)
		}
	}
	for i := range prog.Commands {
		for _, iv := range prog.Commands[i].Invocations {
			switch iv.Name() {
			case "curl":
				out = append(out, curlRemoteNames(iv.Words[1:])...)
			case "wget":
				out = append(out, wgetDefaultNames(iv.Words[1:])...)
			}
		}
	}
	return out
}

func curlRemoteNames(args []bashscan.Word) []bashscan.Word {
	remote := false
	for _, a := range args {
		if a.Static && (a.Text == "--remote-name" || a.Text == "--remote-name-all" ||
			strings.HasPrefix(a.Text, "-") && !strings.HasPrefix(a.Text, "--") && strings.Contains(a.Text[1:], "O")) {
			remote = true
		}
	}
	if !remote {
		return nil
	}
	return urlNames(args, "")
}

func wgetDefaultNames(args []bashscan.Word) []bashscan.Word {
	dir := ""
	for k, a := range args {
		if !a.Static {
			continue
		}
		switch {
		case a.Text == "-O" || a.Text == "--output-document" || strings.HasPrefix(a.Text, "--output-document="):
			return nil // named: found among the path references
		case (a.Text == "-P" || a.Text == "--directory-prefix") && k+1 < len(args):
			dir = args[k+1].Text
		case strings.HasPrefix(a.Text, "--directory-prefix="):
			dir = strings.TrimPrefix(a.Text, "--directory-prefix=")
		}
	}
	return urlNames(args, dir)
}

// urlNames are the last path segments of the URL operands, in dir.
func urlNames(args []bashscan.Word, dir string) []bashscan.Word {
	var out []bashscan.Word
	for _, a := range args {
		if !a.Static || !strings.Contains(a.Text, "://") {
			continue
		}
		u, err := url.Parse(a.Text)
		if err != nil {
			continue
		}
		name := path.Base(u.Path)
		if name == "." || name == "/" || name == "" {
			continue
		}
		if dir != "" {
			name = path.Join(dir, name)
		}
		out = append(out, bashscan.Word{Text: name, Static: true, Pattern: bashscan.Literal(name), Tilde: strings.HasPrefix(name, "~")})
	}
	return out
}
