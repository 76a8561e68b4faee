package gate_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator"
	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/harness"
)

// storePoolUnchecked stores the pool as one stored before the API refused
// what it holds.
func storePoolUnchecked(t *testing.T, pool *v1alpha1.MaintenancePool) {
	t.Helper()
	raw, err := json.Marshal(pool)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal(raw, &u.Object); err != nil {
		t.Fatal(err)
	}
	u.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("MaintenancePool"))
	if err := bed.StoreUnchecked(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bed.Client.Delete(context.Background(), u) })
}

// Every hook's pod runs under the service account and in the priority class
// the install names, whatever its pool's template says: here a pool stored
// before the API refused a template that names a service account, and
// whose template chose its own priority.
func TestHookPodsRunAsTheInstallSays(t *testing.T) {
	g := NewWithT(t)
	hook := jobHook("upgrade")
	spec := &hook.Job.Template.Spec
	spec.ServiceAccountName, spec.DeprecatedServiceAccount = "cluster-admin", "cluster-admin"
	spec.PriorityClassName, spec.Priority, spec.PreemptionPolicy = "tenant-high", ptr.To[int32](7), ptr.To(corev1.PreemptNever)
	pool := gen.Pool("hookinstall", intstr.FromInt32(1))
	pool.Spec.Hooks = &v1alpha1.Hooks{BeforeReboot: []v1alpha1.Hook{hook}}
	storePoolUnchecked(t, pool)
	node := createNodes(t, "hookinstall", "hookinstall", 1)[0]
	runDaemons(t, "hookinstall", false)
	ns := "hooks-hookinstall"
	harness.Create(t, bed, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	jobs := harness.RunJobs(t, bed, ns, func(*batchv1.Job) harness.JobOutcome { return harness.JobOutcome{} })
	harness.StartOperatorWith(t, bed, operator.Options{HooksNamespace: ns, HooksServiceAccount: "kmaint-hook", HooksPriorityClass: "kmaint-hook"})

	request(t, node, "r", time.Now())
	g.Eventually(func(g Gomega) { expectRebootedOnce(g, node, false) }, timeout).Should(Succeed())
	g.Expect(jobs.Made()).To(HaveLen(1))
	got := jobs.Made()[0].Spec.Template.Spec
	g.Expect(got.ServiceAccountName).To(Equal("kmaint-hook"))
	g.Expect(got.DeprecatedServiceAccount).To(Or(BeEmpty(), Equal("kmaint-hook")))
	g.Expect(got.PriorityClassName).To(Equal("kmaint-hook"))
	g.Expect(got.Priority).To(BeNil(), "the class gives the priority; a pod that states another is refused")
	g.Expect(got.PreemptionPolicy).To(BeNil(), "the class gives the preemption policy")
}
