package v1alpha1_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

// jobHookSpec is a pool whose beforeReboot hook is a Job of the template.
func jobHookSpec(template map[string]any) map[string]any {
	return map[string]any{"nodeSelector": selector(), "hooks": map[string]any{"beforeReboot": []any{
		map[string]any{"name": "upgrade", "job": map[string]any{"template": template}},
	}}}
}

// podTemplate is a hook's pod template with one container, and the given
// fields in its spec besides.
func podTemplate(spec map[string]any) map[string]any {
	s := map[string]any{"containers": []any{map[string]any{"name": "work", "image": "registry.example/hook:1"}}}
	for k, v := range spec {
		s[k] = v
	}
	return map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "upgrade"}}, "spec": s}
}

// A hook's pod runs under the service account the install names: a
// template may not name one, by either field.
func TestHookTemplateNamesNoServiceAccount(t *testing.T) {
	const path = "spec.hooks.beforeReboot[0].job.template.spec."
	runAdmissionCases(t, "MaintenancePool", map[string]admissionCase{
		"a template":                {spec: jobHookSpec(podTemplate(nil))},
		"a template without a spec": {spec: jobHookSpec(map[string]any{})},
		"serviceAccountName": {spec: jobHookSpec(podTemplate(map[string]any{"serviceAccountName": "cluster-admin-sa"})),
			wantErr: "remove serviceAccountName from the template", wantField: path + "serviceAccountName"},
		"serviceAccountName empty, naming none": {spec: jobHookSpec(podTemplate(map[string]any{"serviceAccountName": "", "serviceAccount": ""}))},
		"serviceAccount, the deprecated field": {spec: jobHookSpec(podTemplate(map[string]any{"serviceAccount": "cluster-admin-sa"})),
			wantErr: "remove serviceAccount, the deprecated serviceAccountName", wantField: path + "serviceAccount"},
		"serviceAccountName not a string": {spec: jobHookSpec(podTemplate(map[string]any{"serviceAccountName": 7})),
			wantErr: "must be of type string", wantField: path + "serviceAccountName"},
	})
}

// The schema declares two fields of a template and keeps the rest: the pod
// is stored and read back whole, through the Go types as through JSON.
func TestHookTemplateKeptWhole(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	pool := &v1alpha1.MaintenancePool{}
	pool.Name = "hook-template-whole"
	pool.Spec.NodeSelector = &v1alpha1.LabelSelector{MatchLabels: map[string]v1alpha1.SelectorValue{"pool": "x"}}
	tpl := corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		HostPID:      true,
		NodeSelector: map[string]string{"kubernetes.io/os": "linux"},
		Containers: []corev1.Container{{Name: "work", Image: "registry.example/hook:1", Command: []string{"/bin/upgrade"},
			SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)}}},
		Volumes: []corev1.Volume{{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}},
	}}
	tpl.Labels = map[string]string{"app": "upgrade"}
	pool.Spec.Hooks = &v1alpha1.Hooks{BeforeReboot: []v1alpha1.Hook{{Name: "upgrade", Job: &v1alpha1.HookJob{Template: tpl}}}}
	g.Expect(bed.Client.Create(ctx, pool)).To(Succeed())
	t.Cleanup(func() { _ = bed.Client.Delete(context.Background(), pool) })

	got := &v1alpha1.MaintenancePool{}
	g.Expect(bed.Client.Get(ctx, client.ObjectKeyFromObject(pool), got)).To(Succeed())
	g.Expect(got.Spec.Hooks.BeforeReboot[0].Job.Template).To(Equal(tpl))

	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("MaintenancePool"))
	g.Expect(bed.Client.Get(ctx, client.ObjectKeyFromObject(pool), u)).To(Succeed())
	hooks, _, _ := unstructured.NestedSlice(u.Object, "spec", "hooks", "beforeReboot")
	containers, _, _ := unstructured.NestedSlice(hooks[0].(map[string]any), "job", "template", "spec", "containers")
	g.Expect(containers).To(HaveLen(1))
	g.Expect(containers[0]).To(HaveKeyWithValue("image", "registry.example/hook:1"))
	hostPID, _, _ := unstructured.NestedBool(hooks[0].(map[string]any), "job", "template", "spec", "hostPID")
	g.Expect(hostPID).To(BeTrue(), "a field the schema does not declare is kept")
}

// A pool stored before the rule (its template names a service account)
// can still be changed, its template included: the API server ratchets a
// rule over a value the change leaves alone. A new service account is
// refused. The gate overrides the stored one meanwhile.
func TestStoredHookTemplateWithAServiceAccountRatchets(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	u := object("MaintenancePool", "hook-template-stored", jobHookSpec(podTemplate(map[string]any{"serviceAccountName": "old-choice"})))
	g.Expect(bed.StoreUnchecked(ctx, u)).To(Succeed())
	t.Cleanup(func() { _ = bed.Client.Delete(context.Background(), u) })

	key := types.NamespacedName{Name: u.GetName()}
	patch := func(p string) error {
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(u.GroupVersionKind())
		obj.SetName(u.GetName())
		return bed.Client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, []byte(p)))
	}
	template := func(sa string) string {
		return `{"spec":{"hooks":{"beforeReboot":[{"name":"upgrade","job":{"template":{"spec":{"serviceAccountName":"` + sa +
			`","containers":[{"name":"work","image":"registry.example/hook:2"}]}}}}]}}}`
	}
	// The shipped CRD is back a moment after StoreUnchecked returns.
	g.Eventually(func() error { return patch(template("another")) }).Should(MatchError(ContainSubstring("remove serviceAccountName from the template")))
	g.Expect(patch(`{"spec":{"paused":true,"maxUnavailable":2}}`)).To(Succeed(), "a change elsewhere in the pool is ratcheted")
	g.Expect(patch(template("old-choice"))).To(Succeed(), "a change elsewhere in the template is ratcheted")
	pool := &v1alpha1.MaintenancePool{}
	g.Expect(bed.Client.Get(ctx, key, pool)).To(Succeed())
	g.Expect(pool.Spec.Paused).To(BeTrue())
	tpl := pool.Spec.Hooks.BeforeReboot[0].Job.Template
	g.Expect(tpl.Spec.ServiceAccountName).To(Equal("old-choice"))
	g.Expect(tpl.Spec.Containers[0].Image).To(Equal("registry.example/hook:2"))
	g.Expect(patch(template(""))).To(Succeed(), "the template mended")
}
