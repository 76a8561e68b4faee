package unreadable_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	plugin "github.com/kmaint/kmaint/cmd/kubectl-kmaint/cmd"
	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/harness"
	"github.com/kmaint/kmaint/test/testbed"
)

const timeout = 90 * time.Second

// stored is a kmaint object as the API server stores it, whatever the Go
// types can hold.
func stored(kind, name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetGroupVersionKind(testbed.GVK(kind))
	u.SetName(name)
	return u
}

// condition reads a condition of a stored object as it is stored, which a
// typed read of an unreadable object cannot.
func condition(g Gomega, kind, name, condType string) *metav1.Condition {
	u := stored(kind, name, nil)
	g.Expect(bed.Client.Get(context.Background(), types.NamespacedName{Name: name}, u)).To(Succeed())
	raw, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range raw {
		m, _ := c.(map[string]any)
		if m["type"] == condType {
			var cond metav1.Condition
			g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(m, &cond)).To(Succeed())
			return &cond
		}
	}
	return nil
}

func admitted(g Gomega, node string) bool {
	_, ok := harness.GetNode(g, bed, node).Annotations[protocol.Admitted]
	return ok
}

// TestUnreadableObjectsAreContained stores a pool, a policy and a
// NodeMaintenance that the Go types cannot hold, as a CRD version that
// allowed them would have, beside good ones, and checks that the operator
// still sees and reconciles the good ones, fails closed around the bad ones
// with conditions and events that name the field, syncs again after a
// restart, and picks the bad ones up again once they are fixed.
func TestUnreadableObjectsAreContained(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	good := harness.CreateNodes(t, bed, "ur-good", "ur-good", 2)
	paused := harness.CreateNodes(t, bed, "ur-paused", "ur-paused", 1)
	harness.CreateNodes(t, bed, "ur-big", "ur-big", 1)
	harness.Create(t, bed, gen.Pool("ur-good", intstr.FromInt32(1)))
	pausedPool := gen.Pool("ur-paused", intstr.FromInt32(1))
	pausedPool.Spec.Paused = true
	harness.Create(t, bed, pausedPool)
	goodPolicy := &v1alpha1.RebootPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "ur-good"},
		Spec: v1alpha1.RebootPolicySpec{
			NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"pool": "ur-good"}},
			Schedule:     &v1alpha1.ScheduleTrigger{Cron: "0 3 * * *"},
			DryRun:       true,
		},
	}
	harness.Create(t, bed, goodPolicy)
	stop := harness.StartOperator(t, bed)

	// The operator runs; the objects the Go types cannot hold are stored
	// under it, through a CRD version that took them.
	bigPool := stored("MaintenancePool", "ur-big", map[string]any{
		"nodeSelector":   map[string]any{"matchLabels": map[string]any{"pool": "ur-big"}},
		"maxUnavailable": int64(10000000000),
	})
	badPolicy := stored("RebootPolicy", "ur-bad", map[string]any{"schedule": map[string]any{"cron": int64(5)}})
	badNM := stored("NodeMaintenance", "ur-bad", map[string]any{"nodeName": good[1], "reason": "bad", "ignoreWindows": "yes"})
	for _, u := range []*unstructured.Unstructured{bigPool, badPolicy, badNM} {
		g.Expect(bed.StoreUnchecked(ctx, u)).To(Succeed())
	}
	var nmUID types.UID
	g.Eventually(func(g Gomega) {
		u := stored("NodeMaintenance", "ur-bad", nil)
		g.Expect(bed.Client.Get(ctx, types.NamespacedName{Name: "ur-bad"}, u)).To(Succeed())
		nmUID = u.GetUID()
	}, timeout).Should(Succeed())

	// A request on each good node: the one of good-0 its own, the only one
	// of good-1 that of the NodeMaintenance that cannot be read.
	g.Expect(gen.Request(ctx, bed.Client, good[0], "ur-host", v1alpha1.SourceHost, time.Now())).To(Succeed())
	g.Expect(gen.Request(ctx, bed.Client, good[1], string(nmUID), v1alpha1.SourceAPI, time.Now())).To(Succeed())
	g.Expect(gen.Request(ctx, bed.Client, paused[0], "ur-paused", v1alpha1.SourceHost, time.Now())).To(Succeed())

	expectContained := func(g Gomega, generation int64) {
		// Each bad object says what does not fit.
		for _, c := range []struct{ kind, name, field string }{
			{"MaintenancePool", "ur-big", "spec.maxUnavailable: cannot read number 10000000000 as int32"},
			{"RebootPolicy", "ur-bad", "spec.schedule.cron: cannot read number as string"},
			{"NodeMaintenance", "ur-bad", "spec.ignoreWindows: cannot read string as bool"},
		} {
			cond := condition(g, c.kind, c.name, v1alpha1.UnreadableCondition)
			g.Expect(cond).NotTo(BeNil(), "%s %s has an Unreadable condition", c.kind, c.name)
			g.Expect(cond.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(cond.Reason).To(Equal(v1alpha1.DecodeFailedReason))
			g.Expect(cond.Message).To(ContainSubstring(c.field))
			g.Expect(harness.EventReasons(g, bed, c.kind, c.name, "Warning")).To(ContainElement(v1alpha1.UnreadableReason))
		}
		// The good pools are seen and reconciled, and admit nothing while
		// a pool cannot be read.
		p := harness.GetPool(g, bed, "ur-good")
		g.Expect(p.Status.ObservedGeneration).To(Equal(generation))
		g.Expect(p.Status.Nodes).To(BeEquivalentTo(2))
		blocked := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.BlockedCondition)
		g.Expect(blocked).NotTo(BeNil())
		g.Expect(blocked.Reason).To(Equal(v1alpha1.UnreadablePoolReason))
		g.Expect(blocked.Message).To(ContainSubstring("MaintenancePool ur-big cannot be read (spec.maxUnavailable: cannot read number 10000000000 as int32)"))
		g.Expect(harness.EventReasons(g, bed, "MaintenancePool", "ur-good", "Warning")).To(ContainElement(v1alpha1.UnreadablePoolReason))
		pp := harness.GetPool(g, bed, "ur-paused")
		g.Expect(pp.Status.Nodes).To(BeEquivalentTo(1))
		g.Expect(meta.FindStatusCondition(pp.Status.Conditions, v1alpha1.BlockedCondition).Reason).To(Equal(v1alpha1.UnreadablePoolReason))
		// The good policy is evaluated, and raises nothing while a
		// NodeMaintenance cannot be read.
		ready := meta.FindStatusCondition(harness.GetPolicy(g, bed, "ur-good").Status.Conditions, v1alpha1.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Reason).To(Equal(v1alpha1.UnreadableMaintenanceReason))
		g.Expect(ready.Message).To(ContainSubstring("NodeMaintenance ur-bad (spec.ignoreWindows: cannot read string as bool)"))
		// The host request is recorded.
		g.Expect(harness.MaintenancesOf(g, bed, good[0])).To(HaveLen(1))
	}
	g.Eventually(func(g Gomega) { expectContained(g, 1) }, timeout).Should(Succeed())
	// kubectl kmaint status and history show them, beside the others.
	var out bytes.Buffer
	g.Expect(plugin.Status(ctx, bed.Client, &out, plugin.StatusOptions{Output: plugin.OutputWide})).To(Succeed())
	g.Expect(out.String()).To(MatchRegexp(`ur-big\s.*Unreadable\s.*cannot be read: spec.maxUnavailable: cannot read number 10000000000 as int32`))
	g.Expect(out.String()).To(MatchRegexp(`ur-paused\s+1\s`))
	out.Reset()
	g.Expect(plugin.History(ctx, bed.Client, &out, plugin.HistoryOptions{Node: good[1], Output: plugin.OutputWide})).To(Succeed())
	g.Expect(out.String()).To(ContainSubstring("ur-bad"))
	g.Expect(out.String()).To(ContainSubstring("(cannot be read: spec.ignoreWindows: cannot read string as bool)"))
	g.Consistently(func(g Gomega) {
		for _, n := range append(good, paused...) {
			g.Expect(admitted(g, n)).To(BeFalse(), "node %s admitted", n)
		}
	}, 3*time.Second, 200*time.Millisecond).Should(Succeed())

	// A restarted operator syncs its cache and sees the same; a change to
	// a good pool is reconciled.
	stop()
	harness.StartOperator(t, bed)
	harness.PatchPool(g, bed, "ur-good", func(p *v1alpha1.MaintenancePool) { p.Spec.MaxUnavailable = ptrIntstr(2) })
	g.Eventually(func(g Gomega) { expectContained(g, 2) }, timeout).Should(Succeed())
	g.Consistently(func(g Gomega) {
		for _, n := range append(good, paused...) {
			g.Expect(admitted(g, n)).To(BeFalse(), "node %s admitted", n)
		}
	}, 3*time.Second, 200*time.Millisecond).Should(Succeed())

	// Deleted, the pool holds no one: good-0 is admitted; good-1, whose
	// only request is the unreadable NodeMaintenance's, is not; the paused
	// pool stays paused.
	g.Expect(bed.Client.Delete(ctx, bigPool)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(admitted(g, good[0])).To(BeTrue())
		pp := harness.GetPool(g, bed, "ur-paused")
		g.Expect(meta.FindStatusCondition(pp.Status.Conditions, v1alpha1.BlockedCondition).Reason).To(Equal(v1alpha1.PausedReason))
	}, timeout).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(admitted(g, good[1])).To(BeFalse(), "node %s admitted for an unreadable NodeMaintenance", good[1])
		g.Expect(admitted(g, paused[0])).To(BeFalse(), "node %s of a paused pool admitted", paused[0])
	}, 3*time.Second, 200*time.Millisecond).Should(Succeed())

	// Fixed (kubectl edit works on what the Go types cannot read), the
	// NodeMaintenance and the policy read again: their conditions go, the
	// good policy is Ready again, and good-1 is admitted.
	g.Expect(bed.Client.Patch(ctx, stored("NodeMaintenance", "ur-bad", nil), client.RawPatch(types.MergePatchType, []byte(`{"spec":{"ignoreWindows":false}}`)))).To(Succeed())
	g.Expect(bed.Client.Patch(ctx, stored("RebootPolicy", "ur-bad", nil), client.RawPatch(types.MergePatchType, []byte(`{"spec":{"schedule":{"cron":"0 4 * * *"},"dryRun":true}}`)))).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(condition(g, "NodeMaintenance", "ur-bad", v1alpha1.UnreadableCondition)).To(BeNil())
		g.Expect(condition(g, "RebootPolicy", "ur-bad", v1alpha1.UnreadableCondition)).To(BeNil())
		g.Expect(meta.IsStatusConditionTrue(harness.GetPolicy(g, bed, "ur-good").Status.Conditions, v1alpha1.ReadyCondition)).To(BeTrue())
		g.Expect(meta.IsStatusConditionTrue(harness.GetPolicy(g, bed, "ur-bad").Status.Conditions, v1alpha1.ReadyCondition)).To(BeTrue())
		g.Expect(admitted(g, good[1])).To(BeTrue())
	}, timeout).Should(Succeed())
	g.Expect(admitted(g, paused[0])).To(BeFalse(), "node %s of a paused pool admitted", paused[0])
}

func ptrIntstr(n int32) *intstr.IntOrString {
	v := intstr.FromInt32(n)
	return &v
}
