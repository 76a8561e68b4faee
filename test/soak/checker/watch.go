package checker

import (
	"context"
	"fmt"
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
// in it were not seen one by one, and the checks that need them (an
// admission's budget, a reboot's approval) are not held to that window
// (see blindAt). Watch returns once every kind was listed.
func (c *Checker) Watch(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme) error {
	wc, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("checker client: %w", err)
	}
	kinds := []follower{
		{kind: "pools", list: func() client.ObjectList { return &v1alpha1.MaintenancePoolList{} }, feed: func(obj runtime.Object, deleted bool, floor int64) {
			if p, ok := obj.(*v1alpha1.MaintenancePool); ok {
				c.pool(p, deleted, floor)
			}
		}},
		{kind: "nodes", list: func() client.ObjectList { return &corev1.NodeList{} }, feed: func(obj runtime.Object, deleted bool, floor int64) {
			if n, ok := obj.(*corev1.Node); ok {
				c.node(n, deleted, floor > 0)
			}
		}},
		{kind: "nodemaintenances", list: func() client.ObjectList { return &v1alpha1.NodeMaintenanceList{} }, feed: func(obj runtime.Object, deleted bool, _ int64) {
			if nm, ok := obj.(*v1alpha1.NodeMaintenance); ok {
				c.Maintenance(nm, deleted)
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

// follower follows one kind.
type follower struct {
	kind string
	list func() client.ObjectList
	// feed hands an object to the checker; floor is 0 for a change seen
	// as it came, and for one seen in a list after a blind window the
	// lowest version it may have been made at: just after the last the
	// follower saw.
	feed func(obj runtime.Object, deleted bool, floor int64)

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
			version = v
		}
		w, err := f.wc.Watch(ctx, f.list(), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: version, AllowWatchBookmarks: true}})
		if err != nil {
			if apierrors.IsGone(err) || apierrors.IsResourceExpired(err) {
				version = ""
			}
			pause(ctx, time.Second)
			continue
		}
		version = f.drain(w, version)
		if version != "" {
			seen = version
		}
	}
}

// drain feeds a watch's events until it ends, and returns the version to
// watch again from ("" when it is gone and a list must be made).
func (f *follower) drain(w watch.Interface, version string) string {
	defer w.Stop()
	for ev := range w.ResultChan() {
		switch ev.Type {
		case watch.Error:
			if err := apierrors.FromObject(ev.Object); apierrors.IsGone(err) || apierrors.IsResourceExpired(err) {
				return ""
			}
			return version
		case watch.Bookmark:
			f.caughtUp = f.c.Now()
		default:
			f.feed(ev.Object, ev.Type == watch.Deleted, 0)
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
	return version
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
	first := f.known == nil
	floor := int64(0)
	if !first {
		floor = versionOf(seen) + 1
	}
	listed := map[string]runtime.Object{}
	for _, obj := range items {
		m, err := meta.Accessor(obj)
		if err != nil {
			continue
		}
		listed[m.GetName()] = obj
		f.feed(obj, false, floor)
	}
	for name, obj := range f.known {
		if _, ok := listed[name]; !ok {
			f.feed(obj, true, floor)
		}
	}
	f.known = listed
	f.caughtUp = f.c.Now()
	if first {
		close(f.synced)
	} else {
		f.c.blind(f.kind, lastSeen, f.c.Now())
	}
	m, err := meta.ListAccessor(list)
	if err != nil {
		return "", err
	}
	return m.GetResourceVersion(), nil
}

func pause(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
