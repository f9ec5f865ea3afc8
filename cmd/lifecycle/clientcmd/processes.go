package clientcmd

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/process"
)

func psCmd(o *options) *cobra.Command {
	var exec string
	var all bool
	cmd := &cobra.Command{
		Use:   "ps",
		Short: "List the session's managed processes (Bash calls with run_in_background): running ones, or --all",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, session, err := o.sessionClient()
			if err != nil {
				return err
			}
			var rs []process.Record
			if exec != "" {
				rs, err = c.ExecutionProcesses(cmd.Context(), ids.ExecutionID(exec))
			} else {
				rs, err = c.Processes(cmd.Context(), session)
			}
			if err != nil {
				return err
			}
			shown := rs[:0:0]
			for _, r := range rs {
				if all || !r.Status.Terminal() || (r.Status == process.Lost && r.Stop == nil) {
					shown = append(shown, r)
				}
			}
			return o.print(shown, func(w io.Writer) {
				if len(shown) == 0 {
					fmt.Fprintln(w, "no processes")
					return
				}
				for _, r := range shown {
					status := string(r.Status)
					if r.ExitCode != nil {
						status += fmt.Sprintf(" (%d)", *r.ExitCode)
					}
					fprintf(w, "%s  %-12s %s  %s  %s\n", r.ProcessID, status, r.StartedAt.Local().Format(time.DateTime), r.ExecutionID, r.Command)
				}
			})
		},
	}
	cmd.Flags().StringVar(&exec, "execution", "", "only the processes this execution started")
	cmd.Flags().BoolVar(&all, "all", false, "also the ended ones")
	return o.setup(cmd, true)
}

func logsCmd(o *options) *cobra.Command {
	var follow bool
	var stream string
	var after int64
	cmd := &cobra.Command{
		Use:   "logs PROCESS_ID",
		Short: "Print a managed process's output (the last 256 KiB of each stream are kept); --follow until it ends",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			if !process.ValidStream(stream) {
				return fmt.Errorf("--stream is stdout or stderr, not %q", stream)
			}
			for {
				p, err := c.ProcessOutput(cmd.Context(), args[0], stream, after)
				if err != nil {
					return err
				}
				if p.Truncated {
					fprintf(cmd.ErrOrStderr(), "[%d bytes dropped: only the last %d KiB are kept]\n", p.From-after, process.RetainBytes>>10)
				}
				if _, err := io.WriteString(o.out, p.Data); err != nil {
					return err
				}
				after = p.Next
				switch {
				case p.Next < p.Total:
					continue // more is already there
				case !follow:
					return nil
				case p.Ended:
					fprintf(cmd.ErrOrStderr(), "[process %s %s]\n", args[0], p.Status)
					return nil
				}
				select {
				case <-cmd.Context().Done():
					return cmd.Context().Err()
				case <-time.After(process.PollEvery):
				}
			}
		},
	}
	f := cmd.Flags()
	f.BoolVarP(&follow, "follow", "f", false, "keep printing until the process ends")
	f.StringVar(&stream, "stream", process.Stdout, "stdout or stderr")
	f.Int64Var(&after, "after", 0, "start after this cursor (a byte offset of the stream)")
	return o.setup(cmd, false)
}

func stopCmd(o *options) *cobra.Command {
	var commandID string
	cmd := &cobra.Command{
		Use:   "stop PROCESS_ID",
		Short: "Stop a managed process (a human of the session, or its agent); its execution goes on",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			if commandID == "" {
				commandID = string(ids.NewCommandID())
			}
			res, err := c.StopProcess(cmd.Context(), args[0], ids.CommandID(commandID))
			if err != nil {
				return err
			}
			return o.print(res, func(w io.Writer) {
				fprintf(w, "%s stop %s (process %s)\n", args[0], res.Status, res.Record.Status)
			})
		},
	}
	cmd.Flags().StringVar(&commandID, "id", "", "command id (default: a new one; repeat it to repeat the request)")
	return o.setup(cmd, false)
}
