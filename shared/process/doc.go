// Package process owns managed processes: the background commands a host
// tool call started (Bash with run_in_background), their records, their
// bounded output and the rules of their life.
//
// A Record has its own id (proc_…), its owner (session, execution, the
// action that started it), the command, its start time, its status
// (running, then exactly once exited with a code, stopped, or lost) and the
// supervisor that runs it: the host worker instance that started it. Only
// that supervisor reports its output and its end (every report names the
// supervisor; a report from another is refused with *SupervisorError).
// The supervisor id is not a credential (whoever reads the record sees
// it): a record also keeps RegisteredBy, the identity that recorded it
// (the API sets the token's subject), and a report or start-up Recover
// under another identity is refused (*actionflow.ForbiddenError, 403) or
// ignored, so another host token of the session cannot end, write to or
// lose someone else's processes.
//
// Output is kept per stream (stdout, stderr) as the last RetainBytes
// (256 KiB) in at most RetainChunks chunks of at most ChunkBytes: chunk n
// of a stream overwrites the slot n mod RetainChunks (a compare-and-swap on
// the slot's version), so a process that writes for days keeps a bounded
// footprint. Every chunk has a sequence number, one sequence over both
// streams, which is the reader's cursor (Output after=).
//
// Stop is a request on the record (StopRequest, idempotent by command id,
// from a human of the session, the owning agent, or the owning execution's
// Cancel through CloseExecution); the supervisor reads it at its next poll
// (every PollEvery) and signals the process group it holds in memory
// (SIGTERM, then SIGKILL after StopGrace), then reports the end as stopped.
// Nothing in this package, or anywhere else, signals a process from a PID
// read from the store: a saved PID may have been reused. A record whose
// supervisor is gone becomes lost (Recover at a supervisor's start-up for
// the records of its earlier instances; Sweep for supervisors whose
// heartbeat is older than LostAfter), never signalled.
//
// The package writes only its own items (PROC#<id>, EXEC#<id>/PROC#<id>)
// and their events (process.started, process.ended, process.stop_requested)
// in the session's log; it imports actionflow for the event log and the
// execution records, never the transports.
package process
