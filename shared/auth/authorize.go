package auth

import (
	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/ids"
)

// Capability is what a route needs from its caller.
type Capability string

const (
	// CapRead reads a session's actions, approvals, executions, activity,
	// events, tools and policy.
	CapRead Capability = "read"
	// CapSubmit submits tool calls for the session.
	CapSubmit Capability = "submit"
	// CapHost lists, claims and completes host tasks of the session.
	CapHost Capability = "host"
	// CapDecide decides approvals.
	CapDecide Capability = "decide"
	// CapCommand sends execution control commands.
	CapCommand Capability = "command"
	// CapEnd ends an execution (the End command): the one execution
	// command an agent may send, for its own session's executions.
	CapEnd Capability = "end"
	// CapPolicy changes the session's policy.
	CapPolicy Capability = "policy"
	// CapAudit reads the session's tamper-evident decision log (its event
	// log with each entry's chain link): the people accountable for the
	// session, not its agent.
	CapAudit Capability = "audit"
	// CapAllSessions reaches every session at once (host tasks of all sessions).
	CapAllSessions Capability = "all_sessions"
)

// grants is the whole role model: agent < human < admin.
var grants = map[string]map[Capability]bool{
	RoleAgent: {CapRead: true, CapSubmit: true, CapHost: true, CapEnd: true},
	RoleHuman: {CapRead: true, CapSubmit: true, CapHost: true, CapDecide: true, CapCommand: true, CapEnd: true, CapPolicy: true, CapAudit: true},
	RoleAdmin: {CapRead: true, CapSubmit: true, CapHost: true, CapDecide: true, CapCommand: true, CapEnd: true, CapPolicy: true, CapAudit: true, CapAllSessions: true},
}

// Can reports whether role carries capability c (session scope aside).
func Can(role string, c Capability) bool { return grants[role][c] }

// Authorize decides whether p may use capability c on session. It is the
// one authorization check of the API: the role must carry the capability,
// and a non-admin principal only reaches the session its token names. An
// empty session is allowed only for CapAllSessions (which only admin has).
func Authorize(p actionflow.Principal, c Capability, session ids.SessionID) error {
	deny := func(reason string) error {
		return &DeniedError{Capability: c, Session: string(session), Reason: reason}
	}
	if !ValidRole(p.Role) {
		return deny("unknown role " + p.Role)
	}
	if !Can(p.Role, c) {
		return deny("role " + p.Role + " may not " + string(c))
	}
	if p.Role == RoleAdmin {
		return nil
	}
	if session == "" {
		return deny("no session named")
	}
	if p.Session == "" || p.Session != session {
		return deny("the token is scoped to another session")
	}
	return nil
}
