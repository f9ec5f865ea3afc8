package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"

	"github.com/openprogram/lifecycle/shared/httpapi"
)

// specPath is the OpenAPI description of the API, relative to this package.
var specPath = filepath.Join("..", "..", "api", "openapi.yaml")

const specURL = "file:///openapi.json"

// openAPI validates recorded responses against api/openapi.yaml: the
// status must be documented for the operation, and a JSON body must match
// the documented schema (JSON Schema 2020-12, the dialect of OpenAPI 3.1,
// with formats asserted).
type openAPI struct {
	doc      map[string]any
	compiler *jsonschema.Compiler
	paths    []pathTemplate
	mu       sync.Mutex
	compiled map[string]*jsonschema.Schema
}

type pathTemplate struct {
	template string
	re       *regexp.Regexp
}

var (
	specOnce sync.Once
	spec     *openAPI
	specErr  error
)

func loadOpenAPI(t testing.TB) *openAPI {
	t.Helper()
	specOnce.Do(func() { spec, specErr = parseOpenAPI(specPath) })
	if specErr != nil {
		t.Fatalf("load %s: %v", specPath, specErr)
	}
	return spec
}

func parseOpenAPI(path string) (*openAPI, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var y any
	if err := yaml.Unmarshal(raw, &y); err != nil {
		return nil, err
	}
	js, err := json.Marshal(y)
	if err != nil {
		return nil, err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(js))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource(specURL, doc); err != nil {
		return nil, err
	}
	o := &openAPI{doc: doc.(map[string]any), compiler: c, compiled: map[string]*jsonschema.Schema{}}
	if v, _ := o.doc["openapi"].(string); !strings.HasPrefix(v, "3.1.") {
		return nil, fmt.Errorf("openapi version %q, want 3.1.x", v)
	}
	paths, _ := o.doc["paths"].(map[string]any)
	for tpl := range paths {
		re := regexp.MustCompile("^" + regexp.MustCompile(`\\\{[a-z_]+\\\}`).ReplaceAllString(regexp.QuoteMeta(tpl), `[^/]+`) + "$")
		o.paths = append(o.paths, pathTemplate{template: tpl, re: re})
	}
	return o, nil
}

func pointerEscape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func (o *openAPI) schema(ptr string) (*jsonschema.Schema, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if s, ok := o.compiled[ptr]; ok {
		return s, nil
	}
	s, err := o.compiler.Compile(specURL + "#" + ptr)
	if err != nil {
		return nil, err
	}
	o.compiled[ptr] = s
	return s, nil
}

func (o *openAPI) operation(method, path string) (tpl string, op map[string]any) {
	for _, p := range o.paths {
		if p.re.MatchString(path) {
			item := o.doc["paths"].(map[string]any)[p.template].(map[string]any)
			if op, ok := item[strings.ToLower(method)].(map[string]any); ok {
				return p.template, op
			}
		}
	}
	return "", nil
}

// check fails the test when the response is not what the spec documents.
func (o *openAPI) check(t testing.TB, method, path string, r resp) {
	t.Helper()
	tpl, op := o.operation(method, path)
	if op == nil {
		if r.status == 404 || r.status == 405 {
			o.checkError(t, method, path, r)
			return
		}
		t.Fatalf("openapi: %s %s is not documented (status %d)", method, path, r.status)
	}
	code := strconv.Itoa(r.status)
	responses := op["responses"].(map[string]any)
	if _, ok := responses[code]; !ok {
		t.Fatalf("openapi: %s %s: status %s is not documented (body %s)", method, tpl, code, r.body)
	}
	mt := r.header.Get("Content-Type")
	if i := strings.IndexByte(mt, ';'); i >= 0 {
		mt = mt[:i]
	}
	base := "/paths/" + pointerEscape(tpl) + "/" + strings.ToLower(method) + "/responses/" + code
	resolved := o.resolve(responses[code].(map[string]any))
	content, _ := resolved["content"].(map[string]any)
	if _, ok := content[mt]; !ok {
		t.Fatalf("openapi: %s %s %s: content type %q is not documented", method, tpl, code, mt)
	}
	if mt != "application/json" {
		return
	}
	ptr := base + "/content/application~1json/schema"
	if ref, ok := responses[code].(map[string]any)["$ref"].(string); ok {
		ptr = strings.TrimPrefix(ref, "#") + "/content/application~1json/schema"
	}
	o.validate(t, method+" "+tpl+" "+code, ptr, r.body)
}

func (o *openAPI) checkError(t testing.TB, method, path string, r resp) {
	t.Helper()
	o.validate(t, method+" "+path, "/components/schemas/Error", r.body)
}

func (o *openAPI) validate(t testing.TB, what, ptr string, body []byte) {
	t.Helper()
	s, err := o.schema(ptr)
	if err != nil {
		t.Fatalf("openapi: %s: compile %s: %v", what, ptr, err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("openapi: %s: body is not JSON: %v: %s", what, err, body)
	}
	if err := s.Validate(v); err != nil {
		t.Fatalf("openapi: %s: response does not match %s:\n%v\nbody: %s", what, ptr, err, body)
	}
}

// resolve follows a response object's $ref (#/components/responses/...).
func (o *openAPI) resolve(obj map[string]any) map[string]any {
	ref, ok := obj["$ref"].(string)
	if !ok {
		return obj
	}
	var cur any = o.doc
	for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
		part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
		cur = cur.(map[string]any)[part]
	}
	return cur.(map[string]any)
}

// TestOpenAPIDescribesEveryRoute: the spec and the handler's route table
// list the same operations.
func TestOpenAPIDescribesEveryRoute(t *testing.T) {
	o := loadOpenAPI(t)
	var inSpec []string
	for tpl, item := range o.doc["paths"].(map[string]any) {
		for m := range item.(map[string]any) {
			switch m {
			case "get", "put", "post", "delete", "patch":
				inSpec = append(inSpec, strings.ToUpper(m)+" "+tpl)
			}
		}
	}
	inCode := append(httpapi.Routes(), "GET /healthz", "POST /mcp") // /mcp: package mcpgateway
	sort.Strings(inSpec)
	sort.Strings(inCode)
	for _, r := range inSpec {
		if !slices.Contains(inCode, r) {
			t.Errorf("%s is in api/openapi.yaml but the server's route table (gate.go) does not serve it", r)
		}
	}
	for _, r := range inCode {
		if !slices.Contains(inSpec, r) {
			t.Errorf("%s is served (gate.go) but api/openapi.yaml does not describe it", r)
		}
	}
	// Every schema in components compiles.
	for name := range o.doc["components"].(map[string]any)["schemas"].(map[string]any) {
		if _, err := o.schema("/components/schemas/" + name); err != nil {
			t.Errorf("schema %s: %v", name, err)
		}
	}
}

// TestOpenAPIDocumentIsValid validates api/openapi.yaml against the
// OpenAPI 3.1 specification's own JSON Schema (testdata).
func TestOpenAPIDocumentIsValid(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "oas-3.1-schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	meta, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("https://spec.openapis.org/oas/3.1/schema/2021-04-15", meta); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("https://spec.openapis.org/oas/3.1/schema/2021-04-15")
	if err != nil {
		t.Fatal(err)
	}
	doc := loadOpenAPI(t).doc
	if err := s.Validate(any(doc)); err != nil {
		t.Fatalf("api/openapi.yaml is not a valid OpenAPI 3.1 document:\n%v", err)
	}
}
