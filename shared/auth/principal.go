package auth

import (
	"context"
	"net/http"
	"strings"

	"github.com/openprogram/lifecycle/shared/actionflow"
)

// Roles of a principal. The "system" role of actionflow is never issued to
// an HTTP caller.
const (
	RoleAgent = "agent"
	RoleHuman = "human"
	RoleAdmin = "admin"
)

// OriginHeader is set by the bundled UI on every request it sends, so a
// decision made in the UI records a "ui" origin. It is provenance only: it
// never changes what the token's role may do.
const OriginHeader = "X-Lifecycle-Origin"

// Origins of a call.
const (
	OriginAPI = "api"
	OriginUI  = "ui"
	OriginCLI = "cli"
)

// OriginOf reads the call's origin from its header: "ui", "cli", or "api"
// for anything else.
func OriginOf(r *http.Request) string {
	switch o := strings.ToLower(strings.TrimSpace(r.Header.Get(OriginHeader))); o {
	case OriginUI, OriginCLI:
		return o
	}
	return OriginAPI
}

// ValidRole reports whether role is one a token may carry.
func ValidRole(role string) bool {
	return role == RoleAgent || role == RoleHuman || role == RoleAdmin
}

type principalKey struct{}

// WithPrincipal returns ctx carrying p.
func WithPrincipal(ctx context.Context, p actionflow.Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the principal the middleware authenticated.
func PrincipalFrom(ctx context.Context) (actionflow.Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(actionflow.Principal)
	return p, ok
}
