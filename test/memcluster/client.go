package memcluster

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
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
	return m.c.patch(obj, patch)
}

func (m *memClient) Update(_ context.Context, obj client.Object, _ ...client.UpdateOption) error {
	return m.c.update(obj)
}

func (m *memClient) Create(_ context.Context, obj client.Object, _ ...client.CreateOption) error {
	m.c.writes.Add(1)
	began := time.Now()
	if _, err := m.c.Object(obj, client.ObjectKeyFromObject(obj)); err == nil {
		m.c.serving(began)
		return apierrors.NewAlreadyExists(schema.GroupResource{}, obj.GetName())
	}
	stored := obj.DeepCopyObject().(client.Object)
	m.c.serving(began)
	if err := m.c.Add(stored); err != nil {
		return err
	}
	return copyInto(obj, stored)
}

func (m *memClient) Delete(_ context.Context, obj client.Object, _ ...client.DeleteOption) error {
	m.c.writes.Add(1)
	began := time.Now()
	gvk, err := m.c.gvk(obj)
	if err != nil {
		return err
	}
	stored, err := m.c.Object(obj, client.ObjectKeyFromObject(obj))
	m.c.serving(began)
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
	return s.c.patch(obj, patch)
}

func (s statusWriter) Update(_ context.Context, obj client.Object, _ ...client.SubResourceUpdateOption) error {
	return s.c.update(obj)
}

// patch builds the patch's data from obj, as the client does, then serves
// it as the API server does: applied to the stored object.
func (c *Cluster) patch(obj client.Object, patch client.Patch) error {
	c.writes.Add(1)
	data, err := patch.Data(obj)
	if err != nil {
		return fmt.Errorf("patch data: %w", err)
	}
	began := time.Now()
	written, stored, err := c.applyPatch(obj, patch.Type(), data)
	c.serving(began)
	if err != nil {
		return err
	}
	return c.commit(obj, stored, written)
}

// applyPatch is the API server's part of a patch: the stored object, and
// what it is with the patch applied.
func (c *Cluster) applyPatch(obj client.Object, pt types.PatchType, data []byte) (written, stored client.Object, err error) {
	if stored, err = c.Object(obj, client.ObjectKeyFromObject(obj)); err != nil {
		return nil, nil, err
	}
	original, err := json.Marshal(stored)
	if err != nil {
		return nil, nil, err
	}
	var patched []byte
	switch pt {
	case types.MergePatchType:
		patched, err = jsonpatch.MergePatch(original, data)
	case types.JSONPatchType:
		var p jsonpatch.Patch
		if p, err = jsonpatch.DecodePatch(data); err == nil {
			patched, err = p.Apply(original)
		}
	case types.ApplyPatchType:
		patched, err = applyStatus(original, data)
	default:
		return nil, nil, fmt.Errorf("patch type %s is not served", pt)
	}
	if err != nil {
		return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("patch %s: %v", obj.GetName(), err))
	}
	if written, err = decode(patched, stored); err != nil {
		return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("patch %s: %v", obj.GetName(), err))
	}
	return written, stored, nil
}

// applyStatus serves a server-side apply of a status (statuspatch.Apply)
// as far as a benchmark needs: each field applied is set, each condition
// applied replaces the stored one of its type. It keeps no managedFields,
// so it removes nothing an earlier apply of the same manager set and this
// one leaves out: an API server's work, which the benchmarks leave out.
func applyStatus(original, data []byte) ([]byte, error) {
	var stored, applied map[string]any
	if err := json.Unmarshal(original, &stored); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(data, &applied); err != nil {
		return nil, err
	}
	status, _ := stored["status"].(map[string]any)
	if status == nil {
		status = map[string]any{}
		stored["status"] = status
	}
	part, _ := applied["status"].(map[string]any)
	for key, v := range part {
		if key != "conditions" {
			status[key] = v
			continue
		}
		conds, _ := status["conditions"].([]any)
		for _, c := range v.([]any) {
			i := slices.IndexFunc(conds, func(have any) bool {
				return have.(map[string]any)["type"] == c.(map[string]any)["type"]
			})
			if i < 0 {
				conds = append(conds, c)
			} else {
				conds[i] = c
			}
		}
		status["conditions"] = conds
	}
	return json.Marshal(stored)
}

func (c *Cluster) update(obj client.Object) error {
	c.writes.Add(1)
	began := time.Now()
	stored, err := c.Object(obj, client.ObjectKeyFromObject(obj))
	var written client.Object
	if err == nil {
		written = obj.DeepCopyObject().(client.Object)
	}
	c.serving(began)
	if err != nil {
		return err
	}
	return c.commit(obj, stored, written)
}

// commit stores written in place of stored unless it carries another
// resourceVersion than stored (empty: no lock), and copies it into obj.
// The check is the API server's, the rest the operator's: its informers
// store the new object and tell their handlers, and its client reads the
// answer into obj.
func (c *Cluster) commit(obj, stored, written client.Object) error {
	began := time.Now()
	if rv := written.GetResourceVersion(); rv != "" && rv != stored.GetResourceVersion() {
		c.serving(began)
		return apierrors.NewConflict(schema.GroupResource{}, obj.GetName(), fmt.Errorf("the object has been modified"))
	}
	c.serving(began)
	if err := c.Set(written); err != nil {
		return err
	}
	return copyInto(obj, written)
}

// LiveReader returns a reader that serves Gets and Lists as the client
// does, each counted as a read past the cache (LiveReads): what the
// operator's controllers get as the manager's API reader, which reads
// from the API server, a round trip each, and which the cluster answers
// from memory.
func (c *Cluster) LiveReader() client.Reader { return liveReader{m: &memClient{c: c}} }

type liveReader struct{ m *memClient }

func (l liveReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	l.m.c.liveRead("get", obj)
	return l.m.Get(ctx, key, obj, opts...)
}

func (l liveReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	l.m.c.liveRead("list", list)
	return l.m.List(ctx, list, opts...)
}

// liveRead counts a read past the cache, by verb and kind ("get
// MaintenancePool", "list Pod").
func (c *Cluster) liveRead(verb string, obj runtime.Object) {
	kind := fmt.Sprintf("%T", obj)
	if gvk, err := c.gvk(obj); err == nil {
		kind = strings.TrimSuffix(gvk.Kind, "List")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.liveReads[verb+" "+kind]++
}
