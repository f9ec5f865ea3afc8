package asl

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

var placeholder = regexp.MustCompile(`\$\{([A-Za-z0-9_]+)\}`)

// Substitute replaces ${Name} placeholders the way CloudFormation's
// DefinitionSubstitutions do (plain text replacement before parsing). Every
// placeholder in the definition must have a value: a definition with a hole
// left in it is refused, naming every missing placeholder. Values that are
// not used are allowed, as in CloudFormation.
func Substitute(definition []byte, values map[string]string) ([]byte, error) {
	var missing []string
	seen := map[string]bool{}
	out := placeholder.ReplaceAllFunc(definition, func(m []byte) []byte {
		name := string(m[2 : len(m)-1])
		v, ok := values[name]
		if !ok {
			if !seen[name] {
				missing = append(missing, name)
				seen[name] = true
			}
			return m
		}
		return []byte(v)
	})
	if len(missing) > 0 {
		sort.Strings(missing)
		return nil, fmt.Errorf("definition substitutions missing for placeholders: ${%s}", strings.Join(missing, "}, ${"))
	}
	return out, nil
}
