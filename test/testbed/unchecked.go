package testbed

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

// OtherVersion is the version StoreUnchecked adds to a kind's CRD for a
// moment: a newer (or older) version of the API whose schema takes what
// v1alpha1's refuses. The API server converts between the two by changing
// the apiVersion only, so what it takes is stored as it is, as v1alpha1.
const OtherVersion = "v1alpha2"

// StoreUnchecked stores obj (a kmaint kind, its spec and status as given)
// the way an object written through another version of the CRD, or before
// a bound existed, is stored: it adds OtherVersion to the kind's CRD with a
// schema that takes anything, creates obj through it (and writes its status,
// if it has one), and puts the shipped CRD back. The object stays stored
// as it was written, whatever the shipped schema says; reading it as
// v1alpha1 gives back what no v1alpha1 client could have written.
// (harness.CreateUnchecked loosens one field of v1alpha1's schema instead,
// for an object a test then reads through the typed client; this one stores
// a whole object, status included, as a CRD version of its own would.)
func (b *Bed) StoreUnchecked(ctx context.Context, obj *unstructured.Unstructured) error {
	mapping, err := b.Client.RESTMapper().RESTMapping(obj.GroupVersionKind().GroupKind(), v1alpha1.GroupVersion.Version)
	if err != nil {
		return fmt.Errorf("resource of %s: %w", obj.GetKind(), err)
	}
	crdName := mapping.Resource.Resource + "." + v1alpha1.GroupVersion.Group
	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
	if err := b.Client.Get(ctx, types.NamespacedName{Name: crdName}, crd); err != nil {
		return fmt.Errorf("get CRD %s: %w", crdName, err)
	}
	shipped, _, err := unstructured.NestedSlice(crd.Object, "spec", "versions")
	if err != nil {
		return fmt.Errorf("versions of CRD %s: %w", crdName, err)
	}
	anything := map[string]any{
		"name": OtherVersion, "served": true, "storage": false,
		"schema": map[string]any{"openAPIV3Schema": map[string]any{
			"type": "object", "x-kubernetes-preserve-unknown-fields": true,
		}},
		"subresources": map[string]any{"status": map[string]any{}},
	}
	if err := b.setVersions(ctx, crdName, append(append([]any(nil), shipped...), anything)); err != nil {
		return err
	}
	stored := storeThrough(ctx, b.Client, obj)
	restored := b.setVersions(ctx, crdName, shipped)
	return errors.Join(stored, restored)
}

// storeThrough creates obj through OtherVersion, once the API server
// serves it, and writes its status.
func storeThrough(ctx context.Context, c client.Client, obj *unstructured.Unstructured) error {
	u := obj.DeepCopy()
	u.SetAPIVersion(v1alpha1.GroupVersion.Group + "/" + OtherVersion)
	status, hasStatus := u.Object["status"]
	// A CRD just changed is served a moment later; until then the new
	// version is not found, or not known to the client's mapper.
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		err := c.Create(ctx, u.DeepCopy())
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			return false, nil
		}
		return true, err
	})
	if err != nil {
		return fmt.Errorf("create %s %s as %s: %w", u.GetKind(), u.GetName(), OtherVersion, err)
	}
	if !hasStatus {
		return nil
	}
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(u.GroupVersionKind())
	if err := c.Get(ctx, types.NamespacedName{Name: u.GetName()}, live); err != nil {
		return fmt.Errorf("get %s %s as %s: %w", u.GetKind(), u.GetName(), OtherVersion, err)
	}
	live.Object["status"] = status
	if err := c.Status().Update(ctx, live); err != nil {
		return fmt.Errorf("write status of %s %s as %s: %w", u.GetKind(), u.GetName(), OtherVersion, err)
	}
	return nil
}

// setVersions writes a CRD's versions. The API server serves a version
// added a moment later (storeThrough waits for it); one removed may be
// served a moment longer, which no test of v1alpha1 can tell.
func (b *Bed) setVersions(ctx context.Context, crdName string, versions []any) error {
	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := b.Client.Get(ctx, types.NamespacedName{Name: crdName}, crd); err != nil {
			return false, err
		}
		if err := unstructured.SetNestedSlice(crd.Object, versions, "spec", "versions"); err != nil {
			return false, err
		}
		err := b.Client.Update(ctx, crd)
		if apierrors.IsConflict(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		return fmt.Errorf("set the versions of CRD %s: %w", crdName, err)
	}
	return nil
}
