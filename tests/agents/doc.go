// Package agents proves the lifecycle's MCP front door with agent clients
// nobody here wrote: the real Codex CLI (and, in `make test-agents`, Claude
// Code) binaries from their pinned npm packages under .tools/, pointed at a
// model the test plays on 127.0.0.1 (it answers the agent's first model
// request with a call to a lifecycle tool and the second with a final
// message) and at a real `lifecycle serve`'s /mcp with an agent token. The
// call waits for a person's approval, which the test gives through the
// HTTP API with the human token; the agent then receives the tool's real
// output and hands it to the model.
//
// Codex runs four ways: the ask approved (the tool runs once and its output
// reaches the model), the ask declined and the call denied by rule (nothing
// runs; the model reads why), and the ask approved over stdio through
// `lifecycle mcp`. Claude Code runs the approved case over both transports.
//
// Nothing leaves loopback: the clients run with a home directory of their
// own, no proxy variables, and the settings that stop their update checks,
// plugin downloads and analytics (codexConfig; for Claude Code
// CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC). When a client is not installed
// the test is skipped naming the make target that installs it; `make test`
// installs Codex CLI first and sets LIFECYCLE_MCP_CLIENTS_REQUIRED=1, so
// there a missing client fails (`make test-agents` does the same for Claude
// Code with LIFECYCLE_CLAUDE_CODE_REQUIRED=1).
package agents
