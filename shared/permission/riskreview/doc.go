// Package riskreview is the built-in automatic reviewer of auto mode: a
// deterministic permission.Classifier that needs no network and no model.
// It answers in three ways:
//
//   - block (permission.VerdictBlock) for a known risk, counted towards the
//     refusal fallback;
//   - allow (permission.VerdictAllow) only for a call its known-safe
//     analysis proves harmless;
//   - unproven (permission.VerdictUnproven, category "not_proven_safe") for
//     everything else, with a reason that names the command and what was
//     not proven ("python3 is not in the known-safe list", "option -delete
//     of find runs a program, deletes or writes files", "reads /etc/hosts,
//     outside the project scope"). The engine asks an interactive owner
//     (denies otherwise, with that reason) and changes no counter: not being
//     proven safe is a request for a person, not a refusal.
//
// With WithModel (the service wires the Bedrock reviewer this way when it
// is configured), calls it cannot prove safe go to the model instead, whose
// verdict or error is returned unchanged; known risks are still blocked and
// proven-safe calls still allowed without a model request.
//
// # Known risks (block)
//
// It reads the complete call (Bash through the whole-program analysis of
// bashscan) in its trusted context; each risk is a Verdict category:
//
//   - destructive: recursive deletes of broad targets (/, ~, the project
//     root or its ancestors, anything outside the project scope, computed
//     paths), mkfs/wipefs/fdisk/parted, dd or redirections to block devices,
//     recursive chmod/chown outside the project, git clean -f, fork bombs
//     (a function that calls itself);
//   - write_outside_project: a write (redirection, rm, mv, cp, tee, sed -i,
//     dd of=, curl -o, Edit/Write tools...) outside the project scope and the
//     temporary directories (/tmp, /var/tmp), or to a path computed at run
//     time;
//   - credential_access: reading or sending ~/.ssh keys, ~/.aws/credentials,
//     .env files, ~/.netrc, ~/.git-credentials, ~/.docker/config.json,
//     ~/.kube/config, ~/.gnupg, /etc/shadow, keychains (security
//     find-*-password, secret-tool), token printers (gh auth token, gcloud
//     auth print-access-token, aws configure get);
//   - download_exec: a download piped or substituted into an interpreter
//     (curl ... | sh, wget -O- | bash, bash <(curl ...), eval "$(curl ...)"),
//     and a download in an earlier call of the same execution run by this
//     one (curl -o x.sh URL, then bash x.sh; curl -LO URL/x, then chmod +x
//     x; ./x; wget URL/i.sh, then sh i.sh; curl URL > t.py, then python3
//     t.py): the local files a call runs (a command named by a path, the
//     script operand of a shell or interpreter) are compared, lexically in
//     the trusted scope, with the files the execution's last MaxPriorCalls
//     calls downloaded (curl -o/-O, wget -O/-P or its default name, a
//     download's redirection), read through permission.ReviewInput.Recent
//     only when the call runs a local file; denied and never-started calls
//     do not count;
//   - history_rewrite: git push --force (or +refspec, --delete) to a shared
//     branch (main, master, develop, trunk, release*, prod*, staging) or to
//     an unnamed branch, git reset --hard;
//   - exfiltration: curl/wget uploading local data (-d @file, -F x=@file,
//     -T, --data-binary @-) to a non-loopback host; nc/ncat/socat/telnet to a
//     non-loopback host; scp/rsync/sftp sending to a remote host;
//   - security_disable: setenforce 0, ufw disable, stopping firewalls or
//     audit daemons, iptables -F, spctl --master-disable, csrutil disable;
//   - privilege_escalation: sudo, doas, su, pkexec;
//   - computed_command: an opaque command (the engine never sends one).
//
// # The known-safe analysis (allow)
//
// A Bash program is proven safe only when all of this holds:
//
//   - no command is opaque or computed (every word known before run time),
//     no wrapper runs another command (sudo, env, xargs, nice, timeout,
//     find -exec, ...), and a program named by its path is in /bin,
//     /usr/bin or /usr/local/bin;
//   - every command is on the list below with safe options; pipelines,
//     lists, subshells, function bodies and bash -c '<literal>' scripts are
//     safe when every command in them is (a shell reading a script from
//     stdin, an interpreter running a file, inline code such as python -c
//     or perl -e are not on the list);
//   - every path a command may read (each operand and option value, the
//     working directory it defaults to) and every cd/pushd target lies in
//     the project scope or a temporary directory; every directory change
//     is known (no cd -, popd, computed targets);
//   - every redirection writes only to a harmless device (/dev/null, the
//     standard streams) or inside the project scope or a temporary
//     directory, and never inside a .git, .vscode or .idea directory
//     (their configuration decides what programs run: core.fsmonitor runs
//     on git status, core.pager on git log) nor to a file named HEAD
//     (with it, any directory the agent fills looks like a bare git
//     repository whose config a git command run there obeys);
//   - assignments set only locale, terminal and Go target variables (LANG,
//     LC_*, TZ, TERM, NO_COLOR, CGO_ENABLED, GOOS, GOARCH, ...): PATH,
//     GIT_PAGER, GOFLAGS and the like change what later commands run.
//
// The list is the read-only core that other agents publish and test
// (Codex CLI's is_known_safe_command in openai/codex
// codex-rs/core/src/command_safety/is_safe_command.rs, with its tests for
// find -exec/-delete/-fprint*, rg --pre/-z, git -c/--output/--ext-diff,
// branch listing and sed -n; Claude Code's permission documentation for
// read-only tools and protected directories), extended with path checks
// and the everyday build commands issue 21 keeps allowed:
//
//   - no file arguments: echo, printf, pwd, true, false, :, whoami, id,
//     uname, seq, sleep, expr, basename, dirname, which, type, test, [, tr,
//     numfmt, exit, wait, set, command -v/-V;
//   - readers (every path in scope, no --files0-from): cat, tac, head,
//     tail, wc, nl, cut, paste, rev, comm, diff, cmp, the *sum programs,
//     od, hexdump, strings, column, expand, unexpand, fold, ls, df, stat,
//     realpath, readlink, cd, pushd; grep/egrep/fgrep without -R and du
//     without -L (following symbolic links while walking may leave the
//     project); sort without -o/--output/--compress-program (short
//     options are found inside clusters too: sort -uo); tree without
//     -o/-R/-l; file without
//     -C; base64 without -o; date without -s; uniq with at most one
//     operand; jq without env/$ENV (the environment may hold secrets); sed
//     only as sed -n 'N[,M]p' (sed scripts can write files and run
//     programs);
//   - find without -exec, -execdir, -ok, -okdir, -delete, -fls, -fprint,
//     -fprint0, -fprintf, -L, -follow; rg without --pre, --pre-glob,
//     --hostname-bin, -z/--search-zip (they run other programs) and
//     -L/--follow;
//   - bash/sh -c '<literal>' with only -c, -e, -l, -u, -x, -v,
//     --noprofile, --norc, --posix (not -i, --rcfile, --init-file: a
//     startup file the agent wrote would run too);
//   - git in the trusted working directory (no -C elsewhere, no cd before
//     it: in a subdirectory git would discover a bare repository shipped
//     with the project and obey its config), without global options other
//     than -C ., --no-pager, -P and the pathspec switches (-c,
//     --config-env, --git-dir, --work-tree, -p/--paginate are not
//     proven), running status, log,
//     diff, show, rev-parse, ls-files, ls-tree, blame, describe, shortlog,
//     rev-list, show-ref, merge-base, cat-file, grep, whatchanged,
//     count-objects, branch (listing only), tag (listing only), remote
//     (-v only), stash list, worktree list, without --output, --ext-diff,
//     --textconv, --filters, --exec, --paginate, --no-index,
//     --open-files-in-pager, -O, --upload-pack, --receive-pack;
//   - go build, test, vet, list with an allow list of flags (-v, -race,
//     -run, -count, -cover, -coverprofile, -o, -tags, -timeout, -json, ...;
//     never -exec, -toolexec, -vettool, -ldflags, -gcflags, -overlay,
//     -modfile, -C) and package operands that are paths inside the project
//     (./..., ./pkg; an import path may name code outside it), go version,
//     go env without -w/-u;
//   - mkdir (-p, -v, -m) and touch (-a, -c, -m, -h, -d, -t, -r) of paths
//     inside the project scope or a temporary directory, not inside .git,
//     .vscode or .idea.
//
// Decisions the list embodies: go test runs the project's own test code,
// and the issue keeps it allowed; a person who does not want that writes
// an ask rule (ask: Bash(go test *)), which auto mode applies before the
// reviewer. make, npm/yarn/pnpm scripts, cargo, pytest and the like run
// recipes and scripts the analysis cannot see (and that the agent may just
// have edited), so they are not proven safe: allow them with a rule
// (allow: Bash(make test)) or configure the model reviewer. touch is on the
// list because inside the project it changes nothing but timestamps and
// empty files, as mkdir -p changes nothing but directories.
//
// Files and other tools: Read, Grep, Glob, LS and NotebookRead are proven
// safe inside the project scope or a temporary directory (the engine
// already allows reads inside the scope without review); Edit, MultiEdit,
// Write and NotebookEdit inside the project scope or a temporary directory,
// except inside .git, .vscode or .idea (Claude Code's bypassPermissions
// mode still prompts for those too); writes elsewhere are blocked
// (write_outside_project). WebFetch,
// MCP tools and every other tool are not proven safe. The other spellings
// the host tools accept (bash, read_file, write_file, edit_file) are
// reviewed exactly as Bash, Read, Write and Edit (identity.CanonicalTool):
// the host runs them as those tools and the engine's rules judge them so.
//
// # Risk (every ask)
//
// Assess (permission.RiskAssessor) grades every asked call with the same
// analysis, collecting every known risk: high for destructive,
// download_exec, credential_access, exfiltration, security_disable and
// privilege_escalation; medium for the other risks, for input it cannot
// analyse, and for anything not proven safe (the reason says what was not
// proven); low for what the known-safe analysis proves. With a model
// (WithModel), the model's reason is added marked model-generated (the
// decision's own model verdict in auto mode, else one review bounded by 15
// s whose failure adds nothing); it never sets the level. Assess never
// decides anything.
//
// Input it cannot judge (over permission.MaxReviewBytes, Bash that does not
// parse, arguments that are not an object, a cancelled context) is a
// *permission.NoVerdictError, never a verdict.
//
// It never executes anything and never reads the file system; paths are
// placed with permission.Scope, as the engine places them.
package riskreview
