package gate

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// Every node write of the gate is a protocol transition: the last argument
// of each patchNode call is a call into package protocol, never an edit
// written inline, so that what a step writes is said once, in
// api/protocol, beside what Read makes of it.
func TestEveryNodeWriteIsAProtocolTransition(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	calls := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			if sel, ok := call.Fun.(*ast.SelectorExpr); !ok || sel.Sel.Name != "patchNode" {
				return true
			}
			calls++
			last := call.Args[len(call.Args)-1]
			if !isProtocolCall(last) {
				t.Errorf("%s: patchNode is given %T, not a protocol transition", fset.Position(last.Pos()), last)
			}
			return true
		})
	}
	if calls == 0 {
		t.Fatal("no patchNode call found: the test looks in the wrong place")
	}
}

func isProtocolCall(e ast.Expr) bool {
	call, ok := e.(*ast.CallExpr)
	if !ok {
		return false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	return ok && pkg.Name == "protocol"
}
