package memcluster

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/index"
)

// Cluster is the objects, by kind, each kind in an indexer as an
// informer keeps it: a write stores a new object, never changes the one
// stored, so that what a reader holds stays as it read it.
type Cluster struct {
	scheme *runtime.Scheme

	mu     sync.Mutex
	stores map[schema.GroupVersionKind]toolscache.Indexer
	// handlers are told of every change of their kind, after the store
	// holds it, as an informer's are.
	handlers map[schema.GroupVersionKind][]toolscache.ResourceEventHandler
	// version is the last resourceVersion given out.
	version int64
	// served is how long the cluster has spent applying writes as an API
	// server applies them, in nanoseconds: the one part of an event that
	// Events leaves out of the operator's time.
	served atomic.Int64
	// handling is how long the handlers told of changes took, in
	// nanoseconds: the operator's work.
	handling atomic.Int64
	// writes counts the client's writes, and recorded the Events of
	// Recorder.
	writes, recorded atomic.Int64
	// liveReads counts the reads of LiveReader by verb and kind, under mu.
	liveReads map[string]int64
}

// Served is how long the cluster has spent applying the client's writes to
// the stored objects as an API server would: checking a write's
// resourceVersion, and applying a patch to the object (encoding it,
// merging, decoding the result) or taking an update's or a creation's
// object. It is not the operator's work. Building a patch (client.MergeFrom
// encodes the object twice and diffs them), the informers' store and its
// indexes taking the new object, the handlers told of it, and copying the
// written object back to the caller are the operator's, and not in it.
func (c *Cluster) Served() time.Duration { return time.Duration(c.served.Load()) }

// serving counts the time from began as the cluster's.
func (c *Cluster) serving(began time.Time) { c.served.Add(int64(time.Since(began))) }

// Handling is how long the handlers told of changes (Watch,
// AddEventHandler) have taken, all together.
func (c *Cluster) Handling() time.Duration { return time.Duration(c.handling.Load()) }

// Writes is how many writes the client has made: patches, updates,
// creations and deletions, the status's among them.
func (c *Cluster) Writes() int64 { return c.writes.Load() }

// LiveReads is how many reads LiveReader has served, by verb and kind
// ("get MaintenancePool"): each a round trip to an API server in a real
// cluster.
func (c *Cluster) LiveReads() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.liveReads)
}

// Recorded is how many Kubernetes Events Recorder has recorded: each a
// write that the operator's event broadcaster makes apart from the
// reconcile.
func (c *Cluster) Recorded() int64 { return c.recorded.Load() }

// New returns an empty cluster of the scheme's kinds.
func New(scheme *runtime.Scheme) *Cluster {
	return &Cluster{scheme: scheme, stores: map[schema.GroupVersionKind]toolscache.Indexer{},
		handlers: map[schema.GroupVersionKind][]toolscache.ResourceEventHandler{}, liveReads: map[string]int64{}}
}

// fieldIndex names an index as controller-runtime's cache names it.
func fieldIndex(field string) string { return "field:" + field }

// indexValues makes an index's function keep its values as
// controller-runtime's cache keeps them: under the object's namespace, and
// under allNamespaces, so that package cacheread reads either the same way.
func indexValues(values func(obj any) []string) toolscache.IndexFunc {
	return func(obj any) ([]string, error) {
		ns := obj.(client.Object).GetNamespace()
		var out []string
		for _, v := range values(obj) {
			out = append(out, namespacedKey("", v))
			if ns != "" {
				out = append(out, namespacedKey(ns, v))
			}
		}
		return out, nil
	}
}

// allNamespaces is controller-runtime's namespace for an index's values
// across namespaces.
const allNamespaces = "__all_namespaces"

func namespacedKey(ns, v string) string {
	if ns == "" {
		ns = allNamespaces
	}
	return ns + "/" + v
}

func (c *Cluster) store(gvk schema.GroupVersionKind) toolscache.Indexer {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.stores[gvk]
	if ok {
		return s
	}
	indexers := toolscache.Indexers{}
	if gvk.Kind == "NodeMaintenance" {
		for field, values := range index.Fields() {
			indexers[fieldIndex(field)] = indexValues(func(obj any) []string { return values(obj.(*v1alpha1.NodeMaintenance)) })
		}
	}
	if gvk.Kind == "Pod" {
		// What the API server selects pods by for a drain and for the
		// gate's look at a node's pods.
		indexers[fieldIndex("spec.nodeName")] = indexValues(func(obj any) []string { return []string{obj.(*corev1.Pod).Spec.NodeName} })
	}
	s = toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, indexers)
	c.stores[gvk] = s
	return s
}

func (c *Cluster) nextVersion() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.version++
	return strconv.FormatInt(c.version, 10)
}

func (c *Cluster) gvk(obj runtime.Object) (schema.GroupVersionKind, error) {
	gvk, err := apiutil.GVKForObject(obj, c.scheme)
	if err != nil {
		return gvk, fmt.Errorf("kind of %T: %w", obj, err)
	}
	return gvk, nil
}

// Add stores objects as they are, each with a new resourceVersion; the
// cluster owns them from then on.
func (c *Cluster) Add(objs ...client.Object) error {
	for _, obj := range objs {
		gvk, err := c.gvk(obj)
		if err != nil {
			return err
		}
		obj.SetResourceVersion(c.nextVersion())
		if obj.GetUID() == "" {
			obj.SetUID(types.UID("uid-" + obj.GetResourceVersion()))
		}
		if err := c.store(gvk).Add(obj); err != nil {
			return fmt.Errorf("add %s %s: %w", gvk.Kind, obj.GetName(), err)
		}
		c.tell(gvk, nil, obj)
	}
	return nil
}

// tell tells the kind's handlers of a change: old is nil for an object
// added, obj nil for one deleted. Their time counts as Handling.
func (c *Cluster) tell(gvk schema.GroupVersionKind, old, obj any) {
	c.mu.Lock()
	handlers := c.handlers[gvk]
	c.mu.Unlock()
	began := time.Now()
	defer func() { c.handling.Add(int64(time.Since(began))) }()
	for _, h := range handlers {
		switch {
		case old == nil:
			h.OnAdd(obj, false)
		case obj == nil:
			h.OnDelete(old)
		default:
			h.OnUpdate(old, obj)
		}
	}
}

// Set stores obj in place of the object of its name, as another writer
// (a kubelet, a daemon) would: with a new resourceVersion, whatever it
// carried.
func (c *Cluster) Set(obj client.Object) error {
	gvk, err := c.gvk(obj)
	if err != nil {
		return err
	}
	obj.SetResourceVersion(c.nextVersion())
	store := c.store(gvk)
	old, found, err := store.Get(obj)
	if err != nil {
		return err
	}
	if err := store.Update(obj); err != nil {
		return err
	}
	if !found {
		old = nil
	}
	c.tell(gvk, old, obj)
	return nil
}

// remove deletes the stored object obj.
func (c *Cluster) remove(gvk schema.GroupVersionKind, obj client.Object) error {
	if err := c.store(gvk).Delete(obj); err != nil {
		return err
	}
	c.tell(gvk, obj, nil)
	return nil
}

// Object returns the stored object of the kind of example and key; the
// caller must not change it (Set a copy).
func (c *Cluster) Object(example client.Object, key client.ObjectKey) (client.Object, error) {
	gvk, err := c.gvk(example)
	if err != nil {
		return nil, err
	}
	item, ok, err := c.store(gvk).GetByKey(storeKey(key))
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: gvk.Group, Resource: strings.ToLower(gvk.Kind) + "s"}, key.Name)
	}
	return item.(client.Object), nil
}

func storeKey(key client.ObjectKey) string {
	if key.Namespace == "" {
		return key.Name
	}
	return key.Namespace + "/" + key.Name
}

// copyInto sets out to a deep copy of in, both of one type.
func copyInto(out client.Object, in runtime.Object) error {
	src := reflect.ValueOf(in.DeepCopyObject())
	dst := reflect.ValueOf(out)
	if src.Type() != dst.Type() {
		return fmt.Errorf("a %s cannot be read into a %s", src.Type(), dst.Type())
	}
	dst.Elem().Set(src.Elem())
	return nil
}

// Informers returns the cache.Informers whose stores the controllers read
// in place (package cacheread); only GetInformer is served, and of an
// informer its store and AddEventHandler.
func (c *Cluster) Informers() cache.Informers { return informers{c: c} }

type informers struct {
	cache.Informers
	c *Cluster
}

func (i informers) GetInformer(_ context.Context, obj client.Object, _ ...cache.InformerGetOption) (cache.Informer, error) {
	gvk, err := i.c.gvk(obj)
	if err != nil {
		return nil, err
	}
	return informer{store: i.c.store(gvk), c: i.c, gvk: gvk}, nil
}

type informer struct {
	cache.Informer
	store toolscache.Indexer
	c     *Cluster
	gvk   schema.GroupVersionKind
}

// AddEventHandler has handler told of every change of the kind from now
// on, in the writer's goroutine, after the store holds it.
func (i informer) AddEventHandler(handler toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	i.c.mu.Lock()
	defer i.c.mu.Unlock()
	i.c.handlers[i.gvk] = append(i.c.handlers[i.gvk], handler)
	return nil, nil
}

func (i informer) GetStore() toolscache.Store { return i.store }

func (i informer) GetIndexer() toolscache.Indexer { return i.store }

// decode turns JSON into a new object of the kind of like.
func decode(data []byte, like runtime.Object) (client.Object, error) {
	out := reflect.New(reflect.TypeOf(like).Elem()).Interface().(client.Object)
	if err := json.Unmarshal(data, out); err != nil {
		return nil, err
	}
	return out, nil
}
