package clientcmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/apiclient"
	"github.com/openprogram/lifecycle/shared/auth"
	"github.com/openprogram/lifecycle/shared/hosttools"
	"github.com/openprogram/lifecycle/shared/hostworker"
	"github.com/openprogram/lifecycle/shared/httpapi"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/replay"
)

func tokenCmd(o *options) *cobra.Command {
	var role, session, subject, stateDir, workspace string
	var ttl time.Duration
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Issue an API token for a local `lifecycle serve` (keys under its state directory)",
		Long: `token issues a token signed with the keys of a local ` + "`lifecycle serve`" + `: agent tokens with
auth.key, human and admin tokens with human.key. A human or admin token can approve actions and
change the policy, so it is issued only after you confirm on your terminal (/dev/tty); without a
terminal it is refused. The state directory is the one serve uses for the same workspace
(--state-dir or LIFECYCLE_STATE_DIR, else derived from --workspace, as serve derives it).`,
		Example: "  lifecycle token --role human --session ses_1\n" +
			"  export LIFECYCLE_TOKEN=$(lifecycle token --role agent --session ses_1)",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !auth.ValidRole(role) {
				return fmt.Errorf("--role %q: want agent, human or admin", role)
			}
			dir, err := StateDir(stateDir, workspace)
			if err != nil {
				return err
			}
			keys := auth.Keys{}
			if role == auth.RoleAgent {
				// An agent token needs the agent key only; the human key is
				// never read for it.
				if keys.Agent, err = auth.LoadOrCreateKey(dir); err != nil {
					return err
				}
			} else {
				if err := confirmPrivileged(role, session); err != nil {
					return err
				}
				if keys, err = auth.LoadOrCreateKeys(dir); err != nil {
					return err
				}
			}
			iss, err := auth.NewIssuer(keys)
			if err != nil {
				return err
			}
			var tok string
			if subject != "" {
				tok, err = iss.IssueSubject(subject, role, ids.SessionID(session), ttl)
			} else {
				tok, err = iss.Issue(role, ids.SessionID(session), ttl)
			}
			if err != nil {
				return err
			}
			return o.print(map[string]any{"token": tok, "role": role, "session": session, "expires_at": time.Now().Add(ttl).UTC()},
				func(w io.Writer) { fmt.Fprintln(w, tok) })
		},
	}
	f := cmd.Flags()
	f.StringVar(&role, "role", auth.RoleHuman, "agent, human or admin (human and admin need a confirmation on your terminal)")
	f.StringVar(&session, "session", "", "the session the token is scoped to (required except for admin)")
	f.StringVar(&subject, "subject", "", "the principal's name (default <role>:<session>)")
	f.StringVar(&stateDir, "state-dir", os.Getenv("LIFECYCLE_STATE_DIR"), "state directory of `lifecycle serve` (env LIFECYCLE_STATE_DIR; default: derived from --workspace)")
	f.StringVar(&workspace, "workspace", EnvOr("LIFECYCLE_WORKSPACE", DefaultWorkspace), "the workspace `lifecycle serve` runs tools in (env LIFECYCLE_WORKSPACE), which names its default state directory")
	f.DurationVar(&ttl, "ttl", 12*time.Hour, "lifetime")
	return o.setup(cmd, false)
}

func submitCmd(o *options) *cobra.Command {
	var tool, args, callID, execution, key, title string
	var interactive bool
	var wait time.Duration
	cmd := &cobra.Command{
		Use:     "submit",
		Short:   "Submit a tool call and optionally wait for its outcome",
		Example: `  lifecycle submit --tool Bash --args '{"command":"ls"}' --wait 30s`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, session, err := o.sessionClient()
			if err != nil {
				return err
			}
			if callID == "" {
				callID = ids.New("call")
			}
			if key == "" {
				key = callID
			}
			body := httpapi.SubmitBody{Tool: tool, Arguments: json.RawMessage(args), ToolCallID: ids.ToolCallID(callID),
				ExecutionID: ids.ExecutionID(execution), Interactive: &interactive, Title: title}
			v, _, err := c.Submit(cmd.Context(), apiclient.SubmitRequest{SessionID: session, IdempotencyKey: key, Body: body})
			if err != nil {
				return err
			}
			if wait > 0 {
				if v, err = waitOutcome(cmd.Context(), c, v.ActionID, wait); err != nil {
					return err
				}
			}
			return o.print(v, func(w io.Writer) { printAction(w, v) })
		},
	}
	f := cmd.Flags()
	f.StringVar(&tool, "tool", "", "tool name (required)")
	f.StringVar(&args, "args", "{}", "arguments, a JSON object")
	f.StringVar(&callID, "tool-call-id", "", "the model's tool call id (default: a new one)")
	f.StringVar(&execution, "execution", "", "continue this execution (default: a new one)")
	f.StringVar(&key, "idempotency-key", "", "idempotency key (default: the tool call id)")
	f.StringVar(&title, "title", "", "a short title of the execution this call starts (its Activity heading; at most 120 characters)")
	f.BoolVar(&interactive, "interactive", true, "an owner can answer approvals")
	f.DurationVar(&wait, "wait", 0, "wait up to this long for the outcome")
	cmd.MarkFlagRequired("tool")
	return o.setup(cmd, true)
}

// waitOutcome long-polls in steps of at most 30 s until the outcome is known.
func waitOutcome(ctx context.Context, c *apiclient.Client, id ids.ActionID, total time.Duration) (httpapi.ActionView, error) {
	deadline := time.Now().Add(total)
	for {
		step := min(time.Until(deadline), httpapi.DefaultMaxWait)
		v, err := c.Action(ctx, id, max(step, 0))
		if err != nil || v.Receipt != nil || time.Until(deadline) <= 0 {
			return v, err
		}
	}
}

func showCmd(o *options) *cobra.Command {
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "show ACTION_ID",
		Short: "Show an action: decision and reason, outcome, delivery, receipt",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			v, err := waitOutcome(cmd.Context(), c, ids.ActionID(args[0]), wait)
			if err != nil {
				return err
			}
			return o.print(v, func(w io.Writer) { printAction(w, v) })
		},
	}
	cmd.Flags().DurationVar(&wait, "wait", 0, "wait up to this long for the outcome")
	return o.setup(cmd, false)
}

func printAction(w io.Writer, v httpapi.ActionView) {
	fprintf(w, "action      %s\n", v.ActionID)
	fprintf(w, "execution   %s (session %s)\n", v.ExecutionID, v.SessionID)
	fprintf(w, "tool        %s %s\n", v.Tool, short(string(v.Arguments), 100))
	fprintf(w, "permission  %s", orDash(string(v.States.Permission)))
	if v.Decision != nil {
		fprintf(w, " (%s/%s", v.Decision.Reason.Source, v.Decision.Reason.Code)
		if v.Decision.Reason.Detail != "" {
			fprintf(w, ": %s", v.Decision.Reason.Detail)
		}
		fprintf(w, "; policy %s)", orDash(v.Decision.PolicyVersion))
	}
	fprintf(w, "\noutcome     %s\ndelivery    %s\n", orDash(string(v.States.Outcome)), v.States.Delivery)
	if v.Revision != "" {
		fprintf(w, "revision    %s", v.Revision)
		if v.Handoff != nil {
			fprintf(w, " (handed off from %s at its approval)", v.Handoff.FromRevision)
		}
		fprintf(w, "\n")
	}
	if v.Approval != nil {
		fprintf(w, "approval    %s %s\n", v.Approval.ApprovalID, v.Approval.Status)
	}
	if rc := v.Receipt; rc != nil {
		if rc.ErrorCode != "" {
			fprintf(w, "error       %s %s\n", rc.ErrorCode, short(rc.Error, 200))
		}
		if rc.Output != "" {
			fprintf(w, "output\n%s", rc.Output)
			if !strings.HasSuffix(rc.Output, "\n") {
				fprintf(w, "\n")
			}
		}
		if rc.Reconciliation != "" && v.Reconciliation == nil {
			fprintf(w, "reconcile   %s\n", rc.Reconciliation)
		}
	}
	if r := v.Reconciliation; r != nil {
		fprintf(w, "reconciled  %s by %s at %s: %s\n", r.Outcome, r.ReconciledBy.Subject, r.ReconciledAt.Format(time.RFC3339), short(r.Note, 200))
	}
}

func approvalsCmd(o *options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "approvals",
		Short: "List the session's pending approvals",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, session, err := o.sessionClient()
			if err != nil {
				return err
			}
			aps, err := c.Approvals(cmd.Context(), session)
			if err != nil {
				return err
			}
			return o.print(aps, func(w io.Writer) {
				if len(aps) == 0 {
					fmt.Fprintln(w, "nothing is waiting for a decision")
				}
				for _, ap := range aps {
					fprintf(w, "%s  %s %s\n    reason %s/%s, policy %s, %s\n", ap.ApprovalID, ap.Tool, short(string(ap.Arguments), 100),
						ap.Reason.Source, ap.Reason.Code, ap.PolicyVersion, ago(ap.CreatedAt))
					printRisk(w, ap.Risk)
				}
			})
		},
	}
	return o.setup(cmd, true)
}

// printRisk prints an approval's risk: the level (HIGH in capitals, so it
// stands out in a list) and each reason, a model's marked as such.
func printRisk(w io.Writer, r *actionflow.Risk) {
	if r == nil {
		return
	}
	level := r.Level
	if level == "high" {
		level = "HIGH"
	}
	fprintf(w, "    risk %s\n", level)
	for _, rr := range r.Reasons {
		note := ""
		if rr.ModelGenerated {
			note = " (model-generated, " + rr.Source + ")"
		}
		fprintf(w, "      - %s%s\n", short(rr.Text, 200), note)
	}
}

func decideCmd(o *options, decision string) *cobra.Command {
	var digest string
	cmd := &cobra.Command{
		Use:   decision + " APPROVAL_ID",
		Short: strings.ToUpper(decision[:1]) + decision[1:] + " a pending approval (human owner)",
		Long: "Without --digest the pending approval is looked up and its exact arguments digest is used;\n" +
			"the decision is refused if the action's arguments are not the ones shown.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			id := ids.ApprovalID(args[0])
			if digest == "" {
				session, err := o.sessionOf()
				if err != nil {
					return err
				}
				aps, err := c.Approvals(cmd.Context(), session)
				if err != nil {
					return err
				}
				for _, ap := range aps {
					if ap.ApprovalID == id {
						digest = ap.ArgsDigest
						if !o.json {
							fprintf(o.out, "%s %s\n", ap.Tool, short(string(ap.Arguments), 200))
						}
					}
				}
				if digest == "" {
					return fmt.Errorf("approval %s is not pending in session %s", id, session)
				}
			}
			ap, err := c.Decide(cmd.Context(), id, decision, digest)
			var ce *actionflow.ConflictError
			if errors.As(err, &ce) {
				return fmt.Errorf("%s: %s", ce.Code, ce.Msg)
			}
			if err != nil {
				return err
			}
			return o.print(ap, func(w io.Writer) { fprintf(w, "%s %s\n", ap.ApprovalID, ap.Status) })
		},
	}
	cmd.Flags().StringVar(&digest, "digest", "", "the action's args digest you decided on (default: looked up)")
	return o.setup(cmd, true)
}

func reconcileCmd(o *options) *cobra.Command {
	var req actionflow.ReconcileRequest
	var outcome string
	cmd := &cobra.Command{
		Use:   "reconcile ACTION_ID",
		Short: "Reconcile an action whose outcome is unknown: succeeded or failed (human owner)",
		Long: "Check the effects of the operation first (`lifecycle show` prints what to check), then say\n" +
			"what happened. The receipt keeps saying unknown; the reconciliation is stored beside it once,\n" +
			"the action takes its outcome and the execution leaves Needs attention. Repeating the same\n" +
			"reconciliation is harmless; a different one after it is refused with the first.",
		Example: "  lifecycle reconcile act_01... --outcome failed --note \"the file was not written\"",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			req.Outcome = lifecycle.Outcome(outcome)
			rec, applied, err := c.Reconcile(cmd.Context(), ids.ActionID(args[0]), req)
			var ce *actionflow.ConflictError
			if errors.As(err, &ce) {
				return fmt.Errorf("%s: %s", ce.Code, ce.Msg)
			}
			if err != nil {
				return err
			}
			return o.print(rec, func(w io.Writer) {
				state := "reconciled"
				if !applied {
					state = "already reconciled"
				}
				fprintf(w, "%s %s as %s by %s: %s\n", rec.ActionID, state, rec.Outcome, rec.ReconciledBy.Subject, rec.Note)
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&outcome, "outcome", "", "what happened: succeeded or failed (required)")
	f.StringVar(&req.Note, "note", "", "what you checked (required)")
	f.StringVar(&req.Evidence, "evidence", "", "optional text evidence")
	f.StringVar(&req.EvidenceRef, "evidence-ref", "", "optional blob reference of larger evidence")
	cmd.MarkFlagRequired("outcome")
	cmd.MarkFlagRequired("note")
	return o.setup(cmd, false)
}

func commandCmd(o *options) *cobra.Command {
	var typ, payload, commandID string
	var expected int64
	cmd := &cobra.Command{
		Use:     "command EXECUTION_ID",
		Short:   "Send a control command: pause, continue, step, steer, cancel, fork, retry",
		Example: "  lifecycle command exe_01... --type pause\n  lifecycle command exe_01... --type steer --payload '{\"text\":\"use the staging bucket\"}'\n  lifecycle command exe_01... --type fork --payload '{\"checkpoint_version\":2}'",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, id, body, err := o.commandBody(cmd.Context(), args[0], commandID, expected)
			if err != nil {
				return err
			}
			body.Type = typ
			if payload != "" {
				body.Payload = json.RawMessage(payload)
			}
			res, err := c.Command(cmd.Context(), id, body)
			if err != nil {
				return err
			}
			return o.printCommand(res)
		},
	}
	f := cmd.Flags()
	f.StringVar(&typ, "type", "", "command type (required)")
	f.StringVar(&payload, "payload", "", "payload, a JSON object")
	f.StringVar(&commandID, "id", "", "command id (default: a new one; repeat it to repeat the command)")
	f.Int64Var(&expected, "expected-version", -1, "the execution version you saw (default: read it now)")
	cmd.MarkFlagRequired("type")
	return o.setup(cmd, false)
}

// commandBody is what every command the CLI sends starts with: its id (a
// new one unless --id repeats one) and the execution version it expects
// (read now unless --expected-version names the one the person saw).
func (o *options) commandBody(ctx context.Context, execution, commandID string, expected int64) (*apiclient.Client, ids.ExecutionID, httpapi.CommandBody, error) {
	c, err := o.client()
	if err != nil {
		return nil, "", httpapi.CommandBody{}, err
	}
	id := ids.ExecutionID(execution)
	if expected < 0 {
		ev, err := c.Execution(ctx, id)
		if err != nil {
			return nil, "", httpapi.CommandBody{}, err
		}
		expected = ev.Execution.Version
	}
	if commandID == "" {
		commandID = string(ids.NewCommandID())
	}
	return c, id, httpapi.CommandBody{CommandID: ids.CommandID(commandID), ExpectedVersion: &expected}, nil
}

// printCommand prints a command's result: id, type, status, the version it
// wrote, and why or which child execution when there is one.
func (o *options) printCommand(res httpapi.CommandResult) error {
	return o.print(res, func(w io.Writer) {
		fprintf(w, "%s %s %s (execution version %d)", res.CommandID, res.Type, res.Status, res.ExecutionVersion)
		if res.Reason != "" {
			fprintf(w, ": %s", res.Reason)
		}
		if res.ChildExecutionID != "" {
			fprintf(w, "; child execution %s", res.ChildExecutionID)
		}
		fmt.Fprintln(w)
		for _, d := range res.Descendants {
			fprintf(w, "  descendant %s (child of %s): cancel %s\n", d.ExecutionID, d.ParentID, d.Status)
		}
	})
}

func endCmd(o *options) *cobra.Command {
	var status, reason, message, commandID string
	var expected int64
	cmd := &cobra.Command{
		Use:   "end EXECUTION_ID",
		Short: "End an execution: completed, or failed with a reason code (an agent token may end its own session's executions)",
		Example: "  lifecycle end exe_01... --status completed\n" +
			"  lifecycle end exe_01... --status failed --reason model_error --message 'the provider answered 500'",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, id, body, err := o.commandBody(cmd.Context(), args[0], commandID, expected)
			if err != nil {
				return err
			}
			if body.Payload, err = json.Marshal(map[string]string{"status": status, "reason": reason, "message": message}); err != nil {
				return err
			}
			res, err := c.End(cmd.Context(), id, body)
			if err != nil {
				return err
			}
			return o.printCommand(res)
		},
	}
	f := cmd.Flags()
	f.StringVar(&status, "status", "", "completed or failed (required)")
	f.StringVar(&reason, "reason", "", "the failure's code: iteration_limit, model_error, aborted, ... (required when failed)")
	f.StringVar(&message, "message", "", "a message for people")
	f.StringVar(&commandID, "id", "", "command id (default: a new one; repeat it to repeat the command)")
	f.Int64Var(&expected, "expected-version", -1, "the execution version you saw (default: read it now)")
	cmd.MarkFlagRequired("status")
	return o.setup(cmd, false)
}

func activityCmd(o *options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "activity",
		Short: "Show the session's Activity: needs attention, in progress, history",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, session, err := o.sessionClient()
			if err != nil {
				return err
			}
			a, err := c.Activity(cmd.Context(), session)
			if err != nil {
				return err
			}
			return o.print(a, func(w io.Writer) {
				for _, sec := range []struct {
					name string
					rows int
				}{{"Needs attention", len(a.NeedsAttention)}, {"In progress", len(a.InProgress)}, {"History", len(a.History)}} {
					fprintf(w, "%s (%d)\n", sec.name, sec.rows)
					rows := a.NeedsAttention
					switch sec.name {
					case "In progress":
						rows = a.InProgress
					case "History":
						rows = a.History
					}
					for _, r := range rows {
						fprintf(w, "  %s · %s · %d execution(s)\n", r.Heading, r.Status, r.ExecutionCount)
						for _, at := range r.Attention {
							fprintf(w, "    %s: %s %s %s\n", at.Label, at.ExecutionID, at.ApprovalID, at.Detail)
						}
					}
				}
			})
		},
	}
	return o.setup(cmd, true)
}

func tailCmd(o *options) *cobra.Command {
	var after int64
	cmd := &cobra.Command{
		Use:   "tail",
		Short: "Follow the session's events (resumes after a dropped connection)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, session, err := o.sessionClient()
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return c.Follow(ctx, session, after, func(ev actionflow.Event) error {
				return o.print(ev, func(w io.Writer) {
					fprintf(w, "%6d %s %-20s %s %s\n", ev.Seq, ev.At.Local().Format("15:04:05"), ev.Type, orDash(string(ev.ActionID)), short(string(ev.Data), 120))
				})
			})
		},
	}
	cmd.Flags().Int64Var(&after, "after", 0, "start after this event position")
	return o.setup(cmd, true)
}

func policyCmd(o *options) *cobra.Command {
	var file string
	var expected, window, idle int64
	var limit int
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Show the session's policy, or replace it with --set FILE",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, session, err := o.sessionClient()
			if err != nil {
				return err
			}
			if file == "" {
				d, err := c.Policy(cmd.Context(), session)
				if err != nil {
					return err
				}
				return o.print(d, func(w io.Writer) {
					fprintf(w, "version %d, restart window %ds (%s), iteration limit %d (%s), idle timeout %ds (%s)\n%s\n", d.Version,
						d.RestartWindowSeconds, d.RestartWindowSource, d.IterationLimit, d.IterationLimitSource, d.IdleTimeoutSeconds, d.IdleTimeoutSource, d.Policy)
				})
			}
			doc, err := os.ReadFile(file)
			if err != nil {
				return err
			}
			if expected < 0 {
				cur, err := c.Policy(cmd.Context(), session)
				if err != nil {
					return err
				}
				expected = cur.Version
			}
			body := httpapi.PolicyBody{ExpectedVersion: &expected, Policy: json.RawMessage(doc), RestartWindowSeconds: &window}
			// Sent only when given: absent, the service's default applies.
			if cmd.Flags().Changed("iteration-limit") {
				body.IterationLimit = &limit
			}
			if cmd.Flags().Changed("idle-timeout") {
				body.IdleTimeoutSeconds = &idle
			}
			d, err := c.PutPolicy(cmd.Context(), session, body)
			if err != nil {
				return err
			}
			return o.print(d, func(w io.Writer) { fprintf(w, "policy version %d saved\n", d.Version) })
		},
	}
	f := cmd.Flags()
	f.StringVar(&file, "set", "", "replace the policy with this JSON document")
	f.Int64Var(&expected, "expected-version", -1, "the version being replaced (default: the current one)")
	f.Int64Var(&window, "restart-window", -1, "restart window in seconds: -1 unlimited, 0 disabled")
	f.IntVar(&limit, "iteration-limit", 0, "iteration limit of executions that start without one: 0 none, 1..1000 (default: the service's)")
	f.Int64Var(&idle, "idle-timeout", 0, "seconds after which an idle running execution ends failed (abandoned): 0 off, 60..2592000 (default: the service's)")
	cmd.AddCommand(policyReplayCmd(o))
	return o.setup(cmd, true)
}

// policyReplayCmd: lifecycle policy replay --file candidate.json --since 24h [--session S].
func policyReplayCmd(o *options) *cobra.Command {
	var file, since, until string
	cmd := &cobra.Command{
		Use:   "replay",
		Short: "Dry-run a candidate policy over the recorded actions of a window (nothing changes)",
		Long: "Decides every recorded action since --since again under the candidate policy and prints how the\n" +
			"decisions would change: counts per transition and the changed actions with both reasons. The automatic\n" +
			"reviewer is not called again (recorded verdicts are reused). With --session, that session; without,\n" +
			"the sessions the token may change the policy of (a human's own session).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return errors.New("--file is required: the candidate policy document (JSON)")
			}
			doc, err := os.ReadFile(file)
			if err != nil {
				return err
			}
			c, err := o.client()
			if err != nil {
				return err
			}
			now := time.Now()
			from, err := pointInTime(since, now)
			if err != nil {
				return fmt.Errorf("--since: %w", err)
			}
			body := httpapi.ReplayBody{Policy: json.RawMessage(doc), Since: &from}
			if until != "" {
				to, err := pointInTime(until, now)
				if err != nil {
					return fmt.Errorf("--until: %w", err)
				}
				body.Until = &to
			}
			var rep replay.Report
			if o.session != "" {
				rep, err = c.ReplayPolicy(cmd.Context(), ids.SessionID(o.session), body)
			} else {
				rep, err = c.ReplayPolicyAll(cmd.Context(), body)
			}
			if err != nil {
				return err
			}
			return o.print(rep, func(w io.Writer) { printReplay(w, rep) })
		},
	}
	f := cmd.Flags()
	f.StringVar(&file, "file", "", "the candidate policy document (JSON)")
	f.StringVar(&since, "since", "24h", "the window's start: a duration back from now (24h, 90m) or an RFC 3339 time")
	f.StringVar(&until, "until", "", "the window's end (default now): a duration back from now or an RFC 3339 time")
	return o.setup(cmd, true)
}

// pointInTime reads "24h" (that long ago) or an RFC 3339 time.
func pointInTime(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, fmt.Errorf("%q: a duration back from now is positive", s)
		}
		return now.Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is neither a duration (24h) nor an RFC 3339 time", s)
	}
	return t, nil
}

func printReplay(w io.Writer, rep replay.Report) {
	fprintf(w, "replay %s of policy %s (%s) over %s, %s to %s\n", rep.ReplayID, rep.CandidateVersion, rep.CandidateDigest,
		strings.Join(sessionStrings(rep.Sessions), ", "), rep.Since.Format(time.RFC3339), rep.Until.Format(time.RFC3339))
	fprintf(w, "%d actions replayed: %d unchanged, %d changed; %d skipped (refused before the permission engine, or undecided)\n",
		rep.Replayed, rep.Unchanged, rep.Replayed-rep.Unchanged, rep.Skipped)
	fprintf(w, "reviewer verdicts: %d recorded (reused), %d from the deterministic reviewer (no model)\n", rep.VerdictsRecorded, rep.VerdictsDeterministic)
	for _, tr := range rep.Transitions {
		fprintf(w, "  %-5s -> %-5s %6d\n", tr.From, tr.To, tr.Count)
	}
	for _, ch := range rep.Changes {
		fprintf(w, "%s  %s -> %s  %s %s\n    live:      %s/%s %s\n    candidate: %s/%s %s\n", ch.ActionID, ch.From, ch.To, ch.Tool, short(ch.Summary, 100),
			ch.Live.Source, ch.Live.Code, short(ch.Live.Detail, 160), ch.Candidate.Source, ch.Candidate.Code, short(ch.Candidate.Detail, 160))
	}
	if rep.ChangesTruncated {
		fprintf(w, "(more changes than listed; the counts cover them all)\n")
	}
}

func sessionStrings(ss []ids.SessionID) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = string(s)
	}
	return out
}

func hostCmd(o *options) *cobra.Command {
	var workspace, session, bash, name string
	var parallel int
	var poll time.Duration
	cmd := &cobra.Command{
		Use:   "host",
		Short: "Run authorized host tasks (Bash, file tools) of the token's session in a workspace",
		Long: "The host worker long-polls the API for authorized host tasks, claims each (the lifecycle records\n" +
			"start evidence before the tool runs), runs it in --workspace and posts the result.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			abs, err := hostWorkspace(workspace)
			if err != nil {
				return err
			}
			// The tools inherit this process's environment; the worker's own
			// token is not theirs to read.
			os.Unsetenv("LIFECYCLE_TOKEN")
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			log := slog.New(slog.NewJSONHandler(cmd.ErrOrStderr(), nil))
			runner, err := hosttools.NewRunner(abs, bash)
			if err != nil {
				return err
			}
			log.Info("host worker started", "api", o.api, "workspace", abs)
			if name == "" {
				hn, _ := os.Hostname()
				name = hn + ":" + abs
			}
			h := apiclient.Host{Client: c, Session: ids.SessionID(session)}
			// Its supervisor runs Bash calls with run_in_background; at
			// start-up it reports that this instance runs nothing yet, so the
			// processes an earlier worker of this name left are lost.
			w := &hostworker.Worker{Host: h, Runner: runner, Log: log, Poll: poll, Parallel: parallel,
				Processes: hostworker.NewSupervisor(h, name, log)}
			return w.Run(ctx)
		},
	}
	f := cmd.Flags()
	f.StringVar(&workspace, "workspace", ".", "directory the tools run in")
	f.StringVar(&name, "name", "", "this worker's name across restarts, for its managed processes (default HOSTNAME:WORKSPACE; one running worker per name)")
	f.StringVar(&session, "session", "", "with an admin token: only this session's tasks")
	f.IntVar(&parallel, "parallel", hostworker.DefaultParallel, fmt.Sprintf("tasks run at once (at most %d)", hostworker.MaxParallel))
	f.StringVar(&bash, "bash", "bash", "the bash that runs Bash commands (path or name in PATH; the dialect the permission engine analyses)")
	f.DurationVar(&poll, "poll", 20*time.Second, "long-poll wait per listing")
	return o.setup(cmd, false)
}

func hostWorkspace(dir string) (string, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return "", fmt.Errorf("workspace: %w", err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("workspace %s is not a directory", dir)
	}
	return absPath(dir)
}
