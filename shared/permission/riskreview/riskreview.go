package riskreview

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"path"
	"strings"

	"github.com/openprogram/lifecycle/shared/identity"
	"github.com/openprogram/lifecycle/shared/permission"
	"github.com/openprogram/lifecycle/shared/permission/bashscan"
)

// Categories of risk.
const (
	Destructive         = "destructive"
	WriteOutsideProject = "write_outside_project"
	CredentialAccess    = "credential_access"
	DownloadExec        = "download_exec"
	HistoryRewrite      = "history_rewrite"
	Exfiltration        = "exfiltration"
	SecurityDisable     = "security_disable"
	PrivilegeEscalation = "privilege_escalation"
	ComputedCommand     = "computed_command"
)

// NotProvenSafe is the category of an unproven verdict: the call is
// outside the known-safe analysis (see doc.go), so a person (or the model
// reviewer, WithModel) decides.
const NotProvenSafe = "not_proven_safe"

// Name is the reviewer's name in verdicts.
const Name = "riskreview"

// Reviewer is the deterministic reviewer: it blocks known risks, allows
// what its known-safe analysis proves safe, and hands everything else to
// the model reviewer (WithModel) or, without one, answers unproven.
type Reviewer struct {
	model permission.Classifier
}

// Option configures a Reviewer.
type Option func(*Reviewer)

// WithModel sends the calls the known-safe analysis cannot prove safe to
// m (the Bedrock reviewer); known risks are still blocked and proven-safe
// calls still allowed without calling it. A nil m is no model.
func WithModel(m permission.Classifier) Option { return func(r *Reviewer) { r.model = m } }

// New returns the reviewer.
func New(opts ...Option) *Reviewer {
	r := &Reviewer{}
	for _, o := range opts {
		o(r)
	}
	return r
}

var _ permission.Classifier = (*Reviewer)(nil)

// tempDirs may be read and written without leaving the project scope.
var tempDirs = []string{"/tmp", "/var/tmp"}

// finding is one risk found.
type finding struct {
	category, reason string
}

// Review judges one call: a known risk is a block (a download an earlier
// call of the execution made, run by this one, included); a call the
// known-safe analysis proves safe is an allow; anything else goes to the
// model, or without one is VerdictUnproven with the reason it was not
// proven.
func (r *Reviewer) Review(ctx context.Context, in permission.ReviewInput) (permission.Verdict, error) {
	a, err := r.analyse(ctx, in, false)
	if err != nil {
		return permission.Verdict{}, err
	}
	if len(a.findings) > 0 {
		f := a.findings[0]
		return permission.Verdict{Kind: permission.VerdictBlock, Category: f.category, Reason: f.reason, Reviewer: Name}, nil
	}
	if a.safe {
		return permission.Verdict{Kind: permission.VerdictAllow, Reason: "proven safe by the known-safe analysis", Reviewer: Name}, nil
	}
	if r.model != nil {
		return r.model.Review(ctx, in)
	}
	return permission.Verdict{Kind: permission.VerdictUnproven, Category: NotProvenSafe, Reason: a.why, Reviewer: Name}, nil
}

// analysis is what the deterministic review found.
type analysis struct {
	// findings are the known risks, the one Review blocks on first; all
	// of them only when asked for (Assess).
	findings []finding
	safe     bool
	why      string // why it is not proven safe
}

// analyse runs the deterministic review of one call; all collects every
// known risk instead of the first.
func (r *Reviewer) analyse(ctx context.Context, in permission.ReviewInput, all bool) (analysis, error) {
	var a analysis
	if err := ctx.Err(); err != nil {
		return a, permission.AsNoVerdict(ctx, Name, err)
	}
	if len(in.Args) > permission.MaxReviewBytes {
		return a, &permission.NoVerdictError{Reviewer: Name, Kind: permission.NoVerdictOversized,
			Err: fmt.Errorf("arguments are %d bytes, more than %d", len(in.Args), permission.MaxReviewBytes)}
	}
	var args map[string]any
	dec := json.NewDecoder(bytes.NewReader(in.Args))
	dec.UseNumber()
	if err := dec.Decode(&args); err != nil || args == nil {
		return a, &permission.NoVerdictError{Reviewer: Name, Kind: permission.NoVerdictUnparseable,
			Err: errors.New("arguments are not a JSON object")}
	}
	rv := reviewer{scope: in.Scope(), lexical: permission.NewScope(in.Trusted, in.AdditionalDirectories)}
	add := func(f *finding) {
		if f != nil {
			a.findings = append(a.findings, *f)
		}
	}
	// bash, read_file, write_file and edit_file run exactly as Bash, Read,
	// Write and Edit, and the engine's rules judge them so: review them so.
	tool := identity.CanonicalTool(in.Tool)
	switch tool {
	case "Bash":
		cmd, _ := args["command"].(string)
		prog, err := bashscan.Analyze(cmd)
		if err != nil {
			kind := permission.NoVerdictUnparseable
			var tl *bashscan.TooLargeError
			if errors.As(err, &tl) {
				kind = permission.NoVerdictOversized
			}
			return a, &permission.NoVerdictError{Reviewer: Name, Kind: kind, Err: err}
		}
		if all {
			for _, f := range rv.bashAll(prog) {
				add(&f)
			}
		} else {
			add(rv.bash(prog))
		}
		if len(a.findings) == 0 || all {
			f, err := rv.staged(ctx, prog, in.Recent)
			if err != nil {
				return a, &permission.NoVerdictError{Reviewer: Name, Kind: permission.NoVerdictProvider, Err: err}
			}
			add(f)
		}
		if len(a.findings) == 0 {
			a.safe, a.why = rv.safeBash(prog)
		}
	case "Read", "NotebookRead", "Grep", "Glob", "LS":
		if add(rv.fileRead(args)); len(a.findings) == 0 {
			a.safe, a.why = rv.safeRead(tool, args)
		}
	case "Edit", "MultiEdit", "Write", "NotebookEdit":
		if add(rv.fileWrite(args)); len(a.findings) == 0 {
			a.safe, a.why = rv.safeWrite(args)
		}
	default:
		a.why = fmt.Sprintf("%s is not a tool the known-safe analysis covers (only Bash and the file tools are analysed)", in.Tool)
	}
	return a, nil
}

type reviewer struct {
	scope permission.Scope
	// lexical is the same scope without the file system, for comparing
	// paths across calls (staged).
	lexical permission.Scope
}

// writable: inside the project scope, a temporary directory or a harmless
// device.
func (rv reviewer) writable(abs string) bool {
	return rv.scope.Contains(abs) || bashscan.HarmlessDevice(abs) || inTemp(abs)
}

func inTemp(abs string) bool {
	for _, t := range tempDirs {
		if abs == t || strings.HasPrefix(abs, t+"/") {
			return true
		}
	}
	return false
}

func pathArgs(args map[string]any) []string {
	var out []string
	for _, k := range []string{"file_path", "notebook_path", "path"} {
		if s, ok := args[k].(string); ok && s != "" {
			out = append(out, s)
		}
	}
	return out
}

func (rv reviewer) fileRead(args map[string]any) *finding {
	for _, p := range pathArgs(args) {
		abs, ok := rv.scope.Resolve(p)
		if !ok {
			abs = p
		}
		if why, ok := rv.credential(abs); ok {
			return &finding{CredentialAccess, fmt.Sprintf("reads %s (%s)", p, why)}
		}
	}
	return nil
}

func (rv reviewer) fileWrite(args map[string]any) *finding {
	for _, p := range pathArgs(args) {
		abs, ok := rv.scope.Resolve(p)
		if !ok {
			return &finding{WriteOutsideProject, fmt.Sprintf("writes %s, which cannot be resolved in the project", p)}
		}
		if why, ok := rv.credential(abs); ok {
			return &finding{CredentialAccess, fmt.Sprintf("writes %s (%s)", p, why)}
		}
		if !rv.writable(abs) {
			return &finding{WriteOutsideProject, fmt.Sprintf("writes %s, outside the project scope", abs)}
		}
	}
	return nil
}

// credential reports whether abs is a credential store.
func (rv reviewer) credential(abs string) (string, bool) {
	home := rv.scope.HomeDir
	under := func(rel string) bool {
		if home == "" {
			return false
		}
		p := path.Join(home, rel)
		return abs == p || strings.HasPrefix(abs, p+"/")
	}
	base := path.Base(abs)
	switch {
	case under(".ssh") && !strings.HasSuffix(base, ".pub") && base != "known_hosts" && base != "config" && abs != path.Join(home, ".ssh"):
		return "SSH private keys", true
	case strings.HasPrefix(base, "id_rsa") || strings.HasPrefix(base, "id_ed25519") || strings.HasPrefix(base, "id_ecdsa") || strings.HasPrefix(base, "id_dsa"):
		if !strings.HasSuffix(base, ".pub") {
			return "an SSH private key", true
		}
	case under(".aws/credentials") || under(".aws/sso") || under(".aws/cli/cache"):
		return "AWS credentials", true
	case under(".netrc") || under(".git-credentials") || under(".docker/config.json") || under(".kube/config") ||
		under(".gnupg") || under(".config/gcloud") || under(".azure") || under(".npmrc") || under(".pypirc") ||
		under(".config/gh/hosts.yml") || under("Library/Keychains"):
		return "stored credentials", true
	case abs == "/etc/shadow" || abs == "/etc/gshadow" || strings.HasPrefix(abs, "/etc/sudoers"):
		return "system credentials", true
	case strings.HasSuffix(base, ".keychain") || strings.HasSuffix(base, ".keychain-db"):
		return "a keychain", true
	case base == ".env" || strings.HasPrefix(base, ".env.") && !envTemplate(base):
		return "an environment file with secrets", true
	}
	return "", false
}

// envTemplate: .env.example, .env.test.sample and the like hold no secrets.
func envTemplate(base string) bool {
	for _, part := range strings.Split(strings.TrimPrefix(base, ".env."), ".") {
		switch part {
		case "example", "sample", "template", "dist", "defaults":
			return true
		}
	}
	return false
}

var (
	downloaders  = set("curl", "wget", "fetch", "aria2c", "http", "https", "xh")
	interpreters = set("sh", "bash", "zsh", "dash", "ksh", "fish", "python", "python2", "python3", "perl", "ruby", "node", "php", "pwsh", "source", ".", "eval")
	sharedBranch = []string{"main", "master", "develop", "development", "trunk", "release", "production", "prod", "staging"}
	escalators   = set("sudo", "doas", "su", "pkexec", "runuser")
)

func set(names ...string) map[string]bool {
	m := map[string]bool{}
	for _, n := range names {
		m[n] = true
	}
	return m
}

// bashAll is every known risk of a program, in bash's order (each
// command line's first), without repeats.
func (rv reviewer) bashAll(prog *bashscan.Program) []finding {
	var out []finding
	seen := map[string]bool{}
	add := func(f *finding) {
		if f != nil && !seen[f.reason] {
			seen[f.reason] = true
			out = append(out, *f)
		}
	}
	add(forkBomb(prog))
	add(downloadExec(prog))
	if c, ok := prog.Opaque(); ok {
		add(&finding{ComputedCommand, fmt.Sprintf("%q: %s", c.Text(), c.OpaqueReason)})
		return out
	}
	for i := range prog.Commands {
		c := &prog.Commands[i]
		for _, iv := range c.Invocations {
			if iv.Script || len(iv.Words) == 0 {
				continue
			}
			add(rv.invocation(prog, iv))
		}
	}
	add(rv.paths(prog))
	return out
}

func (rv reviewer) bash(prog *bashscan.Program) *finding {
	if f := forkBomb(prog); f != nil {
		return f
	}
	if f := downloadExec(prog); f != nil {
		return f
	}
	if c, ok := prog.Opaque(); ok {
		return &finding{ComputedCommand, fmt.Sprintf("%q: %s", c.Text(), c.OpaqueReason)}
	}
	for i := range prog.Commands {
		c := &prog.Commands[i]
		for _, iv := range c.Invocations {
			if iv.Script || len(iv.Words) == 0 {
				continue
			}
			if f := rv.invocation(prog, iv); f != nil {
				return f
			}
		}
	}
	return rv.paths(prog)
}

// forkBomb: a function that calls itself.
func forkBomb(prog *bashscan.Program) *finding {
	for i := range prog.Commands {
		c := &prog.Commands[i]
		if c.Function != "" && c.Kind == bashscan.KindFuncCall && c.Name() == c.Function {
			return &finding{Destructive, fmt.Sprintf("function %s calls itself (fork bomb pattern)", c.Function)}
		}
	}
	return nil
}

func invocationNames(c *bashscan.Command) []string {
	var out []string
	for _, iv := range c.Invocations {
		if n := iv.Name(); n != "" {
			out = append(out, n)
		}
	}
	return out
}

func anyIn(names []string, m map[string]bool) (string, bool) {
	for _, n := range names {
		if m[n] {
			return n, true
		}
	}
	return "", false
}

// downloadExec: a download whose output reaches an interpreter through a
// pipe, a process substitution or a command substitution.
func downloadExec(prog *bashscan.Program) *finding {
	for _, id := range prog.Pipelines() {
		stages := prog.PipelineStages(id)
		dl := -1
		for k, stage := range stages {
			for _, ci := range stage {
				names := invocationNames(&prog.Commands[ci])
				if n, ok := anyIn(names, interpreters); ok && dl >= 0 && k > dl {
					return &finding{DownloadExec, fmt.Sprintf("pipes a download into %s", n)}
				}
				if _, ok := anyIn(names, downloaders); ok && dl < 0 {
					dl = k
				}
			}
		}
	}
	for i := range prog.Commands {
		c := &prog.Commands[i]
		if _, ok := anyIn(invocationNames(c), downloaders); !ok || c.Via == bashscan.ViaTop || c.Via == bashscan.ViaScript {
			continue
		}
		for _, a := range prog.Ancestors(i) {
			if n, ok := anyIn(invocationNames(&prog.Commands[a]), interpreters); ok {
				return &finding{DownloadExec, fmt.Sprintf("runs a download with %s", n)}
			}
		}
	}
	return nil
}

func (rv reviewer) invocation(prog *bashscan.Program, iv bashscan.Invocation) *finding {
	name := iv.Name()
	args := iv.Words[1:]
	text := bashscan.JoinText(iv.Words)
	flags := func(short string, long ...string) bool {
		for _, a := range args {
			if !a.Static {
				continue
			}
			t := a.Text
			for _, l := range long {
				if t == l {
					return true
				}
			}
			if short != "" && strings.HasPrefix(t, "-") && !strings.HasPrefix(t, "--") && strings.ContainsAny(t[1:], short) {
				return true
			}
		}
		return false
	}
	switch {
	case escalators[name]:
		return &finding{PrivilegeEscalation, fmt.Sprintf("%q runs with elevated privileges", text)}
	case name == "rm" && flags("rR", "--recursive"):
		for _, w := range operands(args) {
			if why, broad := rv.broadTarget(prog, w); broad {
				return &finding{Destructive, fmt.Sprintf("%q recursively deletes %s", text, why)}
			}
		}
	case strings.HasPrefix(name, "mkfs") || name == "mke2fs" || name == "wipefs" || name == "fdisk" || name == "sfdisk" || name == "parted" || name == "sgdisk":
		return &finding{Destructive, fmt.Sprintf("%q formats or repartitions a disk", text)}
	case name == "dd":
		for _, a := range args {
			if a.Static && strings.HasPrefix(a.Text, "of=/dev/") && !bashscan.HarmlessDevice(strings.TrimPrefix(a.Text, "of=")) {
				return &finding{Destructive, fmt.Sprintf("%q writes to a device", text)}
			}
		}
	case name == "shred":
		for _, w := range operands(args) {
			if w.Static && strings.HasPrefix(w.Text, "/dev/") {
				return &finding{Destructive, fmt.Sprintf("%q overwrites a device", text)}
			}
		}
	case (name == "chmod" || name == "chown" || name == "chgrp") && flags("R", "--recursive"):
		ops := operands(args)
		if len(ops) > 1 {
			for _, w := range ops[1:] {
				if why, broad := rv.broadTarget(prog, w); broad {
					return &finding{Destructive, fmt.Sprintf("%q recursively changes permissions of %s", text, why)}
				}
			}
		}
	case name == "git":
		return rv.git(args, text)
	case name == "setenforce" && len(args) > 0 && (args[0].Text == "0" || strings.EqualFold(args[0].Text, "permissive")),
		name == "ufw" && len(args) > 0 && args[0].Text == "disable",
		name == "spctl" && flags("", "--master-disable", "--global-disable"),
		name == "csrutil" && len(args) > 0 && args[0].Text == "disable",
		(name == "iptables" || name == "ip6tables") && flags("F", "--flush"):
		return &finding{SecurityDisable, fmt.Sprintf("%q disables a security control", text)}
	case name == "systemctl" && len(args) > 1:
		if verb := args[0].Text; verb == "stop" || verb == "disable" || verb == "mask" || verb == "kill" {
			for _, a := range args[1:] {
				svc := strings.TrimSuffix(a.Text, ".service")
				switch svc {
				case "firewalld", "ufw", "apparmor", "auditd", "selinux", "fail2ban", "nftables", "iptables":
					return &finding{SecurityDisable, fmt.Sprintf("%q stops a security service", text)}
				}
			}
		}
	case name == "security" && len(args) > 0 && (strings.HasPrefix(args[0].Text, "find-") && strings.HasSuffix(args[0].Text, "-password") || args[0].Text == "dump-keychain"),
		name == "secret-tool" && len(args) > 0 && args[0].Text == "lookup",
		name == "gh" && len(args) > 1 && args[0].Text == "auth" && args[1].Text == "token",
		name == "gcloud" && strings.Contains(text, "print-access-token"),
		name == "aws" && len(args) > 1 && args[0].Text == "configure" && (args[1].Text == "get" || args[1].Text == "export-credentials"):
		return &finding{CredentialAccess, fmt.Sprintf("%q reads stored credentials", text)}
	case name == "curl" || name == "wget":
		return rv.transfer(name, args, text)
	case name == "nc" || name == "ncat" || name == "netcat" || name == "socat" || name == "telnet":
		for _, w := range operands(args) {
			if !w.Static || remoteHost(w.Text) {
				return &finding{Exfiltration, fmt.Sprintf("%q connects to %s", text, w.Text)}
			}
		}
	case name == "scp" || name == "rsync" || name == "sftp":
		ops := operands(args)
		if len(ops) > 0 {
			last := ops[len(ops)-1]
			if !last.Static || strings.Contains(last.Text, ":") {
				return &finding{Exfiltration, fmt.Sprintf("%q sends files to a remote host", text)}
			}
		}
	}
	for _, w := range iv.Words {
		if !w.Static {
			continue
		}
		cands, _ := rv.scope.BashPath(prog, w)
		for _, abs := range cands {
			if why, ok := rv.credential(abs); ok {
				return &finding{CredentialAccess, fmt.Sprintf("%q touches %s (%s)", text, w.Text, why)}
			}
		}
	}
	return nil
}

func operands(words []bashscan.Word) []bashscan.Word {
	var out []bashscan.Word
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

// broadTarget reports whether a delete or permission target is broad: the
// file system root, the home directory, the project root or any of its
// ancestors, anything outside the writable scope, or a computed path.
func (rv reviewer) broadTarget(prog *bashscan.Program, w bashscan.Word) (string, bool) {
	cands, _ := rv.scope.BashPath(prog, w)
	if len(cands) == 0 {
		return fmt.Sprintf("%s, a path computed at run time", w.Text), true
	}
	for _, abs := range cands {
		switch {
		case abs == "/":
			return "the file system root", true
		case rv.scope.HomeDir != "" && (abs == rv.scope.HomeDir || strings.HasPrefix(rv.scope.HomeDir, abs+"/")):
			return "the home directory", true
		case rv.scope.ProjectRoot != "" && (abs == rv.scope.ProjectRoot || strings.HasPrefix(rv.scope.ProjectRoot, abs+"/")):
			return "the whole project", true
		case w.Glob && w.Text != "" && path.Dir(abs) == "/":
			return "top-level directories", true
		case !rv.writable(abs):
			return abs + ", outside the project scope", true
		}
	}
	return "", false
}

func (rv reviewer) git(args []bashscan.Word, text string) *finding {
	// Skip global options (-C dir, -c key=value).
	i := 0
	for i < len(args) && args[i].Option() {
		if args[i].Text == "-C" || args[i].Text == "-c" {
			i++
		}
		i++
	}
	if i >= len(args) {
		return nil
	}
	sub, rest := args[i].Text, args[i+1:]
	has := func(names ...string) bool {
		for _, a := range rest {
			for _, n := range names {
				if a.Text == n || strings.HasPrefix(a.Text, n+"=") {
					return true
				}
			}
		}
		return false
	}
	switch sub {
	case "push":
		ops := operands(rest)
		force := has("--force", "-f", "--force-with-lease", "--force-if-includes", "--mirror", "--delete", "-d", "--prune")
		var refs []string
		for k, w := range ops {
			if k == 0 {
				continue // the remote
			}
			if strings.HasPrefix(w.Text, "+") || strings.HasPrefix(w.Text, ":") {
				force = true
			}
			refs = append(refs, w.Text)
		}
		if !force {
			return nil
		}
		if len(refs) == 0 {
			return &finding{HistoryRewrite, fmt.Sprintf("%q force-pushes the current branch, which may be shared", text)}
		}
		for _, ref := range refs {
			dst := ref
			if _, after, ok := strings.Cut(ref, ":"); ok {
				dst = after
			}
			dst = strings.TrimPrefix(strings.TrimPrefix(dst, "+"), "refs/heads/")
			if dst == "" || dst == "HEAD" || shared(dst) {
				return &finding{HistoryRewrite, fmt.Sprintf("%q force-pushes or deletes shared branch %s", text, ref)}
			}
		}
	case "reset":
		if has("--hard") {
			return &finding{HistoryRewrite, fmt.Sprintf("%q discards uncommitted work and moves the branch", text)}
		}
	case "clean":
		for _, a := range rest {
			if a.Option() && !strings.HasPrefix(a.Text, "--") && strings.Contains(a.Text, "f") || a.Text == "--force" {
				return &finding{Destructive, fmt.Sprintf("%q deletes untracked files", text)}
			}
		}
	}
	return nil
}

func shared(branch string) bool {
	for _, s := range sharedBranch {
		if branch == s || strings.HasPrefix(branch, s+"/") || strings.HasPrefix(branch, s+"-") {
			return true
		}
	}
	return false
}

// curlValueOpts take the next word as their value (so it is not a URL).
var curlValueOpts = set("-o", "--output", "-H", "--header", "-d", "--data", "--data-binary", "--data-raw",
	"--data-urlencode", "--data-ascii", "--json", "-F", "--form", "-X", "--request", "-u", "--user", "-A",
	"--user-agent", "-e", "--referer", "-b", "--cookie", "-c", "--cookie-jar", "-K", "--config", "-T",
	"--upload-file", "-w", "--write-out", "-m", "--max-time", "--connect-timeout", "--retry", "-x", "--proxy",
	"-E", "--cert", "--key", "--cacert", "--resolve", "-r", "--range", "-C", "--continue-at", "-O",
	"--output-document", "--post-file", "--body-file", "--post-data", "--header-file", "-i", "--input-file",
	"-U", "--proxy-user", "-z", "--time-cond", "--limit-rate", "-Y", "-y")

// transfer: uploads of local data to a remote host.
func (rv reviewer) transfer(name string, args []bashscan.Word, text string) *finding {
	upload := false
	var targets []bashscan.Word
	for k := 0; k < len(args); k++ {
		a := args[k]
		if !a.Static {
			targets = append(targets, a)
			continue
		}
		opt, value, hasVal := strings.Cut(a.Text, "=")
		if !(hasVal && strings.HasPrefix(opt, "--")) {
			opt, value = a.Text, ""
			if curlValueOpts[opt] && k+1 < len(args) {
				k++
				value = args[k].Text
			}
		}
		if opt == "--url" {
			targets = append(targets, bashscan.Word{Text: value, Static: true})
			continue
		}
		switch opt {
		case "-d", "--data", "--data-binary", "--data-urlencode", "--data-ascii", "--json", "-F", "--form":
			if strings.HasPrefix(value, "@") || strings.Contains(value, "=@") || strings.Contains(value, "=<") {
				upload = true
			}
		case "-T", "--upload-file", "--post-file", "--body-file":
			upload = true
		}
		if !strings.HasPrefix(a.Text, "-") {
			targets = append(targets, a)
		}
	}
	if !upload {
		return nil
	}
	for _, w := range targets {
		if !w.Static {
			return &finding{Exfiltration, fmt.Sprintf("%q uploads local data to a computed address", text)}
		}
		if host := urlHost(w.Text); host != "" && remoteHost(host) {
			return &finding{Exfiltration, fmt.Sprintf("%q uploads local data to %s", text, host)}
		}
	}
	return nil
}

func urlHost(s string) string {
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil {
		return ""
	}
	return u.Hostname()
}

// remoteHost: a host that is not this machine.
func remoteHost(h string) bool {
	h = strings.Trim(strings.ToLower(h), "[]")
	if h == "" || strings.HasPrefix(h, "-") {
		return false
	}
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return false
	}
	if ip := net.ParseIP(h); ip != nil {
		return !ip.IsLoopback() && !ip.IsUnspecified()
	}
	// A bare port number ("nc -l 8080") is not a host.
	if strings.Trim(h, "0123456789") == "" {
		return false
	}
	return true
}

// paths: writes outside the project scope and reads of credentials, from
// redirections and the known file arguments of commands.
func (rv reviewer) paths(prog *bashscan.Program) *finding {
	for _, ref := range prog.PathRefs() {
		cands, _ := rv.scope.BashPath(prog, ref.Path)
		if ref.Access.Writes() {
			if ref.Path.Static && bashscan.HarmlessDevice(ref.Path.Text) {
				continue
			}
			if len(cands) == 0 {
				return &finding{WriteOutsideProject, fmt.Sprintf("%s writes %s, a path computed at run time", ref.Source, ref.Path.Text)}
			}
			for _, abs := range cands {
				if strings.HasPrefix(abs, "/dev/") && !bashscan.HarmlessDevice(abs) {
					return &finding{Destructive, fmt.Sprintf("%s writes to device %s", ref.Source, abs)}
				}
				if !rv.writable(abs) {
					return &finding{WriteOutsideProject, fmt.Sprintf("%s writes %s, outside the project scope", ref.Source, abs)}
				}
			}
		}
		for _, abs := range cands {
			if why, ok := rv.credential(abs); ok {
				return &finding{CredentialAccess, fmt.Sprintf("%s %s %s (%s)", ref.Source, ref.Access, ref.Path.Text, why)}
			}
		}
	}
	return nil
}
