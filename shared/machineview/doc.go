// Package machineview reads one action's state machine execution as a Step
// Functions console shows it: the definition (ASL), the status, the event
// history, and what the history says about the definition: the path taken
// (each state entered, in order, and how it was reached: Next, a Choice
// rule, the Choice's Default, or a Catch with the error it caught), the
// retries taken inside a state (with the Retry entry that matched), and the
// state an open execution is in (a Task waiting for its task token is marked
// as such: an approval, a question, a host worker).
//
// Reader is the port; sfnclient.Client implements it over the real Step
// Functions API (DescribeExecution, DescribeStateMachineForExecution,
// GetExecutionHistory), so the same code reads the embedded engine and AWS.
// Analyze works on the definition the reader returned and the events alone:
// no state name is known in advance, so a definition that changes (a state
// removed, Choices merged) is drawn and traced as it is.
//
// What it must never do: import an AWS package, or guess a transition the
// history does not show (a Choice rule is named by its Next; when two rules
// share a Next, the first is named).
package machineview
