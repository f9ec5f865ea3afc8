package bashscan

import (
	"regexp"
	"strings"
)

// The models of awk and sed: a program or script that runs commands or
// writes files is inline code (see programs.go).

// --- awk, sed --------------------------------------------------------------

var (
	awkSystem    = regexp.MustCompile(`\bsystem\s*\(|@load|@include`)
	awkRedirect  = regexp.MustCompile(`\bprintf?\b[^;}\n]*>`)
	awkOrOr      = regexp.MustCompile(`\|\|`)
	awkValueOpts = []string{"-v", "-F", "--field-separator", "--assign", "-f", "--file", "-E", "--exec", "-i", "--include", "-e", "--source", "-l", "--load", "-o", "--pretty-print", "-p", "--profile", "-d", "--dump-variables", "-W"}
)

// awkRisky reports whether an awk program may run commands or write files:
// system(), a pipe to or from a command, print/printf redirected to a file,
// or gawk's @load/@include.
func awkRisky(prog string) bool {
	return awkSystem.MatchString(prog) || strings.Contains(awkOrOr.ReplaceAllString(prog, ""), "|") || awkRedirect.MatchString(prog)
}

func awkModel(iv Invocation, e *effects) {
	ws := iv.Words[1:]
	fromFile := false
	var progs []Word
	k := 0
	for ; k < len(ws); k++ {
		w := ws[k]
		if !w.Static {
			break
		}
		if w.Text == "--" {
			k++
			break
		}
		if !strings.HasPrefix(w.Text, "-") || w.Text == "-" {
			break
		}
		if v, next, ok := optValue(ws, k, "-e", "--source"); ok {
			progs = append(progs, v)
			k = next - 1
			continue
		}
		if v, next, ok := optValue(ws, k, "-l", "--load"); ok {
			e.code(strings.SplitN(ws[k].Text, "=", 2)[0], v)
			k = next - 1
			continue
		}
		if v, next, ok := optValue(ws, k, "-o", "--pretty-print", "-p", "--profile", "-d", "--dump-variables"); ok {
			e.write(iv.Name()+" "+strings.SplitN(ws[k].Text, "=", 2)[0], v, false)
			k = next - 1
			continue
		}
		if v, next, ok := optValue(ws, k, "-f", "--file", "-E", "--exec", "-i", "--include"); ok {
			if !v.Static || stdinLike(v.Text) {
				e.setOpaque(iv.Name() + " reads its program from standard input or a file known only at run time")
			}
			e.scriptFiles = append(e.scriptFiles, v)
			fromFile = true
			k = next - 1
			continue
		}
		if _, next, ok := optValue(ws, k, awkValueOpts...); ok {
			k = next - 1
		}
	}
	if !fromFile && len(progs) == 0 && k < len(ws) {
		progs = append(progs, ws[k])
	}
	for _, p := range progs {
		if !p.Static || awkRisky(p.Text) {
			e.code(p.Text, p)
		}
	}
}

func sedModel(iv Invocation, e *effects) {
	ws := iv.Words[1:]
	sandbox := hasOpt(ws, "--sandbox")
	var scripts []Word
	explicit := false
	var ops []Word
	for k := 0; k < len(ws); k++ {
		w := ws[k]
		if v, next, ok := optValue(ws, k, "-e", "--expression"); ok {
			scripts = append(scripts, v)
			explicit = true
			k = next - 1
			continue
		}
		if _, next, ok := optValue(ws, k, "-f", "--file", "-l", "--line-length"); ok {
			if w.Text != "-l" && !strings.HasPrefix(w.Text, "--line") {
				explicit = true
			}
			k = next - 1
			continue
		}
		if w.Static && w.Text == "--" {
			ops = append(ops, ws[k+1:]...)
			break
		}
		if w.Option() {
			continue
		}
		ops = append(ops, w)
	}
	if !explicit && len(ops) > 0 {
		scripts = append(scripts, ops[0])
	}
	if sandbox {
		return
	}
	for _, s := range scripts {
		if !s.Static || !sedSimple(s.Text) {
			e.code(s.Text, s)
			// The e command and the s///e flag run the pattern space (or
			// the e command's text) as a shell command: under a whole-tool
			// allow the script is inline code, but it may match any deny.
			if !s.Static || sedMayRun.MatchString(s.Text) {
				e.setOpaque("the sed script may run shell commands (the e command or the s///e flag), computed from the input")
			}
		}
	}
}

// sedMayRun over-approximates a sed script with an e command ("1e cmd",
// "/x/e") or an s///e flag ("s/a/b/ge"): an 'e' after an address, a
// separator or the closing delimiter of s, followed by the end of the
// command.
var sedMayRun = regexp.MustCompile(`(?:^|[\s;{}!0-9$/,])e(?:[\s;}]|$)|/[gpiImMw0-9]*e[gpiImM0-9]*(?:[\s;}]|$)`)

// sedSimple reports whether a sed script only edits the stream: no e
// command or s///e flag (runs a command), no w/W command or s///w flag
// (writes a file), and nothing this scanner does not know.
func sedSimple(s string) bool {
	rs := []rune(s)
	i := 0
	skipRe := func(delim rune) bool {
		for i < len(rs) {
			if rs[i] == '\\' {
				i += 2
				continue
			}
			if rs[i] == delim {
				i++
				return true
			}
			if rs[i] == '\n' && delim != '\n' {
				return false
			}
			i++
		}
		return false
	}
	toEOL := func() {
		for i < len(rs) && rs[i] != '\n' && rs[i] != ';' {
			i++
		}
	}
	address := func() bool {
		switch {
		case i < len(rs) && (rs[i] >= '0' && rs[i] <= '9'):
			for i < len(rs) && (rs[i] >= '0' && rs[i] <= '9' || rs[i] == '~') {
				i++
			}
		case i < len(rs) && rs[i] == '$':
			i++
		case i < len(rs) && rs[i] == '/':
			i++
			if !skipRe('/') {
				return false
			}
			for i < len(rs) && (rs[i] == 'I' || rs[i] == 'M') {
				i++
			}
		case i+1 < len(rs) && rs[i] == '\\':
			d := rs[i+1]
			i += 2
			if !skipRe(d) {
				return false
			}
		}
		return true
	}
	for i < len(rs) {
		for i < len(rs) && (rs[i] == ' ' || rs[i] == '\t' || rs[i] == '\n' || rs[i] == ';' || rs[i] == '}') {
			i++
		}
		if i >= len(rs) {
			return true
		}
		if !address() {
			return false
		}
		if i < len(rs) && rs[i] == ',' {
			i++
			if i < len(rs) && (rs[i] == '+' || rs[i] == '~') {
				i++
			}
			if !address() {
				return false
			}
		}
		for i < len(rs) && (rs[i] == ' ' || rs[i] == '!') {
			i++
		}
		if i >= len(rs) {
			return false
		}
		c := rs[i]
		i++
		switch c {
		case '{':
		case 's', 'y':
			if i >= len(rs) || rs[i] == '\n' || rs[i] == '\\' {
				return false
			}
			d := rs[i]
			i++
			// s/RE/REPLACEMENT/ and y/SRC/DST/: two delimited parts.
			if !skipRe(d) {
				return false
			}
			if !skipRe(d) {
				return false
			}
			if c == 's' {
				for i < len(rs) && rs[i] != ';' && rs[i] != '\n' && rs[i] != '}' && rs[i] != ' ' {
					switch rs[i] {
					case 'g', 'p', 'i', 'I', 'm', 'M', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
					default:
						return false // e (execute), w (write) or unknown
					}
					i++
				}
			}
		case 'p', 'P', 'd', 'D', 'n', 'N', 'g', 'G', 'h', 'H', 'x', '=', 'z', 'F', 'l', 'q', 'Q':
			for i < len(rs) && rs[i] >= '0' && rs[i] <= '9' {
				i++
			}
		case 'a', 'i', 'c':
			for i < len(rs) && rs[i] != '\n' {
				if rs[i] == '\\' {
					i++
				}
				i++
			}
		case ':', 'b', 't', 'T':
			toEOL()
		case 'r', 'R':
			for i < len(rs) && rs[i] != '\n' {
				i++
			}
		case '#':
			for i < len(rs) && rs[i] != '\n' {
				i++
			}
		default:
			return false // e, w, W, v and anything unknown
		}
	}
	return true
}
