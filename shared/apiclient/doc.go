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
// It never retries a request on its own: a submission carries its
// Idempotency-Key, so the caller decides whether to repeat it.
package apiclient
