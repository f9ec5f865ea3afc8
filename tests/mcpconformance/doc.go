// Package mcpconformance runs the official MCP conformance suite
// (@modelcontextprotocol/conformance, pinned and installed under .tools/
// by `make mcp-clients`) against a real `lifecycle serve`'s /mcp and holds
// the result to expected.json; EXPECTED.md justifies every scenario that
// does not pass.
package mcpconformance
