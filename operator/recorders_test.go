package operator

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"testing"

	"github.com/kmaint/kmaint/operator/notify"
)

// Every event recorder the operator makes is one the notifier follows, or
// the one it leaves out on purpose: a controller split out of another
// (aftercare out of the gate) once took the halts' and the lost nodes'
// events out of the notifications without a test noticing.
func TestTheNotifierFollowsEveryRecorder(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "run.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || len(call.Args) != 1 {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if ok && sel.Sel.Name == "GetEventRecorder" {
			// The manager's recorder drops what was recorded just before
			// a stop (package eventrec).
			t.Errorf("%s: an event recorder from the manager, not from the operator's sender", fset.Position(call.Pos()))
		}
		if !ok || sel.Sel.Name != "Recorder" {
			return true
		}
		lit, ok := call.Args[0].(*ast.BasicLit)
		if !ok {
			t.Errorf("%s: Recorder with a name that is not a literal", fset.Position(call.Pos()))
			return true
		}
		name, err := strconv.Unquote(lit.Value)
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
		return true
	})
	if len(names) < 6 {
		t.Fatalf("run.go makes the recorders %v; expected the gate's, aftercare's, ... (is this test reading the right file?)", names)
	}
	for _, name := range names {
		if name != notify.UnfollowedController && !slices.Contains(notify.FollowedControllers(), name) {
			t.Errorf("the operator records events as %s, which the notifier does not follow (notify.FollowedControllers)", name)
		}
	}
}
