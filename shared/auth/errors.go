package auth

import "fmt"

// UnauthenticatedError: no credentials, or credentials that do not verify.
// The API answers 401.
type UnauthenticatedError struct{ Msg string }

func (e *UnauthenticatedError) Error() string { return "unauthenticated: " + e.Msg }

// DeniedError: an authenticated principal may not do this. The API answers
// 403 and appends an audit event; nothing else is written.
type DeniedError struct {
	Capability Capability
	// Session is the session the request touched.
	Session string
	Reason  string
}

func (e *DeniedError) Error() string {
	return fmt.Sprintf("denied %s on session %q: %s", e.Capability, e.Session, e.Reason)
}
