package statemachines

import (
	_ "embed"
	"regexp"
	"sort"
)

// ActionLifecycle is statemachines/action-lifecycle.asl.json.
//
//go:embed action-lifecycle.asl.json
var ActionLifecycle []byte

// Functions maps each placeholder of the definition to the function
// (functions/<name>) whose ARN fills it.
var Functions = map[string]string{
	"AuthorizeFunctionArn": "authorize",
	"ApprovalFunctionArn":  "approval",
	"DispatchFunctionArn":  "dispatch",
	"RecordFunctionArn":    "record",
}

// Retired maps the placeholders of functions that earlier definitions
// used and this one no longer does to those functions: the project step,
// which the record step took over (it folds and projects in one
// transaction). The embedded engine still fills and serves them, so an
// execution started on an earlier revision's definition (in flight, or an
// execution that keeps its original revision) runs to its end.
var Retired = map[string]string{
	"ProjectFunctionArn": "project",
}

var placeholder = regexp.MustCompile(`\$\{([A-Za-z0-9_]+)\}`)

// Placeholders lists the ${Name} placeholders used in a definition, sorted.
func Placeholders(def []byte) []string {
	seen := map[string]bool{}
	for _, m := range placeholder.FindAllSubmatch(def, -1) {
		seen[string(m[1])] = true
	}
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
