package mcpgateway

import (
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/lifecycle"
)

// Meta keys of a tool result naming the action behind it.
const (
	MetaActionID = "openprogram/action_id"
	MetaOutcome  = "openprogram/outcome"
)

// receiptResult turns a sealed receipt into the tool result the model
// reads. Only a succeeded outcome is a success; a refusal states the
// precise restriction and what would change it; an unknown outcome says
// reconciliation is required, never that it succeeded.
func receiptResult(a actionflow.Action, rc actionflow.Receipt) *mcp.CallToolResult {
	var text string
	isError := true
	switch rc.Outcome {
	case lifecycle.OutcomeSucceeded:
		isError = false
		text = rc.Output
		if text == "" {
			text = "(the tool succeeded with no output)"
		}
		text += truncation(rc)
	case lifecycle.OutcomeFailed:
		text = failedText(rc)
	case lifecycle.OutcomeUnknown:
		text = fmt.Sprintf("Outcome unknown: the operation may have started, and its result could not be established (%s). "+
			"Reconciliation is required: a human checks its effects and resolves action %s as succeeded or failed. "+
			"Do not assume it succeeded or failed, and do not repeat it blindly.", detail(rc.ErrorCode, rc.Error), a.ActionID)
		if rc.Output != "" {
			text += "\nPartial output:\n" + rc.Output + truncation(rc)
		}
	default:
		text = notStartedText(a, rc)
	}
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, IsError: isError}
	res.Meta = mcp.Meta{MetaActionID: string(a.ActionID), MetaOutcome: string(rc.Outcome)}
	return res
}

// notStartedText explains why nothing ran.
func notStartedText(a actionflow.Action, rc actionflow.Receipt) string {
	code := rc.ErrorCode
	switch {
	case strings.HasPrefix(code, "permission_denied") && a.Decision == nil:
		return fmt.Sprintf("Denied by the lifecycle; nothing ran. Restriction: %s: %s.", strings.TrimPrefix(code, "permission_denied:"), rc.Error)
	case strings.HasPrefix(code, "permission_denied"):
		d := a.Decision
		var b strings.Builder
		fmt.Fprintf(&b, "Denied by the lifecycle; nothing ran. Restriction: %s", d.Reason.Source)
		if d.Reason.Code != "" {
			b.WriteString("/" + d.Reason.Code)
		}
		if d.Reason.Rule != "" {
			fmt.Fprintf(&b, " (rule %s)", d.Reason.Rule)
		}
		if d.Reason.Detail != "" {
			b.WriteString(": " + d.Reason.Detail)
		}
		b.WriteString(".")
		if d.Resolution != "" {
			b.WriteString(" Resolution: " + d.Resolution + ".")
		}
		if d.PolicyVersion != "" {
			fmt.Fprintf(&b, " (policy %s)", d.PolicyVersion)
		}
		return b.String()
	case code == "invalid_arguments":
		var b strings.Builder
		b.WriteString("Invalid arguments; nothing ran: " + rc.Error)
		for _, p := range rc.Validation {
			fmt.Fprintf(&b, "\n- %s: %s", p.Field, p.Problem)
		}
		b.WriteString("\nCorrect the arguments and call again.")
		return b.String()
	case code == "approval_declined":
		return "A human declined this call; nothing ran." + suffix(rc.Error) + " Do not retry it unchanged."
	case code == "approval_expired":
		return "No human decided this call before its approval expired; nothing ran (expiry is never approval)."
	}
	return fmt.Sprintf("Not started; nothing ran (%s).", detail(code, rc.Error))
}

func failedText(rc actionflow.Receipt) string {
	var b strings.Builder
	b.WriteString("The tool failed")
	if rc.ExitCode != nil {
		fmt.Fprintf(&b, " (exit code %d)", *rc.ExitCode)
	}
	if rc.ErrorCode != "" || rc.Error != "" {
		b.WriteString(": " + detail(rc.ErrorCode, rc.Error))
	}
	b.WriteString(".")
	if rc.Output != "" {
		b.WriteString("\n" + rc.Output + truncation(rc))
	}
	return b.String()
}

func truncation(rc actionflow.Receipt) string {
	if !rc.Truncated && rc.ResultRef == "" {
		return ""
	}
	return fmt.Sprintf("\n[output truncated; the whole result is stored with action %s]", rc.ActionID)
}

func detail(code, msg string) string {
	switch {
	case code == "":
		return msg
	case msg == "":
		return code
	}
	return code + ": " + msg
}

func suffix(s string) string {
	if s == "" {
		return ""
	}
	return " Reason: " + s + "."
}

// errorResult is a tool-level error the model reads.
func errorResult(a *actionflow.Action, text string) *mcp.CallToolResult {
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, IsError: true}
	if a != nil && a.ActionID != "" {
		res.Meta = mcp.Meta{MetaActionID: string(a.ActionID)}
	}
	return res
}
