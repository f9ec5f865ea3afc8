// Command lifecycle is the CLI of the OpenProgram action lifecycle.
//
//	lifecycle serve      the whole embedded stack in one process (make run)
//	lifecycle token      issue a local API token (human/admin: confirmed on your terminal)
//	lifecycle submit     submit a tool call as an agent
//	lifecycle show       an action, its decision, outcome, delivery and receipt
//	lifecycle approvals  pending approvals of a session
//	lifecycle approve / decline
//	lifecycle questions  questions agents asked the session (pending unless --status)
//	lifecycle answer     answer a question (--answers JSON) or skip it (--skip)
//	lifecycle command    send an execution control (pause, continue, cancel, ...)
//	lifecycle activity   the session's Activity sections
//	lifecycle tail       follow the session's events
//	lifecycle policy     read or replace the session's policy; policy replay dry-runs a candidate
//	lifecycle host       run a host worker against a remote API
//
// Output is human-readable by default; --json prints JSON for scripts.
package main
