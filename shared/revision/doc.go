// Package revision owns the identity of what runs an action: the state
// machine definition (the ASL file, as written, with its ${Name}
// placeholders) plus the handler contract the handlers behind its Tasks
// declare. Two builds whose ASL is the same JSON (whatever its key order or
// whitespace) and whose handlers declare the same contract are the same
// revision; an unrelated edit of the repository is not a new revision (the
// spec's "relevant function and dependency identity").
//
//	Revision{ID: "rev-" + 12 hex of sha256(ASLDigest + "\n" + Contract),
//	         ASLDigest: "sha256:" + hex(sha256(JCS(asl))), Contract, Resumes}
//
// Compatibility is explicit: a revision lists the handler contracts whose
// checkpoints, cursors and step inputs it can resume (Resumes, always
// including its own). CanResume says whether an execution started on
// another revision may continue on this one and, when it may not, lists the
// differences as sentences a person can act on. Bump HandlerContract (and
// decide HandlerResumes) only when a checkpoint, cursor or step-input shape
// changes.
//
// The Registry keeps, in the store, every revision this deployment ever
// ran with the Step Functions version ARN that runs it, and which one the
// `live` alias points at:
//
//	REVISIONS / REV#<id>   Published (PutOnce; a repeat with the same
//	                       revision and version ARN is accepted)
//	REVISIONS / LIVE       {"id": ...} (CompareAndSwap on its version)
//
// It never decides which revision an execution runs (the lifecycle's
// version policy does), never publishes a state machine version (the
// deployment does: `serve` through the embedded engine's
// PublishStateMachineVersion, CDK on AWS), and imports no AWS package.
package revision
