// Package auth authenticates callers of the HTTP API and decides, in one
// place, what a principal may do.
//
// A caller is an actionflow.Principal: a subject, a role (agent, human or
// admin) and the one session the token is scoped to. Locally (`lifecycle
// serve`) tokens are HS256 JWTs issued and verified by an Issuer whose key is
// generated once and kept under the state directory. In AWS the API Gateway
// JWT authorizer verifies the token and the Lambda adapter passes the claims
// it vouched for through the request context (GatewayClaims).
//
// Authorization (Authorize) is a pure function of principal, capability and
// the session the request touches: a non-admin principal only ever reaches
// its own session, and only a human owner or an admin decides approvals,
// sends commands or changes policy. The origin of a call ("api" or "ui", from
// a header the UI sets) is recorded for provenance and never grants anything.
//
// What it must never do: accept an unsigned or differently signed token,
// accept a token without an expiry, let a role or origin claimed by a request
// header stand in for the token's role, or import an AWS package.
package auth
