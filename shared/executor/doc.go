// Package executor holds the synchronous executors the dispatch step calls
// after start evidence is durable, and the Router that says which executor
// kind runs a tool:
//
//   - noop: succeeds without side effects (benchmarks, dry runs);
//   - http: POSTs the authorized task to a webhook, HMAC-signed, with the
//     action id as idempotency key;
//   - lambda (package lambdaexec): invokes a tool Lambda with the action id as
//     idempotency key.
//
// Host tools (Bash, Read, Write, Edit) are not executed here: they run on
// the agent's machine through a task-token wait (packages hosttools and
// hostworker). An executor never decides permission and never retries a
// call that may have reached the tool.
package executor
