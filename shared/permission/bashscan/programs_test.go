package bashscan_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/openprogram/lifecycle/shared/permission/bashscan"
)

// effectsOf describes what the analysis found, one fact per line:
// "run <wrapper>: <text>", "script <wrapper>: <text>", "delete <wrapper>:
// <text>", "inline <flag>", "write <path>" (with " (tree)" when recursive),
// "opaque: <reason>".
func effectsOf(t *testing.T, src string) []string {
	t.Helper()
	p, err := bashscan.Analyze(src)
	if err != nil {
		t.Fatalf("Analyze(%q): %v", src, err)
	}
	var out []string
	for _, c := range p.Commands {
		if c.Opaque {
			out = append(out, "opaque: "+c.OpaqueReason)
		}
		for k, iv := range c.Invocations {
			if k == 0 && iv.Wrapper == "" {
				continue
			}
			kind := "run"
			switch {
			case iv.Synthetic:
				kind = "delete"
			case iv.Script:
				kind = "script"
			}
			out = append(out, fmt.Sprintf("%s %s: %s", kind, iv.Wrapper, bashscan.JoinText(iv.Words)))
		}
		for _, ic := range c.InlineCode {
			out = append(out, "inline "+ic.Flag)
		}
	}
	for _, r := range p.PathRefs() {
		if r.Access.Writes() {
			s := "write " + r.Path.Text
			if r.Recursive {
				s += " (tree)"
			}
			out = append(out, s)
		}
	}
	return out
}

func has(facts []string, want string) bool {
	for _, f := range facts {
		if f == want || strings.HasSuffix(want, "*") && strings.HasPrefix(f, strings.TrimSuffix(want, "*")) {
			return true
		}
	}
	return false
}

// Every option of the program model is found; plain uses have no effect.
func TestProgramModel(t *testing.T) {
	cases := []struct {
		name, src string
		want      []string // facts that must be present ("x*" = prefix)
		plain     bool     // no fact at all
	}{
		// find
		{"find -delete is rm -rf of its starting points", `find ~ -delete`, []string{"delete find -delete: rm -rf ~", "write ~ (tree)"}, false},
		{"find -delete without starting point", `find -name '*.o' -delete`, []string{"delete find -delete: rm -rf ."}, false},
		{"find -exec substitutes {} with paths under the start", `find ~ -exec rm -rf {} +`, []string{"run find -exec: rm -rf ~/*", "write ~/* (tree)"}, false},
		{"find -execdir", `find . -execdir mv {} x \;`, []string{"run find -execdir: mv ./* x"}, false},
		{"find -ok", `find . -ok rm {} \;`, []string{"run find -ok: rm ./*"}, false},
		{"find -fprintf writes", `find . -fprintf ~/.bashrc '%p'`, []string{"write ~/.bashrc"}, false},
		{"find -fprint writes", `find . -fprint out.txt`, []string{"write out.txt"}, false},
		{"find -fls writes", `find . -fls /tmp/x`, []string{"write /tmp/x"}, false},
		{"find -exec sh -c with {} in the script is opaque", `find . -exec sh -c 'rm {}' \;`, []string{"opaque: find -exec puts file names into the text of the script it runs"}, false},
		{"find plain", `find . -name '*.go'`, nil, true},
		{"find plain with -print", `find src -type f -newer x -print`, nil, true},
		// git
		{"git -c core.pager", `git -c core.pager='sh -c "rm -rf ~"' log`, []string{"script git -c core.pager: sh -c \"rm -rf ~\"", "write ~ (tree)"}, false},
		{"git -c shell alias", `git -c alias.x='!rm -rf ~' x`, []string{"script git -c alias.x: rm -rf ~"}, false},
		{"git -c git alias", `git -c alias.x='clean -fdx' x`, []string{"script git -c alias.x: git clean -fdx", "delete git clean: rm -rf ."}, false},
		{"git -c unknown key runs its value", `git -c foo.bar=make status`, []string{"script git -c foo.bar: make"}, false},
		{"git -c harmless key", `git -c user.name=x -c color.ui=always commit -m x`, nil, true},
		{"git -c boolean value", `git -c core.fsmonitor=false status`, nil, true},
		{"git -c sshCommand", `git -c core.sshCommand='ssh -i k' fetch`, []string{"script git -c core.sshcommand: ssh -i k"}, false},
		{"git -c hooksPath is opaque", `git -c core.hooksPath=/tmp/h commit -m x`, []string{"opaque: git -c core.hookspath makes git run hook programs from a directory"}, false},
		{"git config alias", `git config alias.x '!rm -rf ~'`, []string{"script git config alias.x: rm -rf ~"}, false},
		{"git config --global writes the global config", `git config --global core.editor vim`, []string{"script git config core.editor: vim", "write ~/.gitconfig"}, false},
		{"git config get is plain", `git config --get user.name`, nil, true},
		{"git submodule foreach", `git submodule foreach --recursive 'rm -rf ~'`, []string{"script git submodule foreach: rm -rf ~"}, false},
		{"git -C ~ clean", `git -C ~ clean -fdx`, []string{"delete git clean: rm -rf ~", "write ~ (tree)"}, false},
		{"git clean pathspec under -C", `git -C sub clean -f build`, []string{"delete git clean: rm -rf sub/build"}, false},
		{"git clean -n is a dry run", `git clean -nd`, nil, true},
		{"git log --output", `git log --output ~/.bashrc`, []string{"write ~/.bashrc"}, false},
		{"git diff --output=", `git diff --output=/tmp/d`, []string{"write /tmp/d"}, false},
		{"git format-patch -o", `git format-patch -o ../out HEAD~2`, []string{"write ../out (tree)"}, false},
		{"git difftool --extcmd", `git difftool --extcmd='rm -rf ~'`, []string{"script git difftool --extcmd: rm -rf ~"}, false},
		{"git rebase -x", `git rebase -x 'make test' main`, []string{"script git rebase --exec: make test"}, false},
		{"git rebase --exec=", `git rebase --exec='rm x' main`, []string{"script git rebase --exec: rm x"}, false},
		{"git bisect run", `git bisect run rm -rf ~`, []string{"run git bisect run: rm -rf ~"}, false},
		{"git fetch --upload-pack", `git fetch --upload-pack='touch x' .`, []string{"script git fetch --upload-pack: touch x"}, false},
		{"git filter-branch", `git filter-branch --tree-filter 'rm -f x' HEAD`, []string{"script git filter-branch --tree-filter: rm -f x"}, false},
		{"git computed subcommand is opaque", `git $SUB`, []string{"opaque: *"}, false},
		{"git status", `git status`, nil, true},
		{"git log --oneline", `git log --oneline -n 5`, nil, true},
		{"git -C dir status", `git -C sub status`, nil, true},
		{"git commit", `git commit -am 'fix: x'`, nil, true},
		// go
		{"go test -exec", `go test -exec 'rm -rf ~' ./...`, []string{"script go test -exec: rm -rf ~"}, false},
		{"go test -exec=", `go test -exec=./wrap ./...`, []string{"script go test -exec: ./wrap"}, false},
		{"go build -toolexec", `go build -toolexec=/tmp/t .`, []string{"script go build -toolexec: /tmp/t"}, false},
		{"go vet -vettool", `go vet -vettool=$(which x) ./...`, []string{"opaque: the script it runs is computed at run time"}, false},
		{"go generate is opaque", `go generate ./...`, []string{"opaque: go generate runs the commands written in //go:generate lines of the source files"}, false},
		{"go build -o writes", `go build -o /usr/local/bin/x .`, []string{"write /usr/local/bin/x"}, false},
		{"go env -w writes the go env file", `go env -w GOPROXY=direct`, []string{"write ~/.config/go/env"}, false},
		{"go test", `go test ./...`, nil, true},
		{"go run", `go run ./cmd/x -v`, nil, true},
		// npm family
		{"npm exec", `npm exec rimraf ~`, []string{"run npm exec: rimraf ~"}, false},
		{"npm x with --", `npm x -- rimraf ~`, []string{"run npm x: rimraf ~"}, false},
		{"npm exec -c", `npm exec -c 'rm -rf ~'`, []string{"script npm exec --call: rm -rf ~"}, false},
		{"npx", `npx -y cowsay hi`, []string{"run npx: cowsay hi"}, false},
		{"pnpm dlx", `pnpm dlx create-vite app`, []string{"run pnpm dlx: create-vite app"}, false},
		{"yarn dlx", `yarn dlx rimraf ~`, []string{"run yarn dlx: rimraf ~"}, false},
		{"npm test", `npm test`, nil, true},
		{"npm run build", `npm run build -- --prod`, nil, true},
		{"npm install", `npm install --save-dev vitest`, nil, true},
		// pip
		{"pip install", `pip install -r requirements.txt`, nil, true},
		{"pip install --target writes", `pip install --target ~/lib x`, []string{"write ~/lib (tree)"}, false},
		// tar
		{"tar create writes the archive", `tar -czf out.tgz src`, []string{"write out.tgz"}, false},
		{"tar old style", `tar czf ../out.tgz src`, []string{"write ../out.tgz"}, false},
		{"tar extract writes under -C", `tar xzf a.tgz -C ~`, []string{"write ~ (tree)"}, false},
		{"tar extract writes under the working directory", `tar -xf a.tar`, []string{"write . (tree)"}, false},
		{"tar --to-command", `tar -xf a.tar --to-command='rm -rf ~'`, []string{"script tar --to-command: rm -rf ~"}, false},
		{"tar -I", `tar -I 'sh -c "rm x"' -xf a`, []string{"script tar --use-compress-program: sh -c \"rm x\""}, false},
		{"tar --use-compress-program=", `tar --use-compress-program=zstd -cf a.tzst src`, []string{"script tar --use-compress-program: zstd"}, false},
		{"tar checkpoint exec", `tar -cf a.tar --checkpoint=1 --checkpoint-action=exec='rm x' src`, []string{"script tar --checkpoint-action=exec: rm x"}, false},
		{"tar -F", `tar -F ./next.sh -cf a.tar src`, []string{"script tar --info-script: ./next.sh"}, false},
		{"tar --remove-files deletes", `tar -czf a.tgz --remove-files src`, []string{"delete tar --remove-files: rm -rf src"}, false},
		{"tar list", `tar -tzf a.tgz`, nil, true},
		// rg, sort, less, man, editors
		{"rg --pre", `rg --pre ./pre foo`, []string{"run rg --pre: ./pre"}, false},
		{"rg --pre=", `rg --pre=rm foo`, []string{"run rg --pre: rm", "write (names read at run time)"}, false},
		{"git abbreviated --upload-pack", `git ls-remote --upload-pa="touch /tmp/x" origin`, []string{"script git ls-remote --upload-pack: touch /tmp/x"}, false},
		{"git abbreviated --output-directory", `git format-patch --output-d=/tmp/p HEAD~1`, []string{"write /tmp/p (tree)"}, false},
		{"git ambiguous abbreviation", `git log --outp=/tmp/x`, []string{"opaque: git accepts abbreviated long options, and --outp may abbreviate any of --output, --output-directory"}, false},
		{"git full options are not abbreviations", `git log --oneline --name-only`, nil, true},
		{"rg --hostname-bin", `rg --hostname-bin pwned foo`, []string{"run rg --hostname-bin: pwned"}, false},
		{"rg --hostname-bin=", `rg --hostname-bin=./pwned foo`, []string{"run rg --hostname-bin: ./pwned"}, false},
		{"rg", `rg -n foo src`, nil, true},
		{"sort -o", `sort -o ~/.bashrc x`, []string{"write ~/.bashrc"}, false},
		{"sort --output=", `sort --output=/tmp/s x`, []string{"write /tmp/s"}, false},
		{"sort --compress-program", `sort --compress-program=./c x`, []string{"run sort --compress-program: ./c"}, false},
		{"less +!cmd", `less '+!rm -rf ~' f`, []string{"inline +!rm -rf ~"}, false},
		{"less +G is plain", `less +G f`, nil, true},
		{"less -o writes", `less -o ~/log f`, []string{"write ~/log"}, false},
		{"man -P", `man -P 'rm -rf ~' ls`, []string{"script man -P: rm -rf ~"}, false},
		{"vim -c", `vim -c '!rm -rf ~' f`, []string{"inline -c"}, false},
		{"vim +cmd", `vim '+!rm x' f`, []string{"inline +!rm x"}, false},
		{"vim --cmd", `nvim --cmd 'lua os.exit()' f`, []string{"inline --cmd"}, false},
		{"vim +line is plain", `vim +42 f`, nil, true},
		{"vim -c :!cmd is a shell command", `vim -c ':!rm -rf ~' -c ':q' f`, []string{"inline -c", "script vim -c !: rm -rf ~"}, false},
		{"vim + filter", `vim '+%!sort -u' f`, []string{"inline +%!sort -u", "script vim + !: sort -u"}, false},
		{"vim :r !cmd after another command", `vim -c 'set nu | r !id' f`, []string{"inline -c", "script vim -c !: id"}, false},
		{"vim call system() is opaque", `vim -c 'call system("id")' f`, []string{"inline -c", "opaque: vim -c \"call system(\\\"id\\\")\" may run code or shell commands that the analysis does not parse"}, false},
		{"vim -c of a plain command", `vim -c 'set nu' f`, []string{"inline -c"}, false},
		{"ex mode reads stdin", `ex f`, []string{"opaque: *"}, false},
		{"emacs --eval", `emacs --batch --eval '(shell-command "rm x")'`, []string{"inline --eval"}, false},
		// awk, sed
		{"awk system", `awk '{system("rm -rf ~")}' f`, []string{`inline {system("rm -rf ~")}`}, false},
		{"awk pipe", `awk '{print | "sh"}' f`, []string{`inline {print | "sh"}`}, false},
		{"awk getline from a command", `awk 'BEGIN{"id" | getline x}'`, []string{`inline *`}, false},
		{"awk print to a file", `awk '{print > "/tmp/x"}' f`, []string{`inline *`}, false},
		{"awk plain", `awk -F: '$3 > 1000 || $1 == "x" {print $1}' /etc/passwd`, nil, true},
		{"awk -f is plain", `awk -f prog.awk f`, nil, true},
		{"gawk -l loads code", `gawk -l ./ext 'BEGIN{}'`, []string{"inline -l"}, false},
		{"sed e flag", `sed 's/a/b/e' f`, []string{"inline s/a/b/e", "opaque: the sed script may run shell commands (the e command or the s///e flag), computed from the input"}, false},
		{"sed e command", `sed -e '1e rm -rf ~' f`, []string{"inline 1e rm -rf ~", "opaque: the sed script may run shell commands (the e command or the s///e flag), computed from the input"}, false},
		{"sed ge flags", `sed 's/x/y/ge;p' f`, []string{"inline s/x/y/ge;p", "opaque: the sed script may run shell commands (the e command or the s///e flag), computed from the input"}, false},
		{"sed with an e in its text is no e command", `sed 's/e/x/w out' f`, []string{"inline s/e/x/w out"}, false},
		{"sed w", `sed -n 'w /tmp/x' f`, []string{"inline w /tmp/x"}, false},
		{"sed s///w", `sed 's/a/b/w out' f`, []string{"inline s/a/b/w out"}, false},
		{"sed plain", `sed -n '1,5p;/x/d;s|a|b|g' f`, nil, true},
		{"sed -i plain script", `sed -i 's/foo/bar/g' main.go`, []string{"write main.go"}, false},
		{"sed --sandbox", `sed --sandbox 's/a/b/e' f`, nil, true},
		// interpreters
		{"python3 -c", `python3 -c 'import shutil; shutil.rmtree("x")'`, []string{"inline -c"}, false},
		{"python -c attached", `python -c'print(1)'`, []string{"inline -c"}, false},
		{"python3 -Bc cluster", `python3 -Bc 'print(1)'`, []string{"inline -Bc"}, false},
		{"python3.12 -c", `python3.12 -c 'print(1)'`, []string{"inline -c"}, false},
		{"python3 script", `python3 tools/gen.py --out x`, nil, true},
		{"python3 -m", `python3 -m pytest -q`, nil, true},
		{"python3 --version", `python3 --version`, nil, true},
		{"python3 alone reads stdin", `python3`, []string{"opaque: python3 reads its program from standard input (a pipe, a here-document or a here-string)"}, false},
		{"python3 - reads stdin", `python3 - <<'EOF'
import os
EOF`, []string{"opaque: python3 reads its program from standard input"}, false},
		{"perl -e", `perl -e 'unlink glob "~/*"'`, []string{"inline -e"}, false},
		{"perl -lne", `perl -lne 'print' f`, []string{"inline -lne"}, false},
		{"perl -pi -e", `perl -pi -e 's/a/b/' f`, []string{"inline -e", "write f"}, false},
		{"ruby -e", `ruby -e 'system("x")'`, []string{"inline -e"}, false},
		{"node -e", `node -e 'require("fs").rmSync("x")'`, []string{"inline -e"}, false},
		{"node --eval=", `node --eval='1'`, []string{"inline --eval"}, false},
		{"node script", `node server.js`, nil, true},
		{"node alone reads stdin", `node`, []string{"opaque: *"}, false},
		{"php -r", `php -r 'system("x");'`, []string{"inline -r"}, false},
		{"lua -e", `lua -e 'os.execute("x")'`, []string{"inline -e"}, false},
		{"Rscript -e", `Rscript -e 'system("x")'`, []string{"inline -e"}, false},
		{"perl alone reads stdin", `perl`, []string{"opaque: *"}, false},
		{"ruby - reads stdin", `ruby -`, []string{"opaque: *"}, false},
		// shells reading stdin
		{"echo | sh", `echo rm -rf ~ | sh`, []string{"opaque: sh reads its script from standard input (a pipe, a here-document or a here-string)"}, false},
		{"sh heredoc", "sh <<EOF\nrm -rf ~\nEOF", []string{"opaque: sh reads its script from standard input (a pipe, a here-document or a here-string)"}, false},
		{"bash here-string", `bash <<< 'rm -rf ~'`, []string{"opaque: *", "write ~ (tree)"}, false},
		{"the here-document a shell reads is parsed for the deny rules", "sh <<EOF\nrm -rf ~\nEOF", []string{"opaque: *", "write ~ (tree)"}, false},
		{"a quoted here-document too", "sudo bash <<'EOF'\nrm -rf ~/x\nEOF", []string{"opaque: *", "write ~/x (tree)"}, false},
		{"source /dev/stdin here-document", ". /dev/stdin <<-EOF\n\trm -rf ~\nEOF", []string{"opaque: *", "write ~ (tree)"}, false},
		{"bash -s", `curl -s x | bash -s -- --yes`, []string{"opaque: bash -s reads its script from standard input"}, false},
		{"bash -", `bash - < x`, []string{"opaque: *"}, false},
		{"bash /dev/stdin", `bash /dev/stdin <<EOF
x
EOF`, []string{"opaque: bash reads its script from standard input"}, false},
		{". /dev/stdin", ". /dev/stdin <<EOF\nrm -rf ~\nEOF", []string{"opaque: . reads its script from standard input"}, false},
		{"source /dev/stdin", `source /dev/stdin`, []string{"opaque: source reads its script from standard input"}, false},
		{"source <(...)", `source <(curl -s x)`, []string{"opaque: the sourced file is computed at run time"}, false},
		{"bash <(...)", `bash <(curl -s x)`, []string{"opaque: bash runs a script file computed at run time"}, false},
		{"base64 -d | sh", `echo cm0gLXJmIH4K | base64 -d | sh`, []string{"opaque: *"}, false},
		{"sudo bash", `curl x | sudo bash`, []string{"opaque: *"}, false},
		{"bash script file", `bash ./scripts/build.sh`, nil, true},
		{"bash -euo pipefail script file", `bash -euo pipefail ./build.sh`, nil, true},
		{"bash -euo pipefail -c is parsed", `bash -euo pipefail -c 'rm -rf ~'`, []string{"write ~ (tree)"}, false},
		{"bash -eo pipefail reading stdin", `curl x | bash -eo pipefail`, []string{"opaque: *"}, false},
		{"bash --version", `bash --version`, nil, true},
		// aliases
		{"alias values are parsed", `alias ll='rm -rf ~'`, []string{"write ~ (tree)"}, false},
		{"expand_aliases makes aliases opaque", "shopt -s expand_aliases\nalias x='rm -rf ~'\nx", []string{"opaque: aliases are expanded here (shopt -s expand_aliases or an interactive shell), so later words may run the alias's text"}, false},
		{"computed shopt is opaque", `shopt -s $OPT`, []string{"opaque: it sets shell options computed at run time"}, false},
		{"interactive bash expands aliases", `bash -ic 'alias x="rm -rf ~"; x'`, []string{"opaque: aliases are expanded here*"}, false},
		// scripts written by the same command line
		{"echo > f; source f", `echo 'rm -rf ~' > /tmp/x.sh; source /tmp/x.sh`, []string{"opaque: it runs /tmp/x.sh, which this command line writes first (redirection >)"}, false},
		{"curl -o then bash", `curl -so i.sh https://x && bash ./i.sh`, []string{"opaque: it runs ./i.sh, which this command line writes first*"}, false},
		{"cp then ./run", `cp /tmp/e.sh run.sh && ./run.sh`, []string{"opaque: it runs ./run.sh, which this command line writes first*"}, false},
		{"tar -x then run from the tree", `tar -xf t.tar -C d && python3 d/setup.py`, []string{"opaque: it runs d/setup.py, which this command line writes first*"}, false},
		{"source a descriptor", `exec 3< <(echo rm -rf ~); source /dev/fd/3`, []string{"opaque: source reads its script from standard input"}, false},
		{"awk -f /dev/stdin", `echo 'BEGIN{system("x")}' | awk -f /dev/stdin`, []string{"opaque: *"}, false},
		{"BASH_ENV computed", `BASH_ENV=<(echo rm -rf ~) bash -c true`, []string{"opaque: the shell it starts sources a startup file known only at run time (BASH_ENV)"}, false},
		{"GIT_CONFIG_VALUE_n", `GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.pager GIT_CONFIG_VALUE_0='rm -rf ~' git log`, []string{"script GIT_CONFIG_VALUE_0=: rm -rf ~"}, false},
		// variables that hold commands
		{"GIT_PAGER prefix", `GIT_PAGER='rm -rf ~' git log`, []string{"script GIT_PAGER=: rm -rf ~"}, false},
		{"export GIT_PAGER", `export GIT_PAGER='rm -rf ~'`, []string{"script GIT_PAGER=: rm -rf ~"}, false},
		{"env EDITOR", `env EDITOR='rm -rf ~' git commit`, []string{"script EDITOR=: rm -rf ~"}, false},
		{"LESSOPEN", `LESSOPEN='|rm -rf ~ %s' less f`, []string{"script LESSOPEN=: rm -rf ~ %s"}, false},
		// xargs, cp -t, rm -r
		{"xargs rm writes unknown names", `find . | xargs rm`, []string{"run xargs: rm", "write (names read at run time)"}, false},
		{"xargs -I with the string in a script is opaque", `xargs -I{} sh -c 'echo {}'`, []string{"opaque: xargs puts its input into the text of the script it runs"}, false},
		{"cp -t writes its target", `cp -t ~/bin a b`, []string{"write ~/bin (tree)"}, false},
		{"rm -r is a tree", `rm -r build`, []string{"write build (tree)"}, false},
		// runners and wrappers
		{"uv run", `uv run --with x rm -rf ~`, []string{"run uv run: rm -rf ~"}, false},
		{"poetry run", `poetry run python -c 'x'`, []string{"run poetry run: python -c x", "inline -c"}, false},
		{"bundle exec", `bundle exec rake db:drop`, []string{"run bundle exec: rake db:drop"}, false},
		{"conda run", `conda run -n env rm x`, []string{"run conda run: rm x"}, false},
		{"direnv exec", `direnv exec . rm x`, []string{"run direnv exec: rm x"}, false},
		{"uvx", `uvx ruff check .`, []string{"run uvx: ruff check ."}, false},
		{"uv sync is plain", `uv sync --frozen`, nil, true},
		{"poetry install is plain", `poetry install`, nil, true},
		{"taskset", `taskset -c 0 rm x`, []string{"run taskset: rm x"}, false},
		{"ld.so", `/lib64/ld-linux-x86-64.so.2 /bin/rm -rf ~`, []string{"run ld-linux-x86-64.so.2: /bin/rm -rf ~"}, false},
		{"hyperfine", `hyperfine 'rm -rf ~'`, []string{"script hyperfine: rm -rf ~"}, false},
		{"nix-shell --run", `nix-shell --run 'rm -rf ~'`, []string{"script nix-shell --run: rm -rf ~"}, false},
		{"make -f -", "make -f - <<EOF\nall:\n\trm -rf ~\nEOF", []string{"opaque: *"}, false},
		{"make SHELL=", `make SHELL='rm -rf ~'`, []string{"script make SHELL=: rm -rf ~"}, false},
		{"make is plain", `make -j4 test`, nil, true},
		{"enable -f", `enable -f ./x.so x`, []string{"opaque: enable -f loads shell builtins from a shared library"}, false},
		// shells started without a command read stdin
		{"sudo -s", `echo 'rm -rf ~' | sudo -s`, []string{"opaque: sudo -s starts a shell that reads its commands from standard input"}, false},
		{"sudo -i", `sudo -i <<< 'rm -rf ~'`, []string{"opaque: *"}, false},
		{"su", `echo 'rm -rf ~' | su root`, []string{"opaque: su without -c starts a shell that reads its commands from standard input"}, false},
		{"sudo with a command is not a shell", `sudo -u ci make`, []string{"run sudo: make"}, false},
		{"env -S attached", `env -S'rm -rf ~'`, []string{"script env: rm -rf ~"}, false},
		{"pwsh -Command", `pwsh -Command 'Remove-Item -Recurse ~'`, []string{"opaque: pwsh -Command runs a script in a language this analysis does not parse"}, false},
		{"pwsh -File is a script file", `pwsh -File build.ps1`, nil, true},
		{"tmux send-keys", `tmux send-keys 'rm -rf ~' Enter`, []string{"opaque: *"}, false},
		{"tmux ls", `tmux ls`, nil, true},
		{"script without -c", `script -q /dev/null`, []string{"opaque: *"}, false},
		// misc
		{"sqlite3 dot command", `sqlite3 db.sqlite '.shell rm -rf ~'`, []string{"inline .shell rm -rf ~", "write db.sqlite"}, false},
		{"sqlite3 reading stdin", `sqlite3 db.sqlite < x.sql`, []string{"opaque: *"}, false},
		{"ssh ProxyCommand", `ssh -o ProxyCommand='rm -rf ~' host`, []string{"script ssh -o ProxyCommand: rm -rf ~"}, false},
		{"rsync -e", `rsync -e 'sh -c "rm x"' a b:`, []string{"script rsync --rsh: sh -c \"rm x\""}, false},
		{"busybox applet", `busybox rm -rf ~`, []string{"run busybox: rm -rf ~"}, false},
		{"script -c", `script -c 'rm -rf ~' /dev/null`, []string{"script script -c: rm -rf ~"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := effectsOf(t, tc.src)
			if tc.plain && len(got) > 0 {
				t.Fatalf("%q is plain use, but the analysis found %q", tc.src, got)
			}
			for _, w := range tc.want {
				if !has(got, w) {
					t.Errorf("%q: missing %q; found %q", tc.src, w, got)
				}
			}
		})
	}
}

// Plain is what a known-safe analysis may rely on: only the program's own
// plain use (a script handed to a shell is judged by its commands).
func TestPlain(t *testing.T) {
	cases := []struct {
		src   string
		plain bool
	}{
		{`git status`, true}, {`git log --oneline`, true}, {`find . -name '*.go'`, true}, {`less +G f`, true}, {`ls -la`, true},
		{`export A=1`, true}, {`less '+!rm' f`, false}, {`git -c core.pager=x log`, false}, {`find . -delete`, false},
		{`sort -o x f`, false}, {`sudo ls`, false}, {`python3 -c 1`, false}, {`GIT_PAGER=x git log`, false},
		{`export EDITOR=vim`, false}, {`echo x | sh`, false}, {`less -o log f`, false}, {`bash -c 'ls'`, true}, {`bash -c 'find . -delete'`, false},
	}
	for _, tc := range cases {
		p, err := bashscan.Analyze(tc.src)
		if err != nil {
			t.Fatal(err)
		}
		all := true
		for i := range p.Commands {
			all = all && p.Commands[i].Plain()
		}
		if all != tc.plain {
			t.Errorf("every command of %q plain = %v, want %v", tc.src, all, tc.plain)
		}
	}
}

// Running what the command line itself built or only logged to is not a
// second-shell script.
func TestRunningWithoutWritingTheScript(t *testing.T) {
	for _, src := range []string{`go build -o bin/x . && ./bin/x --help`, `bash ./build.sh > build.log`, `python3 gen.py > out.txt`, `curl -so x.json https://x && jq . x.json`} {
		t.Run(src, func(t *testing.T) {
			for _, f := range effectsOf(t, src) {
				if strings.HasPrefix(f, "opaque") {
					t.Fatalf("%q: %s", src, f)
				}
			}
		})
	}
}

// A glob in a command word keeps its wildcard in every form, the base
// name included, so a deny of rm may match it.
func TestGlobCommandForms(t *testing.T) {
	rm := bashscan.Pattern{'r', 'm', ' ', bashscan.Wild}
	for _, src := range []string{`/usr/bin/r[m] -rf ~`, `r? -rf ~`, `/bin/r* -rf ~`, `/usr/[b]in/rm -rf ~`, `find . -exec /bin/r? {} +`} {
		t.Run(src, func(t *testing.T) {
			p, err := bashscan.Analyze(src)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, f := range p.Commands[0].Forms() {
				if bashscan.Intersect(rm, f) {
					found = true
					if !f.HasWild() {
						t.Errorf("form %s of a glob command has no wildcard", f)
					}
				}
			}
			if !found {
				t.Errorf("no form of %q may match rm *; forms %v", src, p.Commands[0].Forms())
			}
		})
	}
}
