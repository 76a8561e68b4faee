package objectcheck

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/interpreter"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

// Vars are the objects an expression is evaluated over: Node for the node
// and podsOnNode kinds, Pods for podsOnNode and pods.
type Vars struct {
	Node *corev1.Node
	Pods []corev1.Pod
}

// Eval evaluates the program over vars. It returns the expression's value,
// or an *Error: whatever keeps it from being true or false.
func (p *Program) Eval(ctx context.Context, vars Vars) (bool, error) {
	if p.err != nil {
		return false, p.err
	}
	act := map[string]any{}
	if p.kind != kindPods {
		if vars.Node == nil {
			return false, &Error{Reason: v1alpha1.ObjectCheckFailedReason, Msg: "the check reads a node and was given none"}
		}
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(vars.Node)
		if err != nil {
			return false, &Error{Reason: v1alpha1.ObjectCheckFailedReason, Msg: "node " + vars.Node.Name + " cannot be read as an object", Err: err}
		}
		act[NodeVar] = m
	}
	if p.kind != kindNode {
		pods := make([]any, 0, len(vars.Pods))
		for i := range vars.Pods {
			m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&vars.Pods[i])
			if err != nil {
				return false, &Error{Reason: v1alpha1.ObjectCheckFailedReason, Msg: "pod " + vars.Pods[i].Namespace + "/" + vars.Pods[i].Name + " cannot be read as an object", Err: err}
			}
			pods = append(pods, m)
		}
		act[PodsVar] = pods
	}
	out, _, err := p.prog.ContextEval(ctx, act)
	var cancelled interpreter.EvalCancelledError
	switch {
	case errors.As(err, &cancelled) && cancelled.Cause == interpreter.CostLimitExceeded:
		return false, &Error{Reason: v1alpha1.ObjectCheckCostExceededReason, Msg: "the expression ran past its cost limit", Err: err}
	case err != nil:
		return false, &Error{Reason: v1alpha1.ObjectCheckFailedReason, Msg: "the expression failed", Err: err}
	}
	b, ok := out.(types.Bool)
	if !ok {
		return false, &Error{Reason: v1alpha1.InvalidObjectCheckReason, Msg: fmt.Sprintf("the expression returned a %s, not a bool", out.Type())}
	}
	return bool(b), nil
}
