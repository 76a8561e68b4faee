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
// of each patchNode call is a call into package protocol, or a call to a
// function of the gate each of whose returns is one (the drain stage's
// transition), never an edit written inline, so that what a step writes
// is said once, in api/protocol, beside what Read makes of it.
func TestEveryNodeWriteIsAProtocolTransition(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var parsed []*ast.File
	funcs := map[string]*ast.FuncDecl{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		parsed = append(parsed, f)
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok {
				funcs[fn.Name.Name] = fn
			}
		}
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
			if !isProtocolCall(last) && !returnsProtocolCalls(t, fset, funcs, last) {
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

// returnsProtocolCalls reports whether e calls a function of the gate that
// returns a protocol call at each of its returns, and says where one does
// not.
func returnsProtocolCalls(t *testing.T, fset *token.FileSet, funcs map[string]*ast.FuncDecl, e ast.Expr) bool {
	call, ok := e.(*ast.CallExpr)
	if !ok {
		return false
	}
	var name string
	switch fun := call.Fun.(type) {
	case *ast.Ident:
		name = fun.Name
	case *ast.SelectorExpr:
		name = fun.Sel.Name
	}
	fn := funcs[name]
	if fn == nil || fn.Body == nil {
		return false
	}
	returns := 0
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		if _, ok := n.(*ast.FuncLit); ok {
			return false
		}
		ret, ok := n.(*ast.ReturnStmt)
		if !ok {
			return true
		}
		returns++
		if len(ret.Results) != 1 || !isProtocolCall(ret.Results[0]) {
			t.Errorf("%s: %s returns what is not a protocol transition", fset.Position(ret.Pos()), name)
		}
		return true
	})
	return returns > 0
}
