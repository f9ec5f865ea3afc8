package hosttools

import (
	"encoding/json"

	"github.com/openprogram/lifecycle/shared/permission"
)

// Specs are the model-facing descriptions of the host tools Runner runs,
// with input schemas matching the arguments it reads. The API filters them
// against a session's live rules (permission.VisibleTools) for GET /v1/tools.
var Specs = []permission.ToolSpec{
	{Name: "Bash", Description: "Run a bash command in the workspace (bash --noprofile --norc -c; no terminal, no input).", InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["command"],"properties":{` +
		`"command":{"type":"string","description":"The command; the whole program is reviewed."},` +
		`"description":{"type":"string","description":"What it does, for people (not part of its identity)."},` +
		`"timeout":{"type":"integer","minimum":0,"maximum":600000,"description":"Milliseconds (default 120000)."},` +
		`"network":{"type":"boolean","description":"Run with network access (the sandbox has none by default); asks the owner unless the policy allows it."},` +
		`"dangerouslyDisableSandbox":{"type":"boolean","description":"Run outside the sandbox; asks the owner unless the policy allows it."},` +
		`"run_in_background":{"type":"boolean","description":"Start it as a managed process and return its id at once (read its output with its id; stop it with its own control)."}}}`)},
	{Name: "Read", Description: "Read a file of the workspace.", InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["file_path"],"properties":{` +
		`"file_path":{"type":"string"}}}`)},
	{Name: "Write", Description: "Write a file of the workspace (replacing it).", InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["file_path","content"],"properties":{` +
		`"file_path":{"type":"string"},"content":{"type":"string"}}}`)},
	{Name: "Edit", Description: "Replace text in a file of the workspace.", InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["file_path","old_string","new_string"],"properties":{` +
		`"file_path":{"type":"string"},"old_string":{"type":"string"},"new_string":{"type":"string"},"replace_all":{"type":"boolean"}}}`)},
}
