package internal_test

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestOneDefinition: slipway's labels, the Deployment TypeMeta and the default rollout limit
// are written once (issue 13), so a change of one cannot miss a copy.
func TestOneDefinition(t *testing.T) {
	counts := map[string][]string{}
	otherDefaults := map[ast.Expr]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if n == nil {
				return false
			}
			at := fset.Position(n.Pos()).String()
			switch n := n.(type) {
			case *ast.BasicLit:
				if s, err := strconv.Unquote(n.Value); err == nil && n.Kind == token.STRING {
					counts[s] = append(counts[s], at)
				}
			case *ast.CompositeLit:
				var b bytes.Buffer
				_ = printer.Fprint(&b, fset, n)
				if s := b.String(); strings.HasPrefix(s, "metav1.TypeMeta{") && strings.Contains(s, `Kind: "Deployment"`) {
					counts["Deployment TypeMeta"] = append(counts["Deployment TypeMeta"], at)
				}
			case *ast.ValueSpec:
				// Another default that happens to be five minutes (publish's address timeout)
				// is not the rollout limit written again.
				for i, v := range n.Values {
					if i < len(n.Names) && n.Names[i].Name != "DefaultRolloutTimeout" {
						otherDefaults[v] = true
					}
				}
			case *ast.BinaryExpr:
				var b bytes.Buffer
				_ = printer.Fprint(&b, fset, n)
				if b.String() == "5 * time.Minute" && !otherDefaults[n] {
					counts["the default rollout limit (5 * time.Minute)"] = append(counts["the default rollout limit (5 * time.Minute)"], at)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, what := range []string{
		"slipway.dev/group", "slipway.dev/node", "slipway.dev/role", "app.kubernetes.io/managed-by", "app.kubernetes.io/name",
		"Deployment TypeMeta", "the default rollout limit (5 * time.Minute)",
	} {
		t.Run(what, func(t *testing.T) {
			if len(counts[what]) != 1 {
				t.Errorf("%s is written %d times, want once: %v", what, len(counts[what]), counts[what])
			}
		})
	}
}
