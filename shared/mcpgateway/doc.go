// Package mcpgateway is the lifecycle's Model Context Protocol front door:
// a streamable HTTP MCP server (github.com/modelcontextprotocol/go-sdk)
// mounted at /mcp beside /v1 by `lifecycle serve` and by the api Lambda
// (stateless), so agents that speak MCP (Claude Code, Codex CLI, Cursor,
// the Agents SDKs) reach the lifecycle through their ordinary tool entry.
//
// Authentication is the API's: the same Authenticator and bearer tokens.
// No or an invalid token is a plain HTTP 401 with the API's JSON error body;
// a token that is not an agent token of one session is 403. The SDK binds
// an MCP session to the token's user, so another token cannot use it.
//
// tools/list is exactly the session's visible tools under its live policy
// (the API's ToolLister: the catalog filtered by permission.VisibleTools;
// a whole-tool deny removes the tool), each with the input schema of its
// contract. There is one mcp.Server per lifecycle session; its tools are
// re-read before every tools/list, on every policy.updated event and every
// RefreshInterval, and a change sends notifications/tools/list_changed to
// every MCP session of that lifecycle session.
//
// tools/call is one action through actionflow.Service.Submit, the call
// POST /v1/sessions/{id}/actions makes. Its tool_call_id and idempotency
// key are derived from the lifecycle session, the MCP session id and the
// JSON-RPC request id, so a client's retry of the same request reaches the
// same action and never runs a tool twice (the SDK does not expose a
// request's id to handlers; markRequests copies it from the POST body into
// a header the handler reads, after removing any client value). A client
// may instead name the call with _meta "openprogram/idempotency_key"; in
// stateless mode, with no MCP session to scope a request id, a call
// without that key is a new call. The calls of one MCP session form one
// execution. The request is held until the action's receipt is sealed:
//   - succeeded: the output as text content;
//   - failed: isError, with the error and the output;
//   - not_started (denied, declined, expired, invalid arguments): isError,
//     stating the precise restriction and the resolution the decider gave,
//     never a protocol error (a tool the policy hides is submitted too);
//   - unknown: isError saying reconciliation is required.
//
// While the call waits for a human's approval, a client that sent a
// progressToken receives notifications/progress naming the approval. The
// approval is decided only through a human-authenticated path (the UI, the
// API with a human token); this package never sends an elicitation, and no
// answer arriving over MCP can approve anything. When the client cancels
// the request (notifications/cancelled) or ends its MCP session (DELETE;
// the SDK's session close would otherwise wait for held calls),
// actionflow.Service.CancelAction closes the action: a pending approval
// becomes cancelled and nothing runs; an action that already started is not
// undone and keeps its receipt. When the gateway itself stops (serve's
// orderly stop), held calls are answered that the server is stopping and
// their actions are left as they are: durable, they continue after a
// restart.
//
// MCP Tasks (revision 2025-11-25, experimental; tasks.go), stateful mode
// only: go-sdk v1.8.0 has none and refuses tasks/* before any middleware,
// so they are served at the HTTP layer. initialize advertises them; a
// tools/call with a "task" is submitted the same way and answered at once
// with a task whose id is the action id (durable across restarts);
// tasks/get reads the action (working, input_required while an approval
// is pending, completed, failed, cancelled), tasks/result waits for the
// receipt's result, tasks/cancel calls CancelAction. Another session's
// task id is "not found", like an id that does not exist.
//
// Bridge serves a stdio client (`lifecycle mcp`) by relaying its messages
// unchanged to a gateway's streamable HTTP endpoint, so everything above
// holds for clients that launch a command.
//
// What it must never do: approve, decide or reconcile anything; run a tool
// any way but through Submit; answer a refusal as a success or an unknown
// outcome as succeeded; import an AWS package. actionflow never imports it.
package mcpgateway
