package clientcmd

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/openprogram/lifecycle/shared/actionflow"
)

// revisionsCmd lists the published revisions with the session's open
// executions pinned to each (GET /v1/revisions).
func revisionsCmd(o *options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "revisions",
		Short: "List the published revisions (state machine version + handler contract), the live one, and the open executions pinned to each",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, session, err := o.sessionClient()
			if err != nil {
				return err
			}
			res, err := c.Revisions(cmd.Context(), session)
			if err != nil {
				return err
			}
			return o.print(res, func(w io.Writer) {
				for _, r := range res.Revisions {
					live := ""
					if r.Live {
						live = "  (live)"
					}
					fprintf(w, "%s  contract %d (resumes %s)  %s  published %s%s\n", r.RevisionID, r.Contract, ints(r.Resumes),
						r.VersionARN, r.PublishedAt.Format(time.RFC3339), live)
					for _, e := range r.OpenExecutions {
						fprintf(w, "    %s  %s  %s", e.ExecutionID, e.Status, e.RevisionPolicy)
						if e.ActiveRevision != "" && string(e.ActiveRevision) != r.RevisionID {
							fprintf(w, "  active %s", e.ActiveRevision)
						}
						if e.PauseReason != "" {
							fprintf(w, "  paused: %s", e.PauseReason)
						}
						fprintf(w, "\n")
					}
				}
				if len(res.Revisions) == 0 {
					fprintf(w, "no revision published yet\n")
				}
			})
		},
	}
	return o.setup(cmd, true)
}

// revisionPolicyCmd sends set_revision_policy: version-fenced, it changes
// which revision the execution's later actions start on and starts nothing.
func revisionPolicyCmd(o *options) *cobra.Command {
	var commandID string
	var expected int64
	cmd := &cobra.Command{
		Use:   "revision-policy EXECUTION_ID keep_original|use_latest",
		Short: "Set an execution's revision policy: keep_original (its active revision) or use_latest (adopt a compatible newer one at its next action); starts nothing",
		Example: "  lifecycle revision-policy exe_01... use_latest\n" +
			"  lifecycle revision-policy exe_01... keep_original --expected-version 7",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !actionflow.ValidRevisionPolicy(args[1]) {
				return fmt.Errorf("policy %q: want %s or %s", args[1], actionflow.KeepOriginal, actionflow.UseLatest)
			}
			c, id, body, err := o.commandBody(cmd.Context(), args[0], commandID, expected)
			if err != nil {
				return err
			}
			body.Type = "set_revision_policy"
			if body.Payload, err = json.Marshal(map[string]string{"policy": args[1]}); err != nil {
				return err
			}
			res, err := c.Command(cmd.Context(), id, body)
			if err != nil {
				return err
			}
			return o.printCommand(res)
		},
	}
	f := cmd.Flags()
	f.StringVar(&commandID, "id", "", "command id (default: a new one; repeat it to repeat the command)")
	f.Int64Var(&expected, "expected-version", -1, "the execution version you saw (default: read it now)")
	return o.setup(cmd, false)
}

func ints(xs []int) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprint(x)
	}
	return strings.Join(parts, ",")
}
