// Package auth authenticates callers of the HTTP API and decides, in one
// place, what a principal may do.
//
// A caller is an actionflow.Principal: a subject, a role (agent, human or
// admin) and the one session the token is scoped to. Locally (`lifecycle
// serve`) tokens are HS256 JWTs issued and verified by an Issuer with two
// keys generated once and kept under the state directory (0700, keys 0600):
// auth.key signs agent tokens, human.key signs human and admin tokens. The
// key is chosen by the role a token claims, so a token signed with the agent
// key that claims "human" never verifies: whoever holds the agent key (an
// agent runner, a tool configuration) can mint agents only. In AWS the API Gateway
// JWT authorizer verifies the token and the Lambda adapter passes the claims
// it vouched for through the request context (GatewayClaims).
//
// Authorization (Authorize) is a pure function of principal, capability and
// the session the request touches: a non-admin principal only ever reaches
// its own session, and only a human owner or an admin decides approvals,
// sends commands or changes policy. The one execution command an agent may
// send is End (CapEnd, its own session's executions): package control
// checks that an agent's command is an End, in one place. The origin of a call ("api" or "ui", from
// a header the UI sets) is recorded for provenance and never grants anything.
//
// What it must never do: accept an unsigned or differently signed token,
// accept a human or admin token signed with the agent key, use one key for
// both roles, accept a token without an expiry, let a role or origin claimed
// by a request header stand in for the token's role, or import an AWS package.
package auth
