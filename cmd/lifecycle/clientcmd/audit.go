package clientcmd

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/openprogram/lifecycle/shared/audit"
)

func auditCmd(o *options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Export or verify a session's tamper-evident decision log (a hash chain)",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(auditExportCmd(o), auditVerifyCmd(o))
	return cmd
}

func auditExportCmd(o *options) *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Write the session's decision log as JSON Lines (one chain entry a line)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			c, session, err := o.sessionClient()
			if err != nil {
				return err
			}
			w := o.out
			if out != "" && out != "-" {
				// Written beside the target and renamed at the end, so a
				// failed export never leaves half a file under its name.
				f, err := os.CreateTemp(dirOf(out), ".audit-*.jsonl")
				if err != nil {
					return err
				}
				defer func() {
					if err != nil {
						f.Close()
						os.Remove(f.Name())
					}
				}()
				w = f
			}
			bw := bufio.NewWriter(w)
			enc := json.NewEncoder(bw)
			n := 0
			if err := c.AuditAll(cmd.Context(), session, func(e audit.Entry) error { n++; return enc.Encode(e) }); err != nil {
				return err
			}
			if err := bw.Flush(); err != nil {
				return err
			}
			if f, ok := w.(*os.File); ok && w != o.out {
				if err := f.Close(); err != nil {
					return err
				}
				if err := os.Rename(f.Name(), out); err != nil {
					return err
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "%d entries of session %s written to %s\n", n, session, out)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "write to this file instead of standard output")
	return o.setup(cmd, true)
}

// ErrChainBroken is what verify returns when the chain does not hold (the
// process exits non-zero).
var ErrChainBroken = errors.New("the decision log does not verify")

func auditVerifyCmd(o *options) *cobra.Command {
	var file string
	var anchors []string
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Recompute a decision log's chain (from an export or the live API) and name the first entry changed, removed, reordered or inserted",
		Long: `Recompute a decision log's chain and name the first entry that was changed,
removed, reordered or inserted. Reads an export (--file, "-" for standard
input) or the live API (--session, default: the token's session). --anchor
SEQ:HASH checks a head recorded elsewhere (an S3 Object Lock bucket): it
catches a truncated or rewritten tail, which the chain alone cannot.
Exits non-zero when the chain does not hold.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			as, err := parseAnchors(anchors)
			if err != nil {
				return err
			}
			var entries []audit.Entry
			if file != "" {
				if entries, err = readExport(file, cmd.InOrStdin()); err != nil {
					return err
				}
			} else {
				c, session, err := o.sessionClient()
				if err != nil {
					return err
				}
				if err := c.AuditAll(cmd.Context(), session, func(e audit.Entry) error { entries = append(entries, e); return nil }); err != nil {
					return err
				}
				if len(entries) == 0 {
					return fmt.Errorf("session %s has no decision log entries", session)
				}
			}
			res, err := audit.Verify(entries, as...)
			if err != nil {
				return err
			}
			if err := o.print(res, func(w io.Writer) {
				if res.OK {
					fprintf(w, "ok: %d entries of %s, head %d %s", res.Entries, res.Stream, res.HeadSeq, res.Head)
					if res.Unchained > 0 {
						fprintf(w, " (%d entries from before the chain existed are not covered)", res.Unchained)
					}
					fprintf(w, "\n")
					return
				}
				fprintf(w, "FAILED: %s: %v\n", res.Stream, res.Problem)
			}); err != nil {
				return err
			}
			if !res.OK {
				return fmt.Errorf("%w: %v", ErrChainBroken, res.Problem)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&file, "file", "", "verify this export (JSON Lines; - for standard input) instead of the live API")
	f.StringArrayVar(&anchors, "anchor", nil, "a head recorded elsewhere, SEQ:HASH (repeatable)")
	return o.setup(cmd, true)
}

// readExport reads JSON Lines entries; a line that is not an entry is an
// error naming the line.
func readExport(file string, stdin io.Reader) ([]audit.Entry, error) {
	r := stdin
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), 8<<20)
	var entries []audit.Entry
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		var e audit.Entry
		dec := json.NewDecoder(strings.NewReader(text))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil {
			return nil, fmt.Errorf("%s line %d: not a decision log entry: %w", file, line, err)
		}
		entries = append(entries, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", file, err)
	}
	if len(entries) == 0 {
		return nil, fmt.Errorf("%s holds no entries", file)
	}
	return entries, nil
}

func parseAnchors(raw []string) ([]audit.Anchor, error) {
	var out []audit.Anchor
	for _, a := range raw {
		seq, hash, ok := strings.Cut(a, ":")
		n, err := strconv.ParseInt(seq, 10, 64)
		if !ok || err != nil || n < 1 || len(hash) != 64 {
			return nil, fmt.Errorf("--anchor %q: want SEQ:HASH (a sequence number and 64 hex digits)", a)
		}
		out = append(out, audit.Anchor{Seq: n, Hash: strings.ToLower(hash)})
	}
	return out, nil
}

func dirOf(path string) string {
	if i := strings.LastIndexAny(path, `/\`); i >= 0 {
		return path[:i+1]
	}
	return "."
}
