package httpapi_test

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// The checks here catch what a YAML parser and the OpenAPI 3.1 meta-schema
// both let through (issue 18): in a flow mapping such as
//
//	origin: {type: string, description: api, ui, cli or system.}
//
// an unquoted comma ends the description, and the rest of the prose becomes
// stray keys (`ui`, `cli or system.`) that JSON Schema ignores as unknown
// keywords; and a key written twice in one mapping (two SandboxProfile
// schemas) silently keeps one of them in most loaders. `make api-lint` runs
// Redocly CLI over the same file; these checks need nothing but `go test`.

// propertyName is the spec's naming of schema properties: snake_case JSON
// field names.
var propertyName = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

// foreignPropertyNames are property names the spec copies verbatim from a
// format it does not own, each with the reason.
var foreignPropertyNames = map[string]string{
	"multiSelect": "Claude Code's AskUserQuestion input (shared/question), kept as the agent sends it",
}

// schemaKeywords are the keys a Schema Object may have in OpenAPI 3.1: the
// JSON Schema 2020-12 core, applicator, validation, format, content and
// meta-data vocabularies, and OpenAPI's own (discriminator, xml,
// externalDocs, example). Extensions (x-…) are allowed besides.
var schemaKeywords = setOf(
	"$schema", "$id", "$ref", "$anchor", "$dynamicRef", "$dynamicAnchor", "$vocabulary", "$comment", "$defs",
	"allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas", "prefixItems", "items",
	"contains", "properties", "patternProperties", "additionalProperties", "propertyNames",
	"unevaluatedItems", "unevaluatedProperties",
	"type", "enum", "const", "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
	"maxLength", "minLength", "pattern", "maxItems", "minItems", "uniqueItems", "maxContains", "minContains",
	"maxProperties", "minProperties", "required", "dependentRequired",
	"format", "contentEncoding", "contentMediaType", "contentSchema",
	"title", "description", "default", "deprecated", "readOnly", "writeOnly", "examples",
	"discriminator", "xml", "externalDocs", "example",
)

func setOf(s ...string) map[string]bool {
	m := make(map[string]bool, len(s))
	for _, k := range s {
		m[k] = true
	}
	return m
}

// specProblems parses an OpenAPI document strictly and returns every
// problem found: duplicate mapping keys anywhere, keys with white space
// (prose that became a key), schema keys that are not schema keywords, and
// schema property names that are not the spec's identifiers.
func specProblems(raw []byte) ([]string, error) {
	c, err := checkSpec(raw)
	if err != nil {
		return nil, err
	}
	return c.problems, nil
}

func checkSpec(raw []byte) (*specChecker, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	if len(doc.Content) != 1 {
		return nil, fmt.Errorf("want one YAML document, got %d", len(doc.Content))
	}
	c := &specChecker{}
	c.keys(doc.Content[0], "")
	c.document(doc.Content[0], "")
	return c, nil
}

type specChecker struct {
	problems            []string
	schemas, properties int // how many were checked
}

func (c *specChecker) add(n *yaml.Node, path, format string, args ...any) {
	c.problems = append(c.problems, fmt.Sprintf("line %d (%s): %s", n.Line, orRoot(path), fmt.Sprintf(format, args...)))
}

func orRoot(path string) string {
	if path == "" {
		return "/"
	}
	return path
}

// pointerToken escapes a key for a JSON pointer (RFC 6901).
func pointerToken(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}

// keys walks every node: no mapping may define a key twice, and no key
// outside an example may contain white space.
func (c *specChecker) keys(n *yaml.Node, path string) {
	switch n.Kind {
	case yaml.MappingNode:
		seen := map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := path + "/" + pointerToken(k.Value)
			if first, dup := seen[k.Value]; dup {
				c.add(k, path, "key %q is defined twice (first at line %d)", k.Value, first)
			} else {
				seen[k.Value] = k.Line
			}
			if strings.ContainsAny(k.Value, " \t\n") {
				c.add(k, path, "key %q contains white space: prose after an unquoted comma in a flow mapping? Quote the description", k.Value)
			}
			if k.Value == "example" || k.Value == "examples" {
				continue // data, not description: any key goes
			}
			c.keys(v, p)
		}
	case yaml.SequenceNode:
		for i, v := range n.Content {
			c.keys(v, fmt.Sprintf("%s/%d", path, i))
		}
	case yaml.DocumentNode, yaml.AliasNode:
		for _, v := range n.Content {
			c.keys(v, path)
		}
		if n.Alias != nil {
			c.keys(n.Alias, path)
		}
	}
}

// document finds the schemas in an OpenAPI document: the values of
// components/schemas and of every `schema` key (parameters, headers, media
// types), outside examples.
func (c *specChecker) document(n *yaml.Node, path string) {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := path + "/" + pointerToken(k.Value)
			switch {
			case k.Value == "example" || k.Value == "examples":
			case k.Value == "schema":
				c.schema(v, p)
			case k.Value == "schemas" && path == "/components" && v.Kind == yaml.MappingNode:
				for j := 0; j+1 < len(v.Content); j += 2 {
					c.schema(v.Content[j+1], p+"/"+pointerToken(v.Content[j].Value))
				}
			default:
				c.document(v, p)
			}
		}
	case yaml.SequenceNode:
		for i, v := range n.Content {
			c.document(v, fmt.Sprintf("%s/%d", path, i))
		}
	}
}

// schema checks one Schema Object and the schemas inside it.
func (c *specChecker) schema(n *yaml.Node, path string) {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!bool" {
		return // true / false are schemas too
	}
	c.schemas++
	if n.Kind != yaml.MappingNode {
		c.add(n, path, "a schema must be a mapping or a boolean, not %s", kindName(n))
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		p := path + "/" + pointerToken(k.Value)
		if !schemaKeywords[k.Value] && !strings.HasPrefix(k.Value, "x-") {
			c.add(k, path, "%q is not a schema keyword: prose after an unquoted comma in a flow mapping? Quote the description", k.Value)
			continue
		}
		switch k.Value {
		case "properties", "patternProperties", "$defs", "dependentSchemas":
			if v.Kind != yaml.MappingNode {
				c.add(v, p, "%s must be a mapping, not %s", k.Value, kindName(v))
				continue
			}
			for j := 0; j+1 < len(v.Content); j += 2 {
				name := v.Content[j]
				if k.Value == "properties" {
					c.properties++
				}
				if k.Value == "properties" && !propertyName.MatchString(name.Value) && foreignPropertyNames[name.Value] == "" {
					c.add(name, p, "property name %q is not an identifier (%s)", name.Value, propertyName)
				}
				c.schema(v.Content[j+1], p+"/"+pointerToken(name.Value))
			}
		case "items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames",
			"unevaluatedItems", "unevaluatedProperties", "contentSchema":
			c.schema(v, p)
		case "allOf", "anyOf", "oneOf", "prefixItems":
			if v.Kind != yaml.SequenceNode {
				c.add(v, p, "%s must be a list, not %s", k.Value, kindName(v))
				continue
			}
			for j, s := range v.Content {
				c.schema(s, fmt.Sprintf("%s/%d", p, j))
			}
		case "title", "description", "pattern", "format", "$ref", "$comment":
			if v.Kind != yaml.ScalarNode || v.Tag != "!!str" {
				c.add(v, p, "%s must be a string, not %s", k.Value, kindName(v))
			}
		}
	}
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "empty"
		}
		return "the scalar " + n.Tag + " " + fmt.Sprintf("%q", n.Value)
	}
	return "an alias"
}

// TestOpenAPISchemasSayWhatTheirAuthorsMeant: api/openapi.yaml has no
// duplicate keys, no keys made of prose, no unknown schema keywords and no
// property names outside the spec's naming.
func TestOpenAPISchemasSayWhatTheirAuthorsMeant(t *testing.T) {
	raw, err := os.ReadFile(specPath)
	if err != nil {
		t.Fatal(err)
	}
	c, err := checkSpec(raw)
	if err != nil {
		t.Fatalf("%s does not parse: %v", specPath, err)
	}
	if len(c.problems) > 0 {
		t.Fatalf("%s: %d problem(s):\n%s", specPath, len(c.problems), strings.Join(c.problems, "\n"))
	}
	// The walk found the spec's schemas (a walk that finds none passes anything).
	var y struct {
		Components struct {
			Schemas map[string]any `yaml:"schemas"`
		} `yaml:"components"`
	}
	if err := yaml.Unmarshal(raw, &y); err != nil {
		t.Fatal(err)
	}
	if c.schemas < len(y.Components.Schemas) || c.properties == 0 {
		t.Fatalf("checked %d schemas and %d properties; the spec has %d component schemas", c.schemas, c.properties, len(y.Components.Schemas))
	}
	t.Logf("checked %d schemas, %d properties", c.schemas, c.properties)
}

// TestOpenAPISpecChecks: each check finds the accident it is for, on small
// documents, and passes what is right.
func TestOpenAPISpecChecks(t *testing.T) {
	for _, tc := range []struct {
		name string
		yaml string
		want []string // substrings, one per expected problem, in order
	}{
		{
			name: "quoted description with commas",
			yaml: "components:\n  schemas:\n    S:\n      properties:\n        origin: {type: string, description: \"api, ui, cli or system.\"}\n",
		},
		{
			name: "unquoted comma leaves stray schema keys",
			yaml: "components:\n  schemas:\n    S:\n      properties:\n        origin: {type: string, description: api, ui, cli or system.}\n",
			want: []string{
				`key "cli or system." contains white space`,
				`line 5 (/components/schemas/S/properties/origin): "ui" is not a schema keyword`,
				`"cli or system." is not a schema keyword`,
			},
		},
		{
			name: "unquoted comma in a properties flow mapping makes a property",
			yaml: "paths:\n  /x:\n    get:\n      responses:\n        \"200\":\n          content:\n            application/json:\n              schema: {type: object, properties: {n: {type: integer}, Total-Count: {type: integer}}}\n",
			want: []string{`property name "Total-Count" is not an identifier`},
		},
		{
			name: "a schema defined twice",
			yaml: "components:\n  schemas:\n    SandboxProfile: {type: object}\n    Other: {type: string}\n    SandboxProfile: {type: string}\n",
			want: []string{`line 5 (/components/schemas): key "SandboxProfile" is defined twice (first at line 3)`},
		},
		{
			name: "a duplicate key outside schemas",
			yaml: "info:\n  title: a\n  title: b\n",
			want: []string{`key "title" is defined twice`},
		},
		{
			name: "a foreign property name with its reason",
			yaml: "components:\n  schemas:\n    Q:\n      properties:\n        multiSelect: {type: boolean}\n",
		},
		{
			name: "camelCase property name",
			yaml: "components:\n  schemas:\n    Q:\n      properties:\n        sessionId: {type: string}\n",
			want: []string{`property name "sessionId" is not an identifier`},
		},
		{
			name: "nested schemas are checked: items, oneOf, additionalProperties",
			yaml: "components:\n  schemas:\n    S:\n      type: array\n      items:\n        oneOf:\n          - {type: string, descripton: typo}\n          - type: object\n            additionalProperties: {type: string, description: a, b c}\n",
			want: []string{
				`key "b c" contains white space`,
				`(/components/schemas/S/items/oneOf/0): "descripton" is not a schema keyword`,
				`(/components/schemas/S/items/oneOf/1/additionalProperties): "b c" is not a schema keyword`,
			},
		},
		{
			name: "examples are data",
			yaml: "components:\n  schemas:\n    S:\n      type: object\n      example: {Any Key: 1, camelCase: 2}\n",
		},
		{
			name: "extensions are allowed",
			yaml: "components:\n  schemas:\n    S: {type: string, x-internal: true}\n",
		},
		{
			name: "a description that is not a string",
			yaml: "components:\n  schemas:\n    S: {type: string, description: {a: b}}\n",
			want: []string{`description must be a string, not a mapping`},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := specProblems([]byte(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %d problem(s), want %d:\n%s", len(got), len(tc.want), strings.Join(got, "\n"))
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("problem %d = %q, want it to contain %q", i, got[i], w)
				}
			}
		})
	}
}
