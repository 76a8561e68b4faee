package checker

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

// Watch feeds the checker every change of Nodes, pools and
// NodeMaintenances until ctx ends. Each kind is followed by a list and a
// watch of the checker's own, watched again from the last version it saw
// when the watch ends (an API server restarted): nothing is missed then.
// When that version is gone (etcd compacted it), the kind is listed again
// and the time since its last event is a blind window: the changes made
// in it were not seen one by one. What the list shows changed is known to
// lie in the window (after the last version seen, at or before its own),
// and held to what that allows (listed.go); a reboot whose approval the
// window hid is excused (see blindAt). Watch returns once every kind was
// listed.
func (c *Checker) Watch(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme) error {
	wc, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("checker client: %w", err)
	}
	return c.watchWith(ctx, wc)
}

// watchWith follows every kind through wc.
func (c *Checker) watchWith(ctx context.Context, wc client.WithWatch) error {
	kinds := []follower{
		{kind: "pools", list: func() client.ObjectList { return &v1alpha1.MaintenancePoolList{} },
			feed: func(obj runtime.Object, deleted bool) {
				if p, ok := obj.(*v1alpha1.MaintenancePool); ok {
					c.Pool(p, deleted)
				}
			},
			relisted: func(l listing, listed, gone []runtime.Object) {
				for i, obj := range slices.Concat(listed, gone) {
					if p, ok := obj.(*v1alpha1.MaintenancePool); ok && l.from == 0 {
						c.Pool(p, i >= len(listed))
					} else if ok {
						c.pool(p, i >= len(listed), &l)
					}
				}
			}},
		{kind: "nodes", list: func() client.ObjectList { return &corev1.NodeList{} },
			feed: func(obj runtime.Object, deleted bool) {
				if n, ok := obj.(*corev1.Node); ok {
					c.Node(n, deleted)
				}
			},
			relisted: func(l listing, listed, gone []runtime.Object) {
				if l.from == 0 {
					for _, n := range nodesOf(listed) {
						c.Node(n, false)
					}
					return
				}
				c.relistNodes(l, nodesOf(listed), nodesOf(gone))
			}},
		{kind: "nodemaintenances", list: func() client.ObjectList { return &v1alpha1.NodeMaintenanceList{} },
			feed: func(obj runtime.Object, deleted bool) {
				if nm, ok := obj.(*v1alpha1.NodeMaintenance); ok {
					c.Maintenance(nm, deleted)
				}
			},
			relisted: func(_ listing, listed, gone []runtime.Object) {
				for i, obj := range slices.Concat(listed, gone) {
					if nm, ok := obj.(*v1alpha1.NodeMaintenance); ok {
						c.Maintenance(nm, i >= len(listed))
					}
				}
			}},
	}
	for i := range kinds {
		f := &kinds[i]
		f.c, f.wc = c, wc
		f.synced = make(chan struct{})
		go f.follow(ctx)
		select {
		case <-f.synced:
		case <-ctx.Done():
			return fmt.Errorf("checker: list %s: %w", f.kind, ctx.Err())
		}
	}
	return nil
}

func nodesOf(objs []runtime.Object) []*corev1.Node {
	var out []*corev1.Node
	for _, obj := range objs {
		if n, ok := obj.(*corev1.Node); ok {
			out = append(out, n)
		}
	}
	return out
}

// follower follows one kind.
type follower struct {
	kind string
	list func() client.ObjectList
	// feed hands the checker a change seen as it came; relisted hands it
	// what a list after a blind window showed (the first list's, too,
	// with l.from 0), and what it no longer showed (gone).
	feed     func(obj runtime.Object, deleted bool)
	relisted func(l listing, listed, gone []runtime.Object)

	c      *Checker
	wc     client.WithWatch
	synced chan struct{}
	// known are the objects of the last list and the watch since, by
	// name, to tell a relist's deletions.
	known map[string]runtime.Object
	// caughtUp is when the follower last knew it had seen every change:
	// its last event, or its watch's end. A watch told its version is
	// gone leaves it where it was: what came since was not seen.
	caughtUp time.Time
}

func (f *follower) follow(ctx context.Context) {
	version := ""
	f.caughtUp = f.c.Now()
	seen := ""
	for ctx.Err() == nil {
		if version == "" {
			v, err := f.relist(ctx, f.caughtUp, seen)
			if err != nil {
				pause(ctx, time.Second)
				continue
			}
			version, seen = v, v
		}
		w, err := f.wc.Watch(ctx, f.list(), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: version, AllowWatchBookmarks: true}})
		if err != nil {
			if apierrors.IsGone(err) || apierrors.IsResourceExpired(err) {
				version = ""
			}
			pause(ctx, time.Second)
			continue
		}
		var gone bool
		version, gone = f.drain(w, version)
		seen = version
		if gone {
			version = ""
		}
	}
}

// drain feeds a watch's events until it ends, and returns the last version
// it saw, to watch again from unless it is gone (a list must be made).
func (f *follower) drain(w watch.Interface, version string) (last string, gone bool) {
	defer w.Stop()
	for ev := range w.ResultChan() {
		switch ev.Type {
		case watch.Error:
			err := apierrors.FromObject(ev.Object)
			return version, apierrors.IsGone(err) || apierrors.IsResourceExpired(err)
		case watch.Bookmark:
			f.caughtUp = f.c.Now()
		default:
			f.feed(ev.Object, ev.Type == watch.Deleted)
			f.caughtUp = f.c.Now()
			if m, err := meta.Accessor(ev.Object); err == nil {
				if ev.Type == watch.Deleted {
					delete(f.known, m.GetName())
				} else {
					f.known[m.GetName()] = ev.Object
				}
			}
		}
		if m, err := meta.Accessor(ev.Object); err == nil && m.GetResourceVersion() != "" {
			version = m.GetResourceVersion()
		}
	}
	// Ended without an error: every change until now was seen.
	f.caughtUp = f.c.Now()
	return version, false
}

// relist lists the kind, feeds what changed since the last list as seen
// at once, and records the window it was blind in: from lastSeen on, after
// version seen.
func (f *follower) relist(ctx context.Context, lastSeen time.Time, seen string) (string, error) {
	list := f.list()
	if err := f.wc.List(ctx, list); err != nil {
		return "", err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return "", err
	}
	m, err := meta.ListAccessor(list)
	if err != nil {
		return "", err
	}
	first := f.known == nil
	l := listing{rv: versionOf(m.GetResourceVersion())}
	if !first {
		// What changed was made after the last version seen.
		l.from = versionOf(seen) + 1
	}
	listed := map[string]runtime.Object{}
	var gone []runtime.Object
	for _, obj := range items {
		if m, err := meta.Accessor(obj); err == nil {
			listed[m.GetName()] = obj
		}
	}
	for name, obj := range f.known {
		if _, ok := listed[name]; !ok {
			gone = append(gone, obj)
		}
	}
	f.relisted(l, items, gone)
	f.known = listed
	f.caughtUp = f.c.Now()
	if first {
		close(f.synced)
	} else {
		f.c.blind(f.kind, lastSeen, f.c.Now())
	}
	return m.GetResourceVersion(), nil
}

func pause(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
