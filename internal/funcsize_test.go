package internal_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// maxFuncLines is the longest a function of a non-test Go file of internal/ may be (issue 45),
// counted from its func line to its closing brace: a longer one does more than one thing and
// is split. A function that only returns (or assigns) one composite literal is a table of
// data, which may be as long as its rows.
const maxFuncLines = 80

// TestFuncLengths: no function of a non-test Go file of internal/ is over maxFuncLines lines,
// a table of data aside. There is no allow-list: the last functions over the limit were split
// (issue 45), so a long one is split rather than excused.
func TestFuncLengths(t *testing.T) {
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil || isTable(fn.Body) {
				continue
			}
			n := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
			if n > maxFuncLines {
				t.Errorf("internal/%s:%d: %s: %d lines, over %d: split it", path, fset.Position(fn.Pos()).Line, funcName(fn), n, maxFuncLines)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// funcName is fn's name, Type.Name for a method.
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	typ := fn.Recv.List[0].Type
	for {
		switch x := typ.(type) {
		case *ast.StarExpr:
			typ = x.X
			continue
		case *ast.IndexExpr:
			typ = x.X
			continue
		case *ast.IndexListExpr:
			typ = x.X
			continue
		case *ast.Ident:
			return x.Name + "." + fn.Name.Name
		}
		return fn.Name.Name
	}
}

// isTable reports whether body only returns or assigns one composite literal: data, not logic.
func isTable(body *ast.BlockStmt) bool {
	if len(body.List) != 1 {
		return false
	}
	var exprs []ast.Expr
	switch s := body.List[0].(type) {
	case *ast.ReturnStmt:
		exprs = s.Results
	case *ast.AssignStmt:
		exprs = s.Rhs
	}
	if len(exprs) != 1 {
		return false
	}
	e := exprs[0]
	if u, ok := e.(*ast.UnaryExpr); ok && u.Op == token.AND {
		e = u.X
	}
	_, ok := e.(*ast.CompositeLit)
	return ok
}
