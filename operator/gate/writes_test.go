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
// of each patchNode call is a call into package protocol, or the Write of
// a drain stage's step, which package drainstep sets from a call into
// package protocol each time; never an edit written inline, so that what a
// step writes is said once, in api/protocol, beside what Read makes of it.
func TestEveryNodeWriteIsAProtocolTransition(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var parsed []*ast.File
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		parsed = append(parsed, f)
	}
	calls := 0
	for _, f := range parsed {
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
			if !isProtocolCall(last) && !isStepWrite(last) {
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

// isStepWrite reports whether e is the Write of a drain stage's step.
func isStepWrite(e ast.Expr) bool {
	sel, ok := e.(*ast.SelectorExpr)
	return ok && sel.Sel.Name == "Write"
}

// A step's Write is set only from a call into package protocol, in a
// composite literal or an assignment: in package drainstep, which decides
// it, and in the gate, which could change it before act writes it.
func TestEveryDrainStepWriteIsAProtocolTransition(t *testing.T) {
	var files []string
	for _, pattern := range []string{"drainstep/*.go", "*.go"} {
		more, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, more...)
	}
	fset := token.NewFileSet()
	writes := 0
	check := func(value ast.Expr) {
		writes++
		if !isProtocolCall(value) {
			t.Errorf("%s: a step's Write is given %T, not a protocol transition", fset.Position(value.Pos()), value)
		}
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.KeyValueExpr:
				if key, ok := n.Key.(*ast.Ident); ok && key.Name == "Write" {
					check(n.Value)
				}
			case *ast.AssignStmt:
				for i, lhs := range n.Lhs {
					if isStepWrite(lhs) {
						check(n.Rhs[i])
					}
				}
			}
			return true
		})
	}
	if writes == 0 {
		t.Fatal("no step's Write found: the test looks in the wrong place")
	}
}
