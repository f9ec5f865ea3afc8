package clientcmd

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/ids"
)

func questionsCmd(o *options) *cobra.Command {
	var status string
	cmd := &cobra.Command{
		Use:   "questions",
		Short: "List the session's questions (pending unless --status)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, session, err := o.sessionClient()
			if err != nil {
				return err
			}
			qs, err := c.Questions(cmd.Context(), session, status)
			if err != nil {
				return err
			}
			return o.print(qs, func(w io.Writer) {
				if len(qs) == 0 {
					fmt.Fprintln(w, "no question is waiting for an answer")
				}
				for _, q := range qs {
					fprintf(w, "%s  %s, execution %s, %s\n", q.QuestionID, q.Status, q.ExecutionID, ago(q.CreatedAt))
					for _, it := range q.Questions {
						fprintf(w, "  %s [%s] %s\n", it.ID, it.Kind, short(it.Question, 160))
						for _, op := range it.Options {
							fprintf(w, "      - %s", op.Label)
							if op.Description != "" {
								fprintf(w, ": %s", short(op.Description, 100))
							}
							fmt.Fprintln(w)
						}
						for _, f := range it.Fields {
							req := ""
							if f.Required {
								req = ", required"
							}
							fprintf(w, "      %s (%s%s)\n", f.Name, f.Type, req)
						}
					}
					if len(q.Answers) > 0 {
						fprintf(w, "  answers %s\n", short(string(q.Answers), 200))
					}
				}
			})
		},
	}
	cmd.Flags().StringVar(&status, "status", "", "pending (default), answered, declined, cancelled, expired or all")
	return o.setup(cmd, true)
}

func answerCmd(o *options) *cobra.Command {
	var answers, commandID string
	var skip bool
	cmd := &cobra.Command{
		Use:   "answer QUESTION_ID",
		Short: "Answer a pending question (human owner), or --skip it",
		Long: "--answers is a JSON object of answers by question id, e.g.\n" +
			`  {"q1":"Staging","q2":["Unit","E2E"],"q3":true,"q4":"free text","q5":{"port":8080}}` + "\n" +
			"--skip declines the whole request. --id repeats an earlier command (a retry after an\n" +
			"unknown delivery sends the same id and answer; it never answers twice).",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if skip == (answers != "") {
				return errors.New("pass --answers JSON or --skip (one of them)")
			}
			body := actionflow.AnswerBody{CommandID: commandID, Skip: skip}
			if body.CommandID == "" {
				body.CommandID = string(ids.NewCommandID())
			}
			if answers != "" {
				dec := json.NewDecoder(strings.NewReader(answers))
				if err := dec.Decode(&body.Answers); err != nil || body.Answers == nil {
					return fmt.Errorf("--answers: want a JSON object of answers by question id: %v", err)
				}
			}
			c, err := o.client()
			if err != nil {
				return err
			}
			q, delivered, err := c.Answer(cmd.Context(), args[0], body)
			if err != nil {
				return err
			}
			return o.print(q, func(w io.Writer) {
				fprintf(w, "%s %s by command %s", q.QuestionID, q.Status, q.CommandID)
				if !delivered {
					fprintf(w, " (saved; the workflow hears it on recovery)")
				}
				fmt.Fprintln(w)
			})
		},
	}
	cmd.Flags().StringVar(&answers, "answers", "", "JSON object of answers by question id")
	cmd.Flags().BoolVar(&skip, "skip", false, "decline the whole request")
	cmd.Flags().StringVar(&commandID, "id", "", "command id (default: a new one; repeat one to retry)")
	return o.setup(cmd, false)
}
