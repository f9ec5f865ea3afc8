// Package faults is the fault-injection hook of the lifecycle: named points
// in the handlers ("after start evidence", "after receipt", ...) where a test
// can make the step stop as if the process had crashed there.
//
// The hook is compiled in only with the build tag `faultinject` (make test
// sets it); production builds get the no-op in off.go, so no configuration or
// environment variable can trigger a fault in a deployed function. In a
// faultinject build, LIFECYCLE_FAULT_KILL (kill.go) makes the process SIGKILL
// itself at named points, for the black-box chaos run (tests/chaos).
package faults
