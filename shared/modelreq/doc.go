// Package modelreq accounts for model (provider) requests the runtime
// dispatches — the LLM reviewer's Bedrock calls, and any model call an agent
// runtime reports through it. Every request has a unique request_id and
// exactly one "started" and one "completed" record, with completion status
// completed, failed, cancelled or incomplete:
//
//   - completed: the provider sent its terminal event / full response;
//   - failed: the provider or the transport returned an error;
//   - cancelled: the caller's context was cancelled;
//   - incomplete: the stream ended (EOF) without a terminal event, or the
//     process lost the request (a started record with no completion is
//     closed as incomplete by Sweep).
//
// Exactly-once is enforced by the store: the started record is a put-once
// item (`MODELREQ#<request_id>`/`META`) and completion is a compare-and-swap
// from open to terminal, so a repeated or racing completion is a no-op that
// returns the first status. Errors and cancellation propagate unchanged to
// the caller; accounting never replays a tool, never retries a request, and
// never turns an unsuccessful request into a successful answer.
package modelreq
