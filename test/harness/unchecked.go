package harness

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/test/testbed"
)

// CreateUnchecked creates obj as an API server would have stored it before
// kmaint's CRD checked the field at path (e.g. "spec", "nodeSelector"): an
// object written under an older CRD, which the current schema would refuse
// and which the operator must still handle. It gives the CRD named crd a
// schema that accepts anything at path, creates obj, and puts the CRD back,
// waiting until the API server refuses obj again, so that the rest of the
// package's tests see the real schema. It deletes obj when the test ends.
func CreateUnchecked(t testing.TB, bed *testbed.Bed, obj client.Object, crd string, path ...string) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	key := types.NamespacedName{Name: crd}
	original := crdObject()
	g.Expect(bed.Client.Get(ctx, key, original)).To(Succeed(), "get CRD %s", crd)
	originalSpec, _, _ := unstructured.NestedFieldCopy(original.Object, "spec")

	setSpec := func(spec any) error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			c := crdObject()
			if err := bed.Client.Get(ctx, key, c); err != nil {
				return err
			}
			if err := unstructured.SetNestedField(c.Object, spec, "spec"); err != nil {
				return err
			}
			return bed.Client.Update(ctx, c)
		})
	}
	restored := false
	restore := func() {
		if !restored {
			g.Expect(setSpec(originalSpec)).To(Succeed(), "restore CRD %s", crd)
			restored = true
		}
	}
	t.Cleanup(restore)

	loose, _, _ := unstructured.NestedFieldCopy(original.Object, "spec")
	versions, _, _ := unstructured.NestedSlice(loose.(map[string]any), "versions")
	for _, v := range versions {
		fields := []string{"schema", "openAPIV3Schema"}
		for _, p := range path {
			fields = append(fields, "properties", p)
		}
		if _, found, _ := unstructured.NestedFieldNoCopy(v.(map[string]any), fields...); !found {
			t.Fatalf("CRD %s has no field %v", crd, path)
		}
		g.Expect(unstructured.SetNestedField(v.(map[string]any), map[string]any{
			"type": "object", "x-kubernetes-preserve-unknown-fields": true,
		}, fields...)).To(Succeed())
	}
	g.Expect(unstructured.SetNestedSlice(loose.(map[string]any), versions, "versions")).To(Succeed())
	g.Expect(setSpec(loose)).To(Succeed(), "loosen CRD %s", crd)

	// The API server takes a moment to serve the new schema.
	g.Eventually(func() error {
		err := bed.Client.Create(ctx, obj.DeepCopyObject().(client.Object))
		if apierrors.IsInvalid(err) {
			return fmt.Errorf("not yet stored: %w", err)
		}
		return err
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed(), "create %s under the loosened CRD", obj.GetName())
	t.Cleanup(func() { _ = bed.Client.Delete(context.Background(), obj) })

	restore()
	probe := obj.DeepCopyObject().(client.Object)
	probe.SetName(obj.GetName() + "-probe")
	g.Eventually(func() bool {
		err := bed.Client.Create(ctx, probe.DeepCopyObject().(client.Object), client.DryRunAll)
		return apierrors.IsInvalid(err)
	}, 30*time.Second, 100*time.Millisecond).Should(BeTrue(), "the restored CRD %s refuses %s again", crd, obj.GetName())
	g.Expect(bed.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
}

func crdObject() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
	return u
}
