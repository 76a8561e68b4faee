package memcluster

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Client returns the client that reads and writes the cluster. Reads copy
// what they return, but a List with client.UnsafeDisableDeepCopy, as the
// informer cache's client does. Get, List, Patch, Update, Create, Delete
// and the status subresource's Patch and Update are served; other calls
// panic, so a benchmark learns when a controller makes one.
func (c *Cluster) Client() client.Client { return &memClient{c: c} }

type memClient struct {
	client.Client
	c *Cluster
}

func (m *memClient) Scheme() *runtime.Scheme { return m.c.scheme }

func (m *memClient) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	stored, err := m.c.Object(obj, key)
	if err != nil {
		return err
	}
	return copyInto(obj, stored)
}

func (m *memClient) List(_ context.Context, list client.ObjectList, opts ...client.ListOption) error {
	gvk, err := m.c.gvk(list)
	if err != nil {
		return err
	}
	gvk.Kind = gvk.Kind[:len(gvk.Kind)-len("List")]
	lo := (&client.ListOptions{}).ApplyOptions(opts)
	store := m.c.store(gvk)
	var items []any
	byFields := lo.FieldSelector != nil && !lo.FieldSelector.Empty()
	if byFields {
		// The first requirement picks by its index, as the cache does;
		// the API server's other selectable fields (a pod's phase) filter.
		reqs := lo.FieldSelector.Requirements()
		if len(reqs) > 1 && gvk.Kind != "Pod" {
			return fmt.Errorf("list %s: only one field is indexed at a time, not %s", gvk.Kind, lo.FieldSelector)
		}
		if items, err = store.ByIndex(fieldIndex(reqs[0].Field), namespacedKey(lo.Namespace, reqs[0].Value)); err != nil {
			return fmt.Errorf("list %s by %s: %w", gvk.Kind, reqs[0].Field, err)
		}
		byFields = len(reqs) > 1
	} else {
		items = store.List()
	}
	objs := make([]runtime.Object, 0, len(items))
	for _, item := range items {
		obj := item.(client.Object)
		if lo.Namespace != "" && obj.GetNamespace() != lo.Namespace {
			continue
		}
		if lo.LabelSelector != nil && !lo.LabelSelector.Matches(labels.Set(obj.GetLabels())) {
			continue
		}
		if pod, ok := obj.(*corev1.Pod); ok && byFields && !lo.FieldSelector.Matches(fields.Set{
			"spec.nodeName": pod.Spec.NodeName, "status.phase": string(pod.Status.Phase),
			"metadata.name": pod.Name, "metadata.namespace": pod.Namespace,
		}) {
			continue
		}
		if lo.UnsafeDisableDeepCopy == nil || !*lo.UnsafeDisableDeepCopy {
			obj = obj.DeepCopyObject().(client.Object)
		}
		objs = append(objs, obj)
	}
	return meta.SetList(list, objs)
}

// Patch applies a merge or JSON patch to the stored object, refuses it
// with a conflict when it carries another resourceVersion (an optimistic
// lock), and leaves obj as written.
func (m *memClient) Patch(_ context.Context, obj client.Object, patch client.Patch, _ ...client.PatchOption) error {
	defer m.c.serving(time.Now())
	return m.c.patch(obj, patch)
}

func (m *memClient) Update(_ context.Context, obj client.Object, _ ...client.UpdateOption) error {
	defer m.c.serving(time.Now())
	return m.c.update(obj)
}

func (m *memClient) Create(_ context.Context, obj client.Object, _ ...client.CreateOption) error {
	defer m.c.serving(time.Now())
	if _, err := m.c.Object(obj, client.ObjectKeyFromObject(obj)); err == nil {
		return apierrors.NewAlreadyExists(schema.GroupResource{}, obj.GetName())
	}
	stored := obj.DeepCopyObject().(client.Object)
	if err := m.c.Add(stored); err != nil {
		return err
	}
	return copyInto(obj, stored)
}

func (m *memClient) Delete(_ context.Context, obj client.Object, _ ...client.DeleteOption) error {
	defer m.c.serving(time.Now())
	gvk, err := m.c.gvk(obj)
	if err != nil {
		return err
	}
	stored, err := m.c.Object(obj, client.ObjectKeyFromObject(obj))
	if err != nil {
		return err
	}
	return m.c.remove(gvk, stored)
}

func (m *memClient) Status() client.SubResourceWriter { return statusWriter{c: m.c} }

// statusWriter writes the status as the object: the controllers benchmarked
// change only the status through it.
type statusWriter struct {
	client.SubResourceWriter
	c *Cluster
}

func (s statusWriter) Patch(_ context.Context, obj client.Object, patch client.Patch, _ ...client.SubResourcePatchOption) error {
	defer s.c.serving(time.Now())
	return s.c.patch(obj, patch)
}

func (s statusWriter) Update(_ context.Context, obj client.Object, _ ...client.SubResourceUpdateOption) error {
	defer s.c.serving(time.Now())
	return s.c.update(obj)
}

func (c *Cluster) patch(obj client.Object, patch client.Patch) error {
	stored, err := c.Object(obj, client.ObjectKeyFromObject(obj))
	if err != nil {
		return err
	}
	data, err := patch.Data(obj)
	if err != nil {
		return fmt.Errorf("patch data: %w", err)
	}
	original, err := json.Marshal(stored)
	if err != nil {
		return err
	}
	var patched []byte
	switch patch.Type() {
	case types.MergePatchType:
		patched, err = jsonpatch.MergePatch(original, data)
	case types.JSONPatchType:
		var p jsonpatch.Patch
		if p, err = jsonpatch.DecodePatch(data); err == nil {
			patched, err = p.Apply(original)
		}
	default:
		return fmt.Errorf("patch type %s is not served", patch.Type())
	}
	if err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("patch %s: %v", obj.GetName(), err))
	}
	written, err := decode(patched, stored)
	if err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("patch %s: %v", obj.GetName(), err))
	}
	return c.write(obj, stored, written)
}

func (c *Cluster) update(obj client.Object) error {
	stored, err := c.Object(obj, client.ObjectKeyFromObject(obj))
	if err != nil {
		return err
	}
	return c.write(obj, stored, obj.DeepCopyObject().(client.Object))
}

// write stores written in place of stored unless it carries another
// resourceVersion than stored (empty: no lock), and copies it into obj.
func (c *Cluster) write(obj, stored, written client.Object) error {
	if rv := written.GetResourceVersion(); rv != "" && rv != stored.GetResourceVersion() {
		return apierrors.NewConflict(schema.GroupResource{}, obj.GetName(), fmt.Errorf("the object has been modified"))
	}
	if err := c.Set(written); err != nil {
		return err
	}
	return copyInto(obj, written)
}

type labelSet map[string]string

func (l labelSet) Has(k string) bool              { _, ok := l[k]; return ok }
func (l labelSet) Get(k string) string            { return l[k] }
func (l labelSet) Lookup(k string) (string, bool) { v, ok := l[k]; return v, ok }
