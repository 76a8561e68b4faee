package install

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/gen"
)

// grantSelectors lets user use the named node selectors
// (nodeselectors.kmaint.io), as a cluster admin grants a team its labels.
func grantSelectors(t *testing.T, user string, names ...string) {
	t.Helper()
	grant(t, "test-selectors-"+user, user, rbacv1.PolicyRule{
		APIGroups: []string{"kmaint.io"}, Resources: []string{"nodeselectors"}, ResourceNames: names, Verbs: []string{"use"}})
}

// selecting is a pool of the name selecting by matchLabels.
func selecting(name string, labels map[string]v1alpha1.SelectorValue) *v1alpha1.MaintenancePool {
	p := gen.Pool(name, intstr.FromInt32(1))
	p.Spec.NodeSelector = &v1alpha1.LabelSelector{MatchLabels: labels}
	return p
}

// TestPoolSelectorsNeedTheirRBAC installs kmaint's admission policies for
// real: a team that may edit MaintenancePools points a pool only at the
// nodes whose labels RBAC lets it use (nodeselectors.kmaint.io, verb use,
// named key=value): not at another team's, not at every node, not at the
// nodes no pool selects by making the default pool's object. Its other
// edits of its pool need nothing more. A selector that only excludes, or an
// empty one, needs *.
// The biggest selector the API accepts is judged, not failed on.
func TestPoolSelectorsNeedTheirRBAC(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	installIdentities(t)
	const policy = "kmaint-pool-selectors"
	pools := rbacv1.PolicyRule{APIGroups: []string{"kmaint.io"}, Resources: []string{"maintenancepools"}, Verbs: []string{"get", "create", "update", "patch", "delete"}}
	payments := userWith(t, "pool-payments", pools)
	grantSelectors(t, "pool-payments", "team=payments", "zone=a", "zone=b")
	platform := userWith(t, "pool-platform", pools)
	grantSelectors(t, "pool-platform", "*")

	create := func(c client.Client, p *v1alpha1.MaintenancePool) error {
		err := c.Create(ctx, p)
		if err == nil {
			t.Cleanup(func() { _ = bed.Client.Delete(context.Background(), p) })
		}
		return err
	}
	// The binding takes a moment to be enforced.
	probe := 0
	waitForPolicy(t, policy, func() error {
		probe++
		return create(payments, selecting(fmt.Sprintf("probe-%d", probe), map[string]v1alpha1.SelectorValue{"team": "search"}))
	})
	refused := func(what string, err error, why string) {
		t.Helper()
		expectRefusedBy(t, policy, what, err, why)
	}

	// Its own nodes, narrowed as it likes.
	own := selecting("payments", map[string]v1alpha1.SelectorValue{"team": "payments", "tier": "db"})
	g.Expect(create(payments, own)).To(Succeed())
	// Another team's, every node, the nodes no pool selects.
	refused("another team's nodes", create(payments, selecting("grab", map[string]v1alpha1.SelectorValue{"team": "search"})),
		"this one needs one of team=search, or *); pool-payments may not")
	refused("an empty selector: every node", create(payments, &v1alpha1.MaintenancePool{ObjectMeta: metav1.ObjectMeta{Name: "every"},
		Spec: v1alpha1.MaintenancePoolSpec{NodeSelector: &v1alpha1.LabelSelector{}}}), "this one requires no single label: it needs *")
	refused("a selector that only excludes", create(payments, &v1alpha1.MaintenancePool{ObjectMeta: metav1.ObjectMeta{Name: "not-search"},
		Spec: v1alpha1.MaintenancePoolSpec{NodeSelector: &v1alpha1.LabelSelector{MatchExpressions: []v1alpha1.LabelSelectorRequirement{
			{Key: "team", Operator: metav1.LabelSelectorOpNotIn, Values: []v1alpha1.SelectorValue{"search"}}}}}}), "it needs *")
	refused("the default pool's object", create(payments, &v1alpha1.MaintenancePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}),
		"the MaintenancePool named default sets how every node no other pool selects")
	// In of one value is that label; of several, no single label.
	in := func(name string, values ...v1alpha1.SelectorValue) *v1alpha1.MaintenancePool {
		return &v1alpha1.MaintenancePool{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.MaintenancePoolSpec{NodeSelector: &v1alpha1.LabelSelector{
			MatchExpressions: []v1alpha1.LabelSelectorRequirement{{Key: "zone", Operator: metav1.LabelSelectorOpIn, Values: values}}}}}
	}
	g.Expect(create(payments, in("zone-a", "a"))).To(Succeed())
	refused("an In of a value not its own", create(payments, in("zone-c", "c")), "this one needs one of zone=c, or *")
	refused("an In of several values", create(payments, in("zones", "a", "b")), "it needs *")

	// Pointing its own pool at another team's nodes is refused too; any
	// other edit of its pool needs nothing more.
	refused("a pool re-pointed", patchPool(payments, "payments", func(p *v1alpha1.MaintenancePool) {
		p.Spec.NodeSelector.MatchLabels = map[string]v1alpha1.SelectorValue{"team": "search"}
	}), "this one needs one of team=search, or *")
	g.Expect(patchPool(payments, "payments", func(p *v1alpha1.MaintenancePool) {
		p.Spec.MaxUnavailable = ptrTo(intstr.FromInt32(2))
		p.Spec.Paused = true
	})).To(Succeed())

	// Whoever may use * may point a pool anywhere, and make the default
	// pool's object; so may the cluster's administrators.
	g.Expect(create(platform, &v1alpha1.MaintenancePool{ObjectMeta: metav1.ObjectMeta{Name: "everything"},
		Spec: v1alpha1.MaintenancePoolSpec{NodeSelector: &v1alpha1.LabelSelector{}}})).To(Succeed())
	g.Expect(create(platform, &v1alpha1.MaintenancePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}})).To(Succeed())
	g.Expect(create(bed.Client, selecting("admins", map[string]v1alpha1.SelectorValue{"team": "search"}))).To(Succeed())

	// Up to 8 labels are judged, whichever of them is the writer's; the
	// biggest selector the API accepts (32 labels, 32 In of 64 values)
	// needs *, and says so rather than fail to evaluate.
	eight := map[string]v1alpha1.SelectorValue{"team": "payments"}
	for i := range 7 {
		eight[fmt.Sprintf("label-%02d", i)] = "x"
	}
	g.Expect(create(payments, selecting("eight", eight))).To(Succeed(), "confined by team=payments among 8 labels")
	big := &v1alpha1.LabelSelector{MatchLabels: map[string]v1alpha1.SelectorValue{"team": "payments"}}
	for i := range 32 {
		if i < 31 {
			big.MatchLabels[fmt.Sprintf("label-%02d", i)] = "x"
		}
		var values []v1alpha1.SelectorValue
		for j := range 64 {
			values = append(values, v1alpha1.SelectorValue(fmt.Sprintf("v%02d", j)))
		}
		big.MatchExpressions = append(big.MatchExpressions, v1alpha1.LabelSelectorRequirement{Key: fmt.Sprintf("key-%02d", i), Operator: metav1.LabelSelectorOpIn, Values: values})
	}
	start := time.Now()
	refused("the biggest selector", create(payments, &v1alpha1.MaintenancePool{ObjectMeta: metav1.ObjectMeta{Name: "big"},
		Spec: v1alpha1.MaintenancePoolSpec{NodeSelector: big.DeepCopy()}}), "this one names 32 labels, more than the 8 judged: it needs *")
	t.Logf("the biggest selector judged in %s", time.Since(start).Round(time.Millisecond))
	g.Expect(create(platform, &v1alpha1.MaintenancePool{ObjectMeta: metav1.ObjectMeta{Name: "big"},
		Spec: v1alpha1.MaintenancePoolSpec{NodeSelector: big}})).To(Succeed(), "whoever may use * may write it")
}

// patchPool changes the pool as c.
func patchPool(c client.Client, name string, change func(*v1alpha1.MaintenancePool)) error {
	p := &v1alpha1.MaintenancePool{}
	if err := c.Get(context.Background(), client.ObjectKey{Name: name}, p); err != nil {
		return err
	}
	base := p.DeepCopy()
	change(p)
	return c.Patch(context.Background(), p, client.MergeFrom(base))
}

func ptrTo[T any](v T) *T { return &v }
