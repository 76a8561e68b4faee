package objectcheck_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/objectcheck"
)

var (
	nodeKind       = v1alpha1.CheckObjects{Node: &v1alpha1.NodeObjects{}}
	podsOnNodeKind = v1alpha1.CheckObjects{PodsOnNode: &v1alpha1.PodsOnNodeObjects{}}
	podsKind       = v1alpha1.CheckObjects{Pods: &v1alpha1.PodObjects{Namespace: "db"}}
)

func pod(name, phase string) corev1.Pod {
	return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "db", Labels: map[string]string{"app": "db"}},
		Status: corev1.PodStatus{Phase: corev1.PodPhase(phase)}}
}

// Every outcome of an expression: true and false, and each way it cannot
// say either, with the reason a condition reports. An error is never a
// value: Eval returns false with it.
func TestCompileAndEval(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"zone": "a"}},
		Spec: corev1.NodeSpec{Unschedulable: true},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeReady, Status: corev1.ConditionTrue}, {Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse}}}}
	cases := map[string]struct {
		objects v1alpha1.CheckObjects
		expr    string
		vars    objectcheck.Vars
		limits  objectcheck.Limits
		// want is the expression's value when wantReason is empty.
		want bool
		// wantReason is the reason of the error, empty for none;
		// wantCompileErr says it comes at compile time.
		wantReason     string
		wantCompileErr bool
		// wantMessage is a substring of the error.
		wantMessage string
	}{
		"a node's condition holds": {
			objects: nodeKind, vars: objectcheck.Vars{Node: node},
			expr: `!node.status.conditions.exists(c, c.type == 'DiskPressure' && c.status == 'True')`, want: true,
		},
		"a node's label is false": {
			objects: nodeKind, vars: objectcheck.Vars{Node: node}, expr: `node.metadata.labels.zone == 'b'`, want: false,
		},
		"Kubernetes' libraries are there": {
			objects: nodeKind, vars: objectcheck.Vars{Node: node}, expr: `node.metadata.name.matches('^n[0-9]+$') && quantity('1Gi').isGreaterThan(quantity('1Mi'))`, want: true,
		},
		"pods on a node": {
			objects: podsOnNodeKind, vars: objectcheck.Vars{Node: node, Pods: []corev1.Pod{pod("a", "Running"), pod("b", "Pending")}},
			expr: `node.spec.unschedulable && pods.all(p, p.status.phase == 'Running')`, want: false,
		},
		"pods of a namespace": {
			objects: podsKind, vars: objectcheck.Vars{Pods: []corev1.Pod{pod("a", "Running"), pod("b", "Running")}},
			expr: `pods.filter(p, p.status.phase == 'Running').size() >= 2`, want: true,
		},
		"a syntax error": {
			objects: nodeKind, expr: `node.metadata.name ==`, wantReason: v1alpha1.InvalidObjectCheckReason, wantCompileErr: true, wantMessage: "does not compile",
		},
		"a variable the kind does not have": {
			objects: podsKind, expr: `node.metadata.name == 'n1'`, wantReason: v1alpha1.InvalidObjectCheckReason, wantCompileErr: true, wantMessage: "undeclared reference",
		},
		"not a bool": {
			objects: podsKind, expr: `pods.size()`, wantReason: v1alpha1.InvalidObjectCheckReason, wantCompileErr: true, wantMessage: "not a bool",
		},
		"an estimated cost past the limit": {
			objects: podsKind, expr: `pods.all(a, pods.all(b, pods.all(c, a.metadata.name != c.metadata.name)))`,
			wantReason: v1alpha1.ObjectCheckCostExceededReason, wantCompileErr: true, wantMessage: "more than the limit",
		},
		"a runtime cost past the limit": {
			objects: podsKind, limits: objectcheck.Limits{Runtime: 10},
			vars: objectcheck.Vars{Pods: []corev1.Pod{pod("a", "Running"), pod("b", "Running"), pod("c", "Running"), pod("d", "Running")}},
			expr: `pods.all(p, p.status.phase == 'Running')`, wantReason: v1alpha1.ObjectCheckCostExceededReason, wantMessage: "cost limit",
		},
		"a field that is absent": {
			objects: nodeKind, vars: objectcheck.Vars{Node: node}, expr: `node.metadata.labels.missing == 'x'`,
			wantReason: v1alpha1.ObjectCheckFailedReason, wantMessage: "no such key",
		},
		"a dynamic value that is not a bool": {
			objects: nodeKind, vars: objectcheck.Vars{Node: node}, expr: `node.metadata.name`,
			wantReason: v1alpha1.InvalidObjectCheckReason, wantMessage: "not a bool",
		},
		"no node given": {
			objects: nodeKind, expr: `node.metadata.name == 'n1'`, wantReason: v1alpha1.ObjectCheckFailedReason, wantMessage: "given none",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, err := objectcheck.NewCompiler(tc.limits)
			if err != nil {
				t.Fatal(err)
			}
			prog := c.Compile(tc.objects, tc.expr)
			if cerr := prog.Err(); (cerr != nil) != tc.wantCompileErr {
				t.Fatalf("compile error %v, want one: %v", cerr, tc.wantCompileErr)
			}
			got, err := prog.Eval(context.Background(), tc.vars)
			if tc.wantReason == "" {
				if err != nil || got != tc.want {
					t.Fatalf("Eval = %v, %v; want %v", got, err, tc.want)
				}
				return
			}
			var oe *objectcheck.Error
			if !errors.As(err, &oe) {
				t.Fatalf("Eval = %v, %v; want an *objectcheck.Error", got, err)
			}
			if got {
				t.Errorf("an error came with true: an expression that cannot be evaluated must never pass")
			}
			if oe.Reason != tc.wantReason || objectcheck.ReasonOf(err) != tc.wantReason {
				t.Errorf("reason %s, want %s (%v)", oe.Reason, tc.wantReason, err)
			}
			if !strings.Contains(err.Error(), tc.wantMessage) {
				t.Errorf("error %q does not say %q", err, tc.wantMessage)
			}
		})
	}
}

// A check is compiled once per kind and text, whatever pool or generation
// asks: the same program comes back.
func TestCompileOnce(t *testing.T) {
	c, err := objectcheck.NewCompiler(objectcheck.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	a := c.Compile(nodeKind, `has(node.spec.unschedulable)`)
	if a != c.Compile(nodeKind, `has(node.spec.unschedulable)`) {
		t.Errorf("the same check was compiled twice")
	}
	if a == c.Compile(podsOnNodeKind, `has(node.spec.unschedulable)`) {
		t.Errorf("another kind shares the program of the node kind")
	}
}

// The examples of the READMEs (operator/policy, operator/gate) compile,
// within the cost limit, and say what they mean of a node and its pods.
func TestReadmeExamples(t *testing.T) {
	c, err := objectcheck.NewCompiler(objectcheck.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	ready := func(p corev1.Pod) corev1.Pod {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		return p
	}
	batch := pod("batch", "Running")
	batch.Labels["tier"] = "batch"
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
		{Type: corev1.NodeDiskPressure, Status: corev1.ConditionTrue}}}}
	cases := []struct {
		objects v1alpha1.CheckObjects
		expr    string
		vars    objectcheck.Vars
		want    bool
	}{
		{nodeKind, `!node.status.conditions.exists(c, c.type == 'DiskPressure' && c.status == 'True')`, objectcheck.Vars{Node: node}, false},
		{podsOnNodeKind, `!pods.exists(p, has(p.metadata.labels) && p.metadata.labels.?tier.orValue('') == 'batch' && p.status.phase == 'Running')`,
			objectcheck.Vars{Node: node, Pods: []corev1.Pod{pod("a", "Running"), batch}}, false},
		{podsKind, `pods.filter(p, p.status.?conditions.orValue([]).exists(c, c.type == 'Ready' && c.status == 'True')).size() >= 3`,
			objectcheck.Vars{Pods: []corev1.Pod{ready(pod("a", "Running")), ready(pod("b", "Running")), ready(pod("c", "Running")), pod("d", "Pending")}}, true},
		{nodeKind, `!node.status.conditions.exists(c, c.type in ['DiskPressure', 'MemoryPressure', 'PIDPressure'] && c.status == 'True')`, objectcheck.Vars{Node: node}, false},
		{podsOnNodeKind, `pods.all(p, p.status.phase in ['Running', 'Succeeded'])`, objectcheck.Vars{Node: node, Pods: []corev1.Pod{pod("a", "Running")}}, true},
		// operator/gate/README.md's control-plane pool: its etcd and API
		// server Ready, other pods whatever they are.
		{podsOnNodeKind, controlPlaneReady, objectcheck.Vars{Node: node, Pods: []corev1.Pod{controlPlanePod("etcd", true), controlPlanePod("kube-apiserver", true), pod("a", "Pending")}}, true},
		{podsOnNodeKind, controlPlaneReady, objectcheck.Vars{Node: node, Pods: []corev1.Pod{controlPlanePod("etcd", false), controlPlanePod("kube-apiserver", true)}}, false},
	}
	for _, tc := range cases {
		got, err := c.Compile(tc.objects, tc.expr).Eval(context.Background(), tc.vars)
		if err != nil || got != tc.want {
			t.Errorf("%s = %v, %v; want %v", tc.expr, got, err, tc.want)
		}
	}
}

// controlPlaneReady is the health check of operator/gate/README.md's
// control-plane pool.
const controlPlaneReady = `pods.filter(p, p.metadata.namespace == 'kube-system' &&
  has(p.metadata.labels) && 'component' in p.metadata.labels &&
  p.metadata.labels['component'] in ['etcd', 'kube-apiserver']).all(p,
  has(p.status.conditions) &&
  p.status.conditions.exists(c, c.type == 'Ready' && c.status == 'True'))`

func controlPlanePod(component string, ready bool) corev1.Pod {
	p := pod(component, "Running")
	p.Namespace = "kube-system"
	p.Labels["component"] = component
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
	return p
}
