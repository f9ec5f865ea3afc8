// Package mcpdownstream runs downstream MCP servers as executors: their
// tools appear to agents as mcp__<server>__<tool> and every call of one
// goes through the lifecycle like a built-in tool (rules, approvals,
// start evidence, receipt, recovery) before this package sends it.
//
// # The servers file
//
// LoadConfig reads it (`lifecycle serve --mcp-servers FILE`, env
// LIFECYCLE_MCP_SERVERS):
//
//	{"servers": {
//	  "everything": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything"], "env": {"K": "v"}},
//	  "search":     {"url": "https://search.example.com/mcp", "headers": {"Authorization": "Bearer ..."}, "timeout_seconds": 60}
//	}}
//
// A server is a command (stdio: it inherits the lifecycle's environment
// minus LIFECYCLE_*, plus "env") or a URL (Streamable HTTP, "headers" on
// every request), never both. Names are 1-64 of [a-z0-9_-], start with a
// letter or digit and hold no "__", so a permission rule can name them.
// Unknown fields are refused; every error names the server and the field.
//
// # Start-up
//
// Start opens one client session per server (the official Go SDK,
// github.com/modelcontextprotocol/go-sdk), lists its tools into the
// catalog (Specs: name, description, input schema) and routes
// mcp__<server>__* to Kind (Routes). A tool whose name no rule could name
// is skipped and reported. A server that cannot be started is reported in
// its Status and left out of the catalog; it does not stop the lifecycle
// (approvals, receipts and recovery of everything else go on) and keeps
// its route, so a call of its tools connects again first. The catalog is
// fixed at start-up.
//
// # A call
//
// When the call is prepared, before any permission decision, its
// arguments are checked against the tool's input schema (Contracts: one
// identity.Contract per listed tool, validated with
// github.com/google/jsonschema-go), as a built-in tool's are against its
// contract: a call the schema refuses ends not_started with
// invalid_arguments and the fields named, and nothing is sent. A schema
// that cannot be resolved (a remote $ref) is left to the server.
//
// Before start evidence, dispatch asks Ready (actionflow.Readier): a live
// session answers a ping; a dead one (process exited, connection closed,
// ping unanswered) is replaced by a new connection (a stdio server is
// started again). A failure here sent nothing: dispatch fails NotStarted,
// the ASL retries it, and after the retries the receipt is not_started.
//
// After start evidence, Execute sends tools/call once, within the
// server's deadline (timeout_seconds, default 120 s, at most 600), with
// the action id as _meta "openprogram.dev/idempotency_key":
//
//	a result                                       -> succeeded, its content as text
//	a result with isError                          -> failed (tool_error), with its text
//	JSON-RPC parse error, invalid request,
//	  method not found, invalid params             -> failed (mcp_*): refused, nothing ran
//	no response (deadline, connection lost), or
//	  any other error (the server's internal error) -> error: outcome unknown, reconciliation
//
// An unknown outcome is never retried: a dispatch re-invoked after start
// evidence answers unknown without calling again. A session that died in
// the moment between Ready and the call is unknown too (start evidence
// exists), though nothing was sent; the error says so.
//
// It never decides permission, never retries a call that may have reached
// the server, never answers a server's sampling, elicitation or roots
// request (it advertises none of them: nobody inside a tool call can speak
// for the human), and imports no AWS package.
package mcpdownstream
