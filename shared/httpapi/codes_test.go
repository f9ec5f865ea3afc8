package httpapi_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// serverErrorCodes finds every error code the server can send by reading
// the Go source of the packages under shared/ (tests and the client
// excluded): the Code of a ConflictError, requestError or ErrorDetail
// literal, the first argument of badRequest, and a literal assigned to a
// variable named code in this package (the router's fallback answers).
// where maps each code to one place it appears.
func serverErrorCodes(t *testing.T) map[string]string {
	t.Helper()
	where := map[string]string{}
	fset := token.NewFileSet()
	root := filepath.Join("..")
	add := func(lit ast.Expr, pos token.Pos) {
		bl, ok := lit.(*ast.BasicLit)
		if !ok || bl.Kind != token.STRING {
			return
		}
		v, err := strconv.Unquote(bl.Value)
		if err != nil || v == "" {
			return
		}
		if _, seen := where[v]; !seen {
			where[v] = fset.Position(pos).String()
		}
	}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); name == "apiclient" || name == "testdata" || name == "ui" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		inAPI := filepath.Base(filepath.Dir(path)) == "httpapi"
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CompositeLit:
				name := ""
				switch ty := n.Type.(type) {
				case *ast.Ident:
					name = ty.Name
				case *ast.SelectorExpr:
					name = ty.Sel.Name
				}
				if name != "ConflictError" && name != "requestError" && name != "ErrorDetail" {
					return true
				}
				for _, el := range n.Elts {
					if kv, ok := el.(*ast.KeyValueExpr); ok {
						if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "Code" {
							add(kv.Value, kv.Pos())
						}
					}
				}
			case *ast.CallExpr:
				if id, ok := n.Fun.(*ast.Ident); ok && id.Name == "badRequest" && len(n.Args) > 0 {
					add(n.Args[0], n.Pos())
				}
			case *ast.AssignStmt:
				if !inAPI {
					return true
				}
				for i, lhs := range n.Lhs {
					if id, ok := lhs.(*ast.Ident); ok && id.Name == "code" && i < len(n.Rhs) {
						add(n.Rhs[i], n.Pos())
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return where
}

// TestErrorCodesMatchTheOpenAPI (issue 11, point 6): the error codes the
// OpenAPI document lists (components/schemas/Error, error.code enum) are
// exactly the codes the server's source can send: a code the server sends
// but the document lacks fails, and so does a documented code nothing sends.
func TestErrorCodesMatchTheOpenAPI(t *testing.T) {
	o := loadOpenAPI(t)
	schemas := o.doc["components"].(map[string]any)["schemas"].(map[string]any)
	code := schemas["Error"].(map[string]any)["properties"].(map[string]any)["error"].(map[string]any)["properties"].(map[string]any)["code"].(map[string]any)
	enum, _ := code["enum"].([]any)
	if len(enum) == 0 {
		t.Fatal("openapi: components/schemas/Error error.code has no enum of codes")
	}
	documented := map[string]bool{}
	for _, c := range enum {
		documented[c.(string)] = true
	}
	sent := serverErrorCodes(t)
	if len(sent) < 10 {
		t.Fatalf("found only %d codes in the source; the scan is broken: %v", len(sent), sent)
	}
	var undocumented, unsent []string
	for c, at := range sent {
		if !documented[c] {
			undocumented = append(undocumented, c+" ("+at+")")
		}
	}
	for c := range documented {
		if _, ok := sent[c]; !ok {
			unsent = append(unsent, c)
		}
	}
	sort.Strings(undocumented)
	sort.Strings(unsent)
	if len(undocumented) > 0 {
		t.Errorf("codes the server sends that api/openapi.yaml does not list: %s", strings.Join(undocumented, ", "))
	}
	if len(unsent) > 0 {
		t.Errorf("codes api/openapi.yaml lists that the server never sends: %s", strings.Join(unsent, ", "))
	}
}
