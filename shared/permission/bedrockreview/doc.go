// Package bedrockreview is an automatic reviewer (permission.Classifier)
// backed by a model on Amazon Bedrock, called through the Converse API of
// aws-sdk-go-v2/service/bedrockruntime. It is an adapter: the permission
// engine does not import it; when configured, the service wires it behind
// the built-in reviewer (riskreview.New(riskreview.WithModel(...))), which
// still blocks known risks and allows proven-safe calls itself and sends
// only the rest here.
//
// The request carries the complete call (never truncated; input over
// permission.MaxReviewBytes is refused before any request is made) in two
// clearly separated parts: the trusted context (working directory, project
// scope, the owner's request and restrictions, mode, policy version) and the
// untrusted tool call, JSON-encoded with HTML escaping so that its text can
// never close the block it is quoted in. The system prompt tells the model
// to treat the call as data and to answer with exactly one JSON object:
//
//	{"decision": "allow" | "block", "category": "<risk or empty>", "reason": "<one sentence>"}
//
// The answer is parsed strictly: one object, no other text, no unknown
// fields, a known decision, a reason, and a completed turn (stop reason
// end_turn). Anything else, a timeout (WithTimeout, default 20 s), a
// cancellation or any provider error is a *permission.NoVerdictError, never
// a verdict: the engine then neither executes the call nor counts a refusal.
//
// It never retries on its own (the client's retryer decides), never logs
// the call's arguments, and holds no state between reviews.
package bedrockreview
