package auth

import (
	"context"
	"net/http"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/ids"
)

type gatewayClaimsKey struct{}

// WithGatewayClaims returns ctx carrying the JWT claims an API Gateway JWT
// authorizer verified (requestContext.authorizer.jwt.claims). Only the
// Lambda adapter calls it, with claims from the event, never from headers.
func WithGatewayClaims(ctx context.Context, claims map[string]string) context.Context {
	return context.WithValue(ctx, gatewayClaimsKey{}, claims)
}

// GatewayClaims authenticates requests whose token API Gateway already
// verified (signature, issuer, audience, expiry): it maps the claims the
// adapter put on the context to a principal. Claim names: sub, role (or
// custom:role) and sid (or custom:sid), so a Cognito user pool with custom
// attributes works unchanged.
type GatewayClaims struct{}

// Authenticate implements the API's authenticator.
func (GatewayClaims) Authenticate(r *http.Request) (actionflow.Principal, error) {
	claims, ok := r.Context().Value(gatewayClaimsKey{}).(map[string]string)
	if !ok || len(claims) == 0 {
		return actionflow.Principal{}, &UnauthenticatedError{Msg: "no verified JWT claims on the request"}
	}
	first := func(names ...string) string {
		for _, n := range names {
			if v := claims[n]; v != "" {
				return v
			}
		}
		return ""
	}
	p := actionflow.Principal{Subject: first("sub"), Role: first("role", "custom:role"),
		Session: ids.SessionID(first("sid", "custom:sid")), Origin: OriginOf(r)}
	if err := checkClaims(p.Subject, p.Role, string(p.Session)); err != nil {
		return actionflow.Principal{}, &UnauthenticatedError{Msg: err.Error()}
	}
	return p, nil
}
