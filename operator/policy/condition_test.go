package policy

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

func conditionNode(pool string, conditions ...corev1.NodeCondition) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{"pool": pool}},
		Status: corev1.NodeStatus{Conditions: conditions}}
}

func nodeCondition(typ string, s corev1.ConditionStatus, transition, heartbeat int64) corev1.NodeCondition {
	return corev1.NodeCondition{Type: corev1.NodeConditionType(typ), Status: s, Reason: "R" + string(s), Message: "m",
		LastTransitionTime: metav1.NewTime(time.Unix(transition, 0)), LastHeartbeatTime: metav1.NewTime(time.Unix(heartbeat, 0))}
}

// A heartbeat changes no condition's type, status or transition, and is
// dropped before any policy is looked up; a change of status, transition
// or labels passes.
func TestConditionsChanged(t *testing.T) {
	kd := func(s corev1.ConditionStatus, transition, heartbeat int64) corev1.NodeCondition {
		return nodeCondition("KernelDeadlock", s, transition, heartbeat)
	}
	ready := nodeCondition("Ready", corev1.ConditionTrue, 1, 1)
	base := conditionNode("a", ready, kd(corev1.ConditionFalse, 10, 10))
	for name, tc := range map[string]struct {
		updated *corev1.Node
		// want is whether the update passes.
		want bool
	}{
		"heartbeat":                {updated: conditionNode("a", nodeCondition("Ready", corev1.ConditionTrue, 1, 99), kd(corev1.ConditionFalse, 10, 99))},
		"message and reason":       {updated: conditionNode("a", ready, corev1.NodeCondition{Type: "KernelDeadlock", Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(time.Unix(10, 0)), Message: "other"})},
		"status":                   {updated: conditionNode("a", ready, kd(corev1.ConditionTrue, 20, 20)), want: true},
		"transition alone":         {updated: conditionNode("a", ready, kd(corev1.ConditionFalse, 20, 20)), want: true},
		"a condition added":        {updated: conditionNode("a", ready, kd(corev1.ConditionFalse, 10, 10), nodeCondition("Other", corev1.ConditionTrue, 5, 5)), want: true},
		"a condition removed":      {updated: conditionNode("a", ready), want: true},
		"labels":                   {updated: conditionNode("b", ready, kd(corev1.ConditionFalse, 10, 10)), want: true},
		"same, another resVersion": {updated: base.DeepCopy()},
	} {
		t.Run(name, func(t *testing.T) {
			if got := conditionsChanged().Update(event.UpdateEvent{ObjectOld: base, ObjectNew: tc.updated}); got != tc.want {
				t.Errorf("passes %v, want %v", got, tc.want)
			}
		})
	}
}

// A node's change wakes the node condition policies it can move, and no
// other.
func TestConditionWakes(t *testing.T) {
	policy := func(change func(*v1alpha1.RebootPolicy)) *v1alpha1.RebootPolicy {
		p := &v1alpha1.RebootPolicy{Spec: v1alpha1.RebootPolicySpec{
			NodeSelector:  &metav1.LabelSelector{MatchLabels: map[string]string{"pool": "a"}},
			NodeCondition: &v1alpha1.NodeConditionTrigger{Type: "KernelDeadlock"}}}
		if change != nil {
			change(p)
		}
		return p
	}
	kd := func(s corev1.ConditionStatus, transition int64) corev1.NodeCondition {
		return nodeCondition("KernelDeadlock", s, transition, transition)
	}
	other := nodeCondition("ReadonlyFilesystem", corev1.ConditionTrue, 5, 5)
	cleared := conditionNode("a", kd(corev1.ConditionFalse, 10))
	set := conditionNode("a", kd(corev1.ConditionTrue, 20))
	for name, tc := range map[string]struct {
		policy       *v1alpha1.RebootPolicy
		old, updated *corev1.Node
		// want is whether the policy is woken.
		want bool
	}{
		"set":                             {policy: policy(nil), old: cleared, updated: set, want: true},
		"cleared":                         {policy: policy(nil), old: set, updated: cleared, want: true},
		"another type changed":            {policy: policy(nil), old: cleared, updated: conditionNode("a", kd(corev1.ConditionFalse, 10), other)},
		"transition rewritten":            {policy: policy(nil), old: set, updated: conditionNode("a", kd(corev1.ConditionTrue, 30)), want: true},
		"created with the condition":      {policy: policy(nil), updated: set, want: true},
		"created without it":              {policy: policy(nil), updated: conditionNode("a", other)},
		"deleted with the condition":      {policy: policy(nil), old: set, want: true},
		"set outside the selection":       {policy: policy(nil), old: conditionNode("b", kd(corev1.ConditionFalse, 10)), updated: conditionNode("b", kd(corev1.ConditionTrue, 20))},
		"moved into the selection, set":   {policy: policy(nil), old: conditionNode("b", kd(corev1.ConditionTrue, 20)), updated: set, want: true},
		"moved out of the selection, set": {policy: policy(nil), old: set, updated: conditionNode("b", kd(corev1.ConditionTrue, 20)), want: true},
		"moved in without the condition":  {policy: policy(nil), old: conditionNode("b", other), updated: conditionNode("a", other)},
		"suspended":                       {policy: policy(func(p *v1alpha1.RebootPolicy) { p.Spec.Suspend = true }), old: cleared, updated: set},
		"another trigger": {policy: policy(func(p *v1alpha1.RebootPolicy) {
			p.Spec.NodeCondition, p.Spec.Alert = nil, &v1alpha1.AlertTrigger{AlertName: "A"}
		}), old: cleared, updated: set},
		"policy of another type": {policy: policy(func(p *v1alpha1.RebootPolicy) { p.Spec.NodeCondition.Type = "ReadonlyFilesystem" }), old: cleared, updated: set},
		"a selector that cannot be read": {policy: policy(func(p *v1alpha1.RebootPolicy) {
			p.Spec.NodeSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "pool", Operator: "Near"}}}
		}), old: cleared, updated: set, want: true},
	} {
		t.Run(name, func(t *testing.T) {
			if got := conditionWakes(tc.policy, tc.old, tc.updated); got != tc.want {
				t.Errorf("wakes %v, want %v", got, tc.want)
			}
		})
	}
}
