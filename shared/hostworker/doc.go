// Package hostworker is the host worker: the loop that runs authorized host
// tasks on the agent's machine. It lists published tasks, claims one (the
// lifecycle writes start evidence immediately before the tool runs), runs it
// with hosttools, heartbeats it every actionflow.HostHeartbeatEvery while
// it runs (a worker that stops heartbeating has its action recorded
// unknown after the DispatchHost state's HeartbeatSeconds, never run
// again), and posts the result as the attempt that owns it.
//
// Up to Parallel tasks run at once (default DefaultParallel, at most
// MaxParallel). The loop takes a free slot, lists, and starts each task it
// does not already run in its own goroutine, taking one more slot per task
// while slots are free; the goroutine that ran a task frees its slot. The
// loop itself never holds what it waits for, so a long command delays only
// the tasks beyond the free slots, never the worker.
//
// It talks to the lifecycle through the Host interface: directly to the
// service inside `lifecycle serve`, or over HTTP (`lifecycle host`). A claim
// that loses (another worker started it) is skipped, never run twice. Run
// logs the shell that runs Bash commands when it starts.
//
// Each task runs in the sandbox profile it carries (Task.Sandbox; nil: the
// default). Without bubblewrap, a worker whose Host is a Refuser (the
// in-process Direct) refuses each task before claiming it, so it ends
// not_started (a task whose profile is off still runs); a worker over the
// API, which cannot refuse unclaimed, does not start.
package hostworker
