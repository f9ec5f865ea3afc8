// Package lambdaexec is the lambda executor: it invokes a tool Lambda
// synchronously with the authorized task and the action id as idempotency key.
//
// Payload: {"action_id","execution_id","session_id","tool_call_id","tool",
// "arguments","args_digest","idempotency_key"}. The tool function answers
// {"ok": bool, "output": string, "error_code": string, "error": string}.
// A function error (FunctionError set) is a deterministic failure; an invoke
// error after the request may have been sent is an error (outcome unknown).
package lambdaexec
