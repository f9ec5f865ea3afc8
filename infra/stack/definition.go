package stack

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
)

// placeholderPattern is the DefinitionSubstitutions syntax: ${Name}.
var placeholderPattern = regexp.MustCompile(`\$\{([^}]*)\}`)

// substitutionFunctions maps each placeholder the ASL file may use to the
// function whose ARN fills it. The state machine may invoke exactly the
// functions named here that the file references, nothing else.
var substitutionFunctions = map[string]string{
	"AuthorizeFunctionArn": FnAuthorize,
	"ApprovalFunctionArn":  FnApproval,
	"DispatchFunctionArn":  FnDispatch,
	"RecordFunctionArn":    FnRecord,
}

// retiredFunctions are functions an earlier definition invoked and the
// current one does not: project, whose step the record step took over (it
// folds the receipt and projects the action in one transaction). They
// stay deployed, and the state machine may still invoke them and their
// versions: a state machine version of an earlier revision names the
// version of them its deployment published (retained on replacement), and
// executions run on it while in flight, and for every new action of an
// execution that keeps its original revision. A deployment whose
// definition does not reference them publishes no version of them.
var retiredFunctions = []string{FnProject}

// RetiredFunctions returns a copy of the retired functions.
func RetiredFunctions() []string { return slices.Clone(retiredFunctions) }

// SubstitutionFunctions returns a copy of the placeholder → function map.
func SubstitutionFunctions() map[string]string {
	out := make(map[string]string, len(substitutionFunctions))
	for k, v := range substitutionFunctions {
		out[k] = v
	}
	return out
}

// Definition is the ASL file as deployed: its exact text (the state machine's
// DefinitionString) and the placeholders in it, sorted.
type Definition struct {
	Body         string
	Placeholders []string
}

// LoadDefinition reads the ASL file and refuses one that is not JSON or that
// uses a placeholder the stack cannot fill: a placeholder left unfilled would
// reach Step Functions as a literal "${...}" and fail only at run time.
func LoadDefinition(path string) (Definition, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return Definition{}, fmt.Errorf("read state machine definition: %w", err)
	}
	return ParseDefinition(path, string(raw))
}

// ParseDefinition is LoadDefinition without the file read.
func ParseDefinition(name, body string) (Definition, error) {
	var asl map[string]any
	if err := json.Unmarshal([]byte(body), &asl); err != nil {
		return Definition{}, fmt.Errorf("state machine definition %s is not a JSON object: %w", name, err)
	}
	if _, ok := asl["StartAt"]; !ok {
		return Definition{}, fmt.Errorf("state machine definition %s has no StartAt", name)
	}
	found := Placeholders(body)
	var unknown []string
	for _, p := range found {
		if _, ok := substitutionFunctions[p]; !ok {
			unknown = append(unknown, p)
		}
	}
	if len(unknown) > 0 {
		known := make([]string, 0, len(substitutionFunctions))
		for k := range substitutionFunctions {
			known = append(known, k)
		}
		slices.Sort(known)
		return Definition{}, fmt.Errorf("state machine definition %s uses placeholders the stack does not provide: ${%s} (known: %s)",
			name, strings.Join(unknown, "}, ${"), strings.Join(known, ", "))
	}
	return Definition{Body: body, Placeholders: found}, nil
}

// Placeholders returns the distinct ${...} names in body, sorted.
func Placeholders(body string) []string {
	var out []string
	for _, m := range placeholderPattern.FindAllStringSubmatch(body, -1) {
		if !slices.Contains(out, m[1]) {
			out = append(out, m[1])
		}
	}
	slices.Sort(out)
	return out
}

// Substitute replaces every ${name} in body by values[name]; it is the
// inverse used by tests and mirrors what CloudFormation does at deploy time.
func Substitute(body string, values map[string]string) (string, error) {
	var missing []string
	out := placeholderPattern.ReplaceAllStringFunc(body, func(m string) string {
		name := m[2 : len(m)-1]
		v, ok := values[name]
		if !ok {
			if !slices.Contains(missing, name) {
				missing = append(missing, name)
			}
			return m
		}
		return v
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("no substitution for ${%s}", strings.Join(missing, "}, ${"))
	}
	return out, nil
}
