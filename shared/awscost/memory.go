package awscost

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
)

// FunctionMemory reads the memory each Lambda function is deployed with
// from the CDK stack's source (infra/stack/functions.go): the memoryMB of
// every entry of functionSpecs, keyed by the function's name (the Fn
// constants' values). Reading the source keeps the CDK module out of this
// module's build and leaves one place where the number is written.
func FunctionMemory(path string) (map[string]float64, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, 0)
	if err != nil {
		return nil, fmt.Errorf("read function memory: %w", err)
	}
	consts := map[string]string{} // FnAuthorize -> "authorize"
	var specs *ast.CompositeLit
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok {
			continue
		}
		for _, s := range g.Specs {
			v, ok := s.(*ast.ValueSpec)
			if !ok {
				continue
			}
			for i, n := range v.Names {
				if i >= len(v.Values) {
					continue
				}
				switch val := v.Values[i].(type) {
				case *ast.BasicLit:
					if g.Tok == token.CONST && val.Kind == token.STRING {
						consts[n.Name], _ = strconv.Unquote(val.Value)
					}
				case *ast.CompositeLit:
					if n.Name == "functionSpecs" {
						specs = val
					}
				}
			}
		}
	}
	if specs == nil {
		return nil, fmt.Errorf("read function memory: %s has no functionSpecs", path)
	}
	out := map[string]float64{}
	for _, e := range specs.Elts {
		kv, ok := e.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		key, ok := kv.Key.(*ast.Ident)
		if !ok {
			return nil, fmt.Errorf("read function memory: %s: a functionSpecs key is not a constant", fset.Position(kv.Pos()))
		}
		name, ok := consts[key.Name]
		if !ok {
			return nil, fmt.Errorf("read function memory: %s: %s is not a string constant of the file", fset.Position(kv.Pos()), key.Name)
		}
		lit, ok := kv.Value.(*ast.CompositeLit)
		if !ok {
			continue
		}
		for _, fe := range lit.Elts {
			fkv, ok := fe.(*ast.KeyValueExpr)
			if !ok {
				continue
			}
			if id, ok := fkv.Key.(*ast.Ident); ok && id.Name == "memoryMB" {
				bl, ok := fkv.Value.(*ast.BasicLit)
				if !ok {
					return nil, fmt.Errorf("read function memory: %s: memoryMB of %s is not a number literal", fset.Position(fkv.Pos()), name)
				}
				mb, err := strconv.ParseFloat(strings.ReplaceAll(bl.Value, "_", ""), 64)
				if err != nil || mb <= 0 {
					return nil, fmt.Errorf("read function memory: %s: memoryMB of %s is %s", fset.Position(fkv.Pos()), name, bl.Value)
				}
				out[name] = mb
			}
		}
		if _, ok := out[name]; !ok {
			return nil, fmt.Errorf("read function memory: %s: %s has no memoryMB", fset.Position(kv.Pos()), name)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("read function memory: %s: functionSpecs is empty", path)
	}
	return out, nil
}
