package objectcheck

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

// Checker reads the objects of object checks and evaluates them.
type Checker struct {
	// Compiler compiles the expressions; the gate and aftercare share it.
	Compiler *Compiler
	// Reader reads nodes and lists pods: the API server (the manager's API
	// reader), not the cache (see the package documentation).
	Reader client.Reader
}

// Result is what an object check said.
type Result struct {
	// Holds is the expression's value.
	Holds bool
	// Subject says what it was evaluated over, for messages: "node n1",
	// "node n1 and its 3 pods", "the 2 pods in namespace db matching app=db".
	Subject string
}

// Check evaluates an object check: over the named node for the node and
// podsOnNode kinds (which must name one), over the pods it selects for
// pods. Any error is an *Error whose reason says why it cannot be
// evaluated; the check then does not hold.
func (c *Checker) Check(ctx context.Context, oc v1alpha1.ObjectCheck, node string) (Result, error) {
	prog := c.Compiler.Compile(oc.Objects, oc.Expression)
	if err := prog.Err(); err != nil {
		return Result{}, err
	}
	if c.Reader == nil {
		return Result{}, &Error{Reason: v1alpha1.ObjectCheckFailedReason, Msg: "the operator has no reader of objects"}
	}
	var vars Vars
	var subject string
	o := oc.Objects
	if o.PerNode() {
		if node == "" {
			return Result{}, &Error{Reason: v1alpha1.ObjectCheckFailedReason, Msg: "the check reads a node and was given none"}
		}
		n, err := c.getNode(ctx, node)
		if err != nil {
			return Result{}, err
		}
		vars.Node, subject = n, "node "+node
	}
	switch {
	case o.Pods != nil:
		pods, sel, err := c.listPods(ctx, client.InNamespace(o.Pods.Namespace), o.Pods.Selector, "in namespace "+o.Pods.Namespace)
		if err != nil {
			return Result{}, err
		}
		vars.Pods, subject = pods, fmt.Sprintf("the %d pods in namespace %s%s", len(pods), o.Pods.Namespace, sel)
	case o.PodsOnNode != nil:
		pods, _, err := c.listPods(ctx, client.MatchingFields{"spec.nodeName": node}, nil, "on node "+node)
		if err != nil {
			return Result{}, err
		}
		vars.Pods, subject = pods, fmt.Sprintf("node %s and its %d pods", node, len(pods))
	}
	holds, err := prog.Eval(ctx, vars)
	if err != nil {
		return Result{Subject: subject}, err
	}
	return Result{Holds: holds, Subject: subject}, nil
}

// getNode reads the node whole from the API server: the cache holds a
// slimmed Node (its Ready condition alone, no capacity, kmaint's
// annotations only), and a check of a condition the cache left out would
// find it absent, and pass.
func (c *Checker) getNode(ctx context.Context, name string) (*corev1.Node, error) {
	var n corev1.Node
	switch err := c.Reader.Get(ctx, client.ObjectKey{Name: name}, &n); {
	case apierrors.IsForbidden(err):
		return nil, &Error{Reason: v1alpha1.ObjectCheckForbiddenReason,
			Msg: fmt.Sprintf("the operator may not read node %s (its rights are the ones the chart grants it; see config/README.md#security-model)", name), Err: err}
	case err != nil:
		return nil, &Error{Reason: v1alpha1.ObjectCheckFailedReason, Msg: "node " + name + " cannot be read", Err: err}
	}
	n.ManagedFields = nil
	return &n, nil
}

// listPods lists the pods a check reads, at most MaxPods of them: more is
// an error, never a part of them. where says which pods, for messages; sel
// is the selector as a message quotes it.
func (c *Checker) listPods(ctx context.Context, scope client.ListOption, selector *v1alpha1.PodLabelSelector, where string) ([]corev1.Pod, string, error) {
	opts := []client.ListOption{scope, client.Limit(int64(c.Compiler.limits.MaxPods) + 1)}
	var sel string
	if selector != nil {
		s, err := selector.AsSelector()
		if err != nil {
			return nil, "", &Error{Reason: v1alpha1.InvalidObjectCheckReason, Msg: "the pods' selector cannot be parsed", Err: err}
		}
		opts = append(opts, client.MatchingLabelsSelector{Selector: s})
		sel = " matching " + s.String()
	}
	var list corev1.PodList
	switch err := c.Reader.List(ctx, &list, opts...); {
	case apierrors.IsForbidden(err):
		return nil, "", &Error{Reason: v1alpha1.ObjectCheckForbiddenReason,
			Msg: fmt.Sprintf("the operator may not list the pods %s (its rights are the ones the chart grants it; see config/README.md#security-model)", where), Err: err}
	case err != nil:
		return nil, "", &Error{Reason: v1alpha1.ObjectCheckFailedReason, Msg: "the pods " + where + " cannot be listed", Err: err}
	case len(list.Items) > c.Compiler.limits.MaxPods || list.Continue != "":
		return nil, "", &Error{Reason: v1alpha1.ObjectCheckFailedReason,
			Msg: fmt.Sprintf("more than %d pods %s%s: a check reads at most %d", c.Compiler.limits.MaxPods, where, sel, c.Compiler.limits.MaxPods)}
	}
	for i := range list.Items {
		list.Items[i].ManagedFields = nil
	}
	return list.Items, sel, nil
}
