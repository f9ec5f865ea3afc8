// Package modelreq accounts for model (provider) requests: the agent's own
// model calls, which it reports through the API (purpose "agent"), and the
// automatic reviewer's Bedrock calls (purpose "reviewer", Classifier).
// Every request has a unique request_id and exactly one "started" and one
// "completed" record, with completion status completed, failed, cancelled
// or incomplete:
//
//   - completed: the provider sent its terminal event / full response;
//   - failed: the provider or the transport returned an error (an
//     error_code says which; a failed request is never an answer);
//   - cancelled: the caller cancelled it;
//   - incomplete: the stream ended (EOF) without a terminal event, or the
//     request was closed by the service with error_code no_terminal_event
//     (its execution ended or was cancelled first, or the process that
//     made it was lost).
//
// # Records and events
//
// An agent's request lives in its execution's partition
// (EXEC#<execution_id>/MODELREQ#<request_id>): request ids are unique
// within an execution, and a request of another execution is never found
// through this one (404, never a leak). The reviewer's requests have their
// own partition (MODELREQ#<request_id>/META). Both are listed per session
// through GSI1 and, while open, in the sparse GSI2 OPEN#MODELREQ.
//
// Exactly-once is enforced by the store: the started record is put once
// and completion is a compare-and-swap from open to terminal. With a
// lifecycle service (ForFlow), each of those writes is one transaction
// with its model_request.started / model_request.completed event in the
// session's log (actionflow.Service.TransactWithEvent), so every request
// has exactly one of each, under repeats, races and crashes.
//
// Report and Finish are the agent's API: the same report again returns the
// stored record, another body is a "conflict" carrying it; a report on an
// execution that is not running or paused is "execution_ended"; a
// completion of an unknown request is not found.
//
// # Closing what nobody will complete
//
//   - An execution's end: actionflow.CloseUnstarted, which End, the
//     iteration limit and Cancel all pass through, calls CloseExecution
//     (the ledger is the service's Config.RunWork): its open requests are
//     closed incomplete. A report racing the end re-reads the execution
//     after its write and closes its own record, so none stays open.
//   - A lost process: Sweep closes open requests started before a cutoff
//     that this service's own process made (not the agent's: those live
//     in the agent's process, which a crash of the service does not end;
//     their execution's end closes them), and the agent's requests of an
//     execution that has ended (a crash interrupted the end's closing).
//     `lifecycle serve` sweeps at start-up (everything before it was
//     lost); the recover function at each scheduled tick (older than a
//     Lambda can run).
//
// Closing only writes the missing completion: it never replays a tool,
// never retries a request and never authorizes a retry. Errors and
// cancellation of the reviewer's calls propagate unchanged (Do).
//
// It imports actionflow (for events and executions), never the other way:
// actionflow sees the ledger only as its RunCloser port.
package modelreq
