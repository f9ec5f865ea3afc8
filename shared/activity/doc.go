// Package activity computes a session's Activity view from lifecycle
// records: one row per real conversation branch, in three sections —
// needs_attention (a pending approval, an open question, a pause, an
// unresolved tool result), in_progress (an execution, a child task or an
// owned process running, an action in flight, a control not yet applied)
// and history (ended branches) — with branch details listing executions.
//
// Counting rules (specification, "Activity and control"):
//   - a branch is Execution.BranchID; continuing on the same branch adds
//     executions to its row, never rows; a fork creates a branch;
//   - a child task (a job or function an execution started) belongs to the
//     branch of the execution that started it;
//   - executions a fork shares with the branch it came from are listed in
//     the fork's details, marked shared, and add no row;
//   - ordinary status comes from the newest execution; real waits, active
//     descendants and owned processes are checked as well;
//   - "Ended · response record incomplete": the owner ended the newest
//     execution and only its model response record is missing (a model
//     request of it was closed incomplete: Facts.ResponseRecordMissing),
//     with no active wait and no pending control other than Cancel. It is
//     history and claims no success; an ended model request alone never
//     asks anything of the user.
//
// Execution rows list the execution's model requests (Facts.ModelRequests:
// status, token usage, error code).
//
// Headings (heading.go) are short and human, never an id: a branch's is
// the title its first execution was started with; else, for a fork, what
// its source is about; else the branch's first tool call and a one-line
// summary of its arguments ("Bash: npm test", "Read: src/main.go", an MCP
// tool's key=value pairs); else the execution kind. A fork's heading ends
// " · fork", a retry execution's " · retry". Lengths are counted in runes
// and cut with an ellipsis; control and bidirectional formatting
// characters never reach a heading.
//
// It is pure: Build reads its Input and nothing else, so the same records
// always give the same view. What it must never do: guess a branch from a
// missing record, let a newer execution hide an older unresolved result or
// a pending approval, or write anything.
package activity
