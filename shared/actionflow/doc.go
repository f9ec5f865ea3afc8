// Package actionflow is the action lifecycle as one flow of idempotent
// steps, each the body of one Lambda handler and one state of the state
// machine (statemachines/action-lifecycle.asl.json):
//
//	Submit (API)     prepare: put the action intent once, start its execution (name = action id)
//	Authorize        decide permission bound to action, execution, tool call, policy version, args digest
//	ApprovalStep     store the task token on a fresh pending approval (await) / record expiry (expire)
//	DecideApproval   (API) a human's decision, applied exactly once, completes the wait
//	Authorize        revalidate after the approval, immediately before dispatch
//	Dispatch         attempt lease, start evidence, executor (sync) or host task publication (publish)
//	HostStart/HostResult (API) the host worker's claim and result, fenced by the attempt lease
//	Record           seal the write-once receipt from durable evidence, then fold the checkpoint
//	Project          mark delivery projected, append and publish the projection event
//
// Each step reads its state from the store, never from the state
// machine's payload, so a repeated or late invocation cannot act on stale
// data. The three states only change through package lifecycle.
//
// What it must never do: call an executor for an action whose start
// evidence exists; turn a known result into unknown; record not_started for
// a dispatched operation; treat an expired approval as approval; let an
// agent principal decide an approval. It imports no AWS or Lambda package;
// adapters implement its ports (ports.go).
package actionflow
