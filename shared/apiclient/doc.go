// Package apiclient is the Go client of the lifecycle HTTP API (package
// httpapi): what the CLI's client commands and a remote host worker
// (`lifecycle host`, through Client.Host, a hostworker.Host) use.
//
// Error responses come back as the lifecycle's typed errors, so callers
// route on them the same way in-process or over HTTP: 400 is a
// *actionflow.ValidationError naming the field, 403 *actionflow.ForbiddenError,
// 404 *actionflow.NotFoundError, 409 *actionflow.ConflictError (Current holds
// the server's current state as raw JSON); anything else an *Error.
//
// It cannot drift from api/openapi.yaml unnoticed: TestClientMatchesTheSpec
// calls every method of Client and Host (a new method must join its table)
// against a server that answers as the spec says, and fails when a request
// is not a documented operation, carries an undocumented query parameter or
// header, or a body the request schema refuses, or when the value a method
// returns drops, renames or invents a field of the documented response, at
// any depth.
//
// It never retries a request on its own: a submission carries its
// Idempotency-Key, so the caller decides whether to repeat it.
package apiclient
