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
//
// A Bash call with run_in_background starts a managed process (package
// process) through the worker's Supervisor, when it has one (a worker
// without one refuses the call: nothing runs): the task's result is
// succeeded at once, with the process id. The supervisor holds each
// process it started (its *exec.Cmd, in its own session and group),
// reports its output, heartbeat and end every process.PollEvery, and
// carries out a stop request it reads in the answer (SIGTERM to the
// group, SIGKILL after process.StopGrace). It waits for a shell's exit
// without reaping it (waitid WNOWAIT), so the group id it signals cannot
// be reused under it; when the shell ends, what it left in its group is
// killed. At start-up it reports itself (Recover, retried until heard,
// while tasks already run): the processes earlier instances of the same
// host name left are lost; its own are never touched by that report. It
// never signals a PID read from a record. On shutdown it stops its
// processes and records them stopped (by worker_shutdown); Abandon (a hard
// stop) kills them unrecorded, as a crash would leave them.
package hostworker
