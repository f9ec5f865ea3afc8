// Package riskreview is the built-in automatic reviewer of auto mode: a
// deterministic permission.Classifier that needs no network and no model.
//
// It reads the complete call (Bash through the whole-program analysis of
// bashscan) in its trusted context and blocks these risks, each reported as
// a Verdict category:
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
//     ~/.kube/config, ~/.gnupg, keychains (security find-*-password,
//     secret-tool), token printers (gh auth token, gcloud auth
//     print-access-token, aws configure get);
//   - download_exec: a download piped or substituted into an interpreter
//     (curl ... | sh, wget -O- | bash, bash <(curl ...), eval "$(curl ...)");
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
// Everything else is allowed. It is a risk screen, not a proof of safety:
// it knows only the commands listed in its tables, and a program that
// downloads a file and runs it in a separate step is not recognized. The
// engine's rules, hard constraints and the human fallback stay in front of
// it.
//
// Input it cannot judge (over permission.MaxReviewBytes, Bash that does not
// parse, arguments that are not an object, a cancelled context) is a
// *permission.NoVerdictError, never a verdict.
//
// It never executes anything and never reads the file system.
package riskreview
