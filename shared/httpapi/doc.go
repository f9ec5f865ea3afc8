// Package httpapi is the lifecycle's HTTP API: JSON over HTTP under /v1,
// the same http.Handler behind API Gateway (functions/api, through the
// Lambda adapter in package apigw) and `lifecycle serve`. api/openapi.yaml
// describes every route; a test validates real responses against it.
//
// Every /v1 request passes one gate (gate.go): authenticate (bearer token
// locally, verified gateway claims in AWS), refuse a role without the
// route's capability before anything is looked up (an agent deciding an
// approval, reconciling an unknown outcome or sending a command; the one
// command an agent may send is End, through its own route POST
// /v1/executions/{id}/end), resolve the session the request touches by
// reading (never writing) the addressed resource, then auth.Authorize.
// A denial answers 403 and appends one "audit.denied" event to the touched
// session's log (the caller's own when nothing was looked up or the id does
// not exist) — nothing else is written. A non-admin naming an id outside
// its token's session gets the same 403 whether the id exists or not, so
// ids cannot be probed. Errors are {"error":{"code","message","field"?,
// "current"?}} with their status, mapped in one place (errors.go) from the
// lifecycle's typed errors; api/openapi.yaml lists every code (a test
// compares that list with the codes in the source).
//
// Request bodies are limited (MaxBodyBytes, default 256 KiB; over it: 413,
// body_too_large), decoded strictly (unknown fields, wrong types, malformed
// JSON and trailing data are 400 naming the field) and fully validated
// before anything is written.
//
// GET /v1/actions/{action_id}/machine reads the action's state machine
// execution through Config.Machines (sfnclient.Client: the embedded engine
// locally, Step Functions in AWS) and answers what a console shows: the
// definition, the status, the path taken and the current state (package
// machineview, from the whole history) and one page of the history, with
// every task token replaced. An action's representation carries links:
// the UI's console view (ui/machine.html, when the UI is served), that
// route, and with Config.AWSConsole the Step Functions console page of the
// execution and the CloudWatch log groups. The view draws its graph with
// dagre, which is not committed: `make ui-assets` installs it under .tools/
// and the API serves that file (FindDagre) at /ui/vendor/dagre.min.js.
//
// Long polls (?wait=SECONDS, at most MaxWait, default 30 s) wake early on
// the lifecycle's in-process notifications and otherwise re-read the store
// every PollInterval, so they also work in Lambda where no bus is shared.
// The event stream is server-sent events resumable by Last-Event-ID (the
// session log's sequence); with ?wait= (or DisableStreaming, behind API
// Gateway, which cannot stream) the same route answers a JSON batch.
//
// Policy replay (replays.go, over package replay): a human or admin
// replays a candidate policy over one session (POST
// /v1/sessions/{id}/policy/replays) or over the sessions a body names
// (POST /v1/policy/replays: a human only its own, authorized one by one),
// and reads a stored report (GET /v1/policy/replays/{id}, scoped to its
// session; one of several sessions is an admin's). Only an admin sets a
// session's require_replay (PUT /v1/sessions/{id}/policy/options); while
// it is set, PUT .../policy is 409 replay_required unless package replay
// finds a replay of the same document (RFC 8785 digest) within the hour,
// and the change's answer names it. Approvals carry the reviewer's risk.
//
// GET /docs is the API reference page, public in both deployments:
// apidocs/index.html, which `make api-docs` renders from api/openapi.yaml
// with the pinned Redocly CLI (Redoc, bundled inline) and the compiler
// embeds; a binary built without it answers 503 naming the target. Its
// Content-Security-Policy lets exactly the page's own inline scripts run
// (by hash) and connect to nothing but this origin; a chromium test finds
// every operation of the spec on it with every other host unresolvable.
//
// What it must never do: let a request's origin header or body stand in
// for the token's role or session, write anything for a refused request
// except its audit event, expose a task token, or import an AWS package.
package httpapi
