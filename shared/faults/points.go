package faults

// The named crash points, in lifecycle order.
const (
	AfterStartEvidence = "after_start_evidence"
	AfterExecutor      = "after_executor"
	AfterReceipt       = "after_receipt"
	AfterCheckpoint    = "after_checkpoint"
	AfterProjection    = "after_projection"
)

// Points lists every named point.
var Points = []string{AfterStartEvidence, AfterExecutor, AfterReceipt, AfterCheckpoint, AfterProjection}

// CrashError is what an injected fault returns: the step stops right there,
// with nothing after the point done.
type CrashError struct{ Point string }

func (e *CrashError) Error() string { return "injected crash at " + e.Point }
