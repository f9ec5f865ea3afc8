package faults

// The named crash points, in lifecycle order.
const (
	// AfterLease: a dispatch attempt holds the action's lease and has not
	// written start evidence yet (nothing ran).
	AfterLease         = "after_lease"
	AfterStartEvidence = "after_start_evidence"
	AfterExecutor      = "after_executor"
	AfterReceipt       = "after_receipt"
	// AfterCheckpoint: the record step's transaction (checkpoint fold,
	// delivery projected, the action.projected event) stands; the event is
	// not published yet.
	AfterCheckpoint = "after_checkpoint"
	// AfterProjection: the record step published the projection event
	// too; only its return to the state machine is left.
	AfterProjection = "after_projection"
)

// Points lists the named points from start evidence on, the ones the
// recovery matrices cross with every path (AfterLease, before anything can
// have run, has tests of its own).
var Points = []string{AfterStartEvidence, AfterExecutor, AfterReceipt, AfterCheckpoint, AfterProjection}

// CrashError is what an injected fault returns: the step stops right there,
// with nothing after the point done.
type CrashError struct{ Point string }

func (e *CrashError) Error() string { return "injected crash at " + e.Point }
