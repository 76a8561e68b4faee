package v1alpha1_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/testbed"
)

// storedCase is an object stored through another version of the CRD, and
// what reading it as v1alpha1 must say.
type storedCase struct {
	kind   string
	name   string
	body   map[string]any
	labels map[string]string
	// want is the field error the object's Unreadable must give; empty
	// for an object that reads fine.
	want string
}

func storedCases() []storedCase {
	sel := map[string]any{"matchLabels": map[string]any{"pool": "decode"}}
	return []storedCase{
		{kind: "MaintenancePool", name: "decode-good", body: map[string]any{"spec": map[string]any{"nodeSelector": sel, "paused": true}}},
		{kind: "MaintenancePool", name: "decode-huge", body: map[string]any{"spec": map[string]any{"nodeSelector": sel, "maxUnavailable": int64(10000000000)}},
			want: "spec.maxUnavailable: cannot read number 10000000000 as int32"},
		{kind: "MaintenancePool", name: "decode-paused-string", body: map[string]any{"spec": map[string]any{"nodeSelector": sel, "paused": "yes"}},
			want: "spec.paused: cannot read string as bool"},
		{kind: "MaintenancePool", name: "decode-grace", body: map[string]any{"spec": map[string]any{"nodeSelector": sel, "drain": map[string]any{"gracePeriodSeconds": "forever"}}},
			want: "spec.drain.gracePeriodSeconds: cannot read string as int64"},
		{kind: "MaintenancePool", name: "decode-status", body: map[string]any{"spec": map[string]any{"nodeSelector": sel}, "status": map[string]any{"nodes": "many"}},
			want: "status.nodes: cannot read string as int32"},
		{kind: "RebootPolicy", name: "decode-good", body: map[string]any{"spec": map[string]any{"schedule": map[string]any{"cron": "0 3 * * *"}, "dryRun": true}}},
		{kind: "RebootPolicy", name: "decode-cap", body: map[string]any{"spec": map[string]any{"schedule": map[string]any{"cron": "0 3 * * *"}, "maxConcurrentRequests": int64(2147483648)}},
			want: "spec.maxConcurrentRequests: cannot read number 2147483648 as int32"},
		{kind: "RebootPolicy", name: "decode-cron", body: map[string]any{"spec": map[string]any{"schedule": map[string]any{"cron": int64(5)}}},
			want: "spec.schedule.cron: cannot read number as string"},
		{kind: "NodeMaintenance", name: "decode-good", body: map[string]any{"spec": map[string]any{"nodeName": "n", "reason": "fine"}}},
		{kind: "NodeMaintenance", name: "decode-windows", labels: map[string]string{v1alpha1.PolicyLabel: "p"},
			body: map[string]any{"spec": map[string]any{"nodeName": "n", "reason": "x", "ignoreWindows": "yes"}},
			want: "spec.ignoreWindows: cannot read string as bool"},
		{kind: "NodeMaintenance", name: "decode-phase", body: map[string]any{"spec": map[string]any{"nodeName": "n", "reason": "x"}, "status": map[string]any{"phase": int64(3)}},
			want: "status.phase: cannot read number as v1alpha1.Phase"},
	}
}

func (c storedCase) object() *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	for k, v := range c.body {
		u.Object[k] = v
	}
	u.SetGroupVersionKind(testbed.GVK(c.kind))
	u.SetName(c.name)
	u.SetLabels(c.labels)
	return u
}

// readable is what every kmaint kind has.
type readable interface {
	client.Object
	Unreadable() error
}

// items returns a typed list's items as readable objects.
func items(list client.ObjectList) []readable {
	var out []readable
	switch l := list.(type) {
	case *v1alpha1.MaintenancePoolList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *v1alpha1.RebootPolicyList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *v1alpha1.NodeMaintenanceList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	}
	return out
}

// TestStoredObjectsThatDoNotFit stores, through another version of each CRD,
// objects whose bodies the Go types cannot hold, and reads them back as
// v1alpha1 with client-go's own decoding: a list, a get and a watch all
// succeed; the objects that fit read whole; those that do not keep their
// metadata and name the field; and none of them can be written back.
func TestStoredObjectsThatDoNotFit(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	cases := storedCases()
	for _, c := range cases {
		g.Expect(bed.StoreUnchecked(ctx, c.object())).To(Succeed(), "store %s %s", c.kind, c.name)
		t.Cleanup(func() { _ = bed.Client.Delete(context.Background(), c.object()) })
	}

	lists := map[string]client.ObjectList{
		"MaintenancePool": &v1alpha1.MaintenancePoolList{},
		"RebootPolicy":    &v1alpha1.RebootPolicyList{},
		"NodeMaintenance": &v1alpha1.NodeMaintenanceList{},
	}
	for kind, list := range lists {
		g.Expect(bed.Client.List(ctx, list)).To(Succeed(), "list %ss", kind)
	}
	for _, c := range cases {
		var got readable
		for _, o := range items(lists[c.kind]) {
			if o.GetName() == c.name {
				got = o
			}
		}
		g.Expect(got).NotTo(BeNil(), "%s %s is in the list", c.kind, c.name)
		g.Expect(got.GetUID()).NotTo(BeEmpty(), "%s %s keeps its metadata", c.kind, c.name)
		if c.want == "" {
			g.Expect(got.Unreadable()).To(Succeed(), "%s %s reads", c.kind, c.name)
			continue
		}
		g.Expect(got.Unreadable()).To(MatchError(c.want), "%s %s", c.kind, c.name)
		g.Expect(got.GetLabels()).To(Equal(c.labels), "%s %s keeps its labels", c.kind, c.name)

		// What the operator would write back is refused before it is sent,
		// and the stored object is as it was.
		before := c.object()
		g.Expect(bed.Client.Get(ctx, types.NamespacedName{Name: c.name}, before)).To(Succeed())
		_, err := json.Marshal(got)
		g.Expect(err).To(MatchError(ContainSubstring("never written back")))
		g.Expect(bed.Client.Update(ctx, got)).To(MatchError(ContainSubstring(c.want)))
		g.Expect(bed.Client.Status().Patch(ctx, got, client.MergeFrom(got.DeepCopyObject().(client.Object)))).NotTo(Succeed())
		stored := c.object()
		g.Expect(bed.Client.Get(ctx, types.NamespacedName{Name: c.name}, stored)).To(Succeed())
		g.Expect(stored.Object).To(Equal(before.Object), "%s %s is untouched", c.kind, c.name)

		// A get reads the same.
		one := got.DeepCopyObject().(readable)
		g.Expect(bed.Client.Get(ctx, types.NamespacedName{Name: c.name}, one)).To(Succeed())
		g.Expect(one.Unreadable()).To(MatchError(c.want), "a DeepCopy and a get keep the reason")
	}

	// A watch delivers them too, rather than ending on the first.
	wc, err := client.NewWithWatch(bed.Config, client.Options{Scheme: bed.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	w, err := wc.Watch(ctx, &v1alpha1.MaintenancePoolList{})
	g.Expect(err).NotTo(HaveOccurred())
	defer w.Stop()
	seen := map[string]error{}
	deadline := time.After(time.Minute)
	pools := []string{"decode-good", "decode-huge", "decode-paused-string", "decode-grace", "decode-status"}
	for !allSeen(seen, pools) {
		select {
		case ev := <-w.ResultChan():
			g.Expect(ev.Type).To(Equal(watch.Added), "watch event %v", ev.Object)
			p := ev.Object.(*v1alpha1.MaintenancePool)
			seen[p.Name] = p.Unreadable()
		case <-deadline:
			t.Fatalf("the watch delivered only %v", seen)
		}
	}
	g.Expect(seen["decode-huge"]).To(MatchError("spec.maxUnavailable: cannot read number 10000000000 as int32"))
	g.Expect(seen["decode-good"]).To(Succeed())
}

func allSeen(seen map[string]error, names []string) bool {
	for _, n := range names {
		if _, ok := seen[n]; !ok {
			return false
		}
	}
	return true
}
