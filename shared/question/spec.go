package question

import "encoding/json"

// Description and InputSchema describe AskUserQuestion to a model (the
// tool catalog, GET /v1/tools). The schema is the shape Parse accepts.
const Description = "Ask the user one or more questions and wait for the answers (answered together; the user may skip). " +
	"Kinds: single (one option), multiple (several options), confirm (yes/no), text (free text), form (named typed fields). " +
	"The result is {\"answers\":{id: answer}, \"questions\":[...]}; a skip fails the call with \"declined\"."

// InputSchema is the JSON Schema of the arguments.
var InputSchema = json.RawMessage(`{"type":"object","additionalProperties":false,"required":["questions"],"properties":{` +
	`"questions":{"type":"array","minItems":1,"maxItems":8,"items":{"type":"object","additionalProperties":false,"required":["question"],"properties":{` +
	`"id":{"type":"string","pattern":"^[A-Za-z0-9_-]{1,64}$","description":"Default q1, q2, … by position."},` +
	`"question":{"type":"string"},"header":{"type":"string","description":"A short label (a chip or tab)."},` +
	`"kind":{"enum":["single","multiple","confirm","text","form"],"description":"Default single, or multiple when multiSelect."},` +
	`"multiSelect":{"type":"boolean"},` +
	`"options":{"type":"array","minItems":2,"maxItems":20,"items":{"type":"object","additionalProperties":false,"required":["label"],"properties":{"label":{"type":"string"},"description":{"type":"string"}}}},` +
	`"fields":{"type":"array","minItems":1,"maxItems":30,"items":{"type":"object","additionalProperties":false,"required":["name","type"],"properties":{` +
	`"name":{"type":"string"},"type":{"enum":["string","number","integer","boolean"]},"required":{"type":"boolean"},"enum":{"type":"array"},"label":{"type":"string"}}}}}}},` +
	`"metadata":{"type":"object"}}}`)
