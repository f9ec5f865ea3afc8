package clientcmd

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/openprogram/lifecycle/shared/apiclient"
	"github.com/openprogram/lifecycle/shared/embedded"
	"github.com/openprogram/lifecycle/shared/ids"
)

// DefaultAPI is where `lifecycle serve` listens by default.
const DefaultAPI = "http://127.0.0.1:8080"

// DefaultWorkspace is where `lifecycle serve` runs host tools by default.
const DefaultWorkspace = "workspace"

// StateDir is the state directory `lifecycle serve` uses: stateDir when
// given, otherwise the default for the workspace
// (embedded.DefaultStateDir: under $XDG_STATE_HOME, outside the workspace
// and its parent). serve and token agree on it from the same workspace.
func StateDir(stateDir, workspace string) (string, error) {
	if stateDir != "" {
		return filepath.Abs(stateDir)
	}
	return embedded.DefaultStateDir(workspace)
}

// options are the flags every client command shares.
type options struct {
	api     string
	token   string
	json    bool
	session string
	out     io.Writer
}

// AddTo adds the client commands to root, with the shared persistent
// flags --api, --token and --json.
func AddTo(root *cobra.Command) {
	o := &options{}
	pf := root.PersistentFlags()
	pf.StringVar(&o.api, "api", EnvOr("LIFECYCLE_API", DefaultAPI), "API address (env LIFECYCLE_API)")
	// The default is read when a command runs, not here: a flag's default
	// is printed by --help, and a token must never reach help output.
	pf.StringVar(&o.token, "token", "", "bearer token (default: env LIFECYCLE_TOKEN; `lifecycle token` makes one)")
	pf.BoolVar(&o.json, "json", false, "print JSON for scripts")
	root.AddCommand(tokenCmd(o), submitCmd(o), showCmd(o), approvalsCmd(o), decideCmd(o, "approve"), decideCmd(o, "decline"),
		reconcileCmd(o), commandCmd(o), endCmd(o), activityCmd(o), tailCmd(o), policyCmd(o), hostCmd(o),
		questionsCmd(o), answerCmd(o), psCmd(o), logsCmd(o), stopCmd(o), revisionsCmd(o), revisionPolicyCmd(o), auditCmd(o))
}

// EnvOr is the environment variable name, or def when it is unset or empty.
func EnvOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// bearer is --token, or LIFECYCLE_TOKEN.
func (o *options) bearer() string {
	if o.token != "" {
		return o.token
	}
	return os.Getenv("LIFECYCLE_TOKEN")
}

func (o *options) client() (*apiclient.Client, error) {
	o.token = o.bearer()
	if o.token == "" {
		return nil, errors.New("no token: pass --token or set LIFECYCLE_TOKEN (see `lifecycle token`)")
	}
	return &apiclient.Client{BaseURL: o.api, Token: o.token, Origin: "cli"}, nil
}

// sessionOf is --session, or the session the token is scoped to (read
// from its claims without verifying: the server verifies).
// sessionClient is the client and the session most commands need.
func (o *options) sessionClient() (*apiclient.Client, ids.SessionID, error) {
	c, err := o.client()
	if err != nil {
		return nil, "", err
	}
	session, err := o.sessionOf()
	if err != nil {
		return nil, "", err
	}
	return c, session, nil
}

func (o *options) sessionOf() (ids.SessionID, error) {
	if o.session != "" {
		return ids.SessionID(o.session), nil
	}
	parts := strings.Split(o.bearer(), ".")
	if len(parts) == 3 {
		if b, err := base64.RawURLEncoding.DecodeString(parts[1]); err == nil {
			var c struct {
				Sid string `json:"sid"`
			}
			if json.Unmarshal(b, &c) == nil && c.Sid != "" {
				return ids.SessionID(c.Sid), nil
			}
		}
	}
	return "", errors.New("no session: pass --session (the token names none)")
}

func (o *options) print(v any, human func(w io.Writer)) error {
	if o.json {
		enc := json.NewEncoder(o.out)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	human(o.out)
	return nil
}

// setup binds the command's output and adds --session where it applies.
func (o *options) setup(cmd *cobra.Command, withSession bool) *cobra.Command {
	if withSession {
		cmd.Flags().StringVar(&o.session, "session", "", "session id (default: the token's session)")
	}
	pre := cmd.PreRunE
	cmd.PreRunE = func(c *cobra.Command, args []string) error {
		o.out = c.OutOrStdout()
		if pre != nil {
			return pre(c, args)
		}
		return nil
	}
	cmd.SilenceUsage = true
	return cmd
}

func short(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}

func ago(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return time.Since(t).Round(time.Second).String() + " ago"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func fprintf(w io.Writer, format string, a ...any) { fmt.Fprintf(w, format, a...) }

func absPath(p string) (string, error) { return filepath.Abs(p) }
