package history

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

// A record leaves the open cache when it finishes and when it is deleted;
// the API server says which in neither case (a record that stops matching
// a watch's field selector comes as a deletion, with its content from
// before). The history hears of each (Watching) and holds it as leaving
// until a store accounts for it: a store holds it as of the moment it left
// (it finished), or every store has reached that moment without it (it was
// deleted, or finished and was deleted since). A read that concerns a
// leaving record waits for that (await), a moment as a rule, since both
// watches are fed by one API server; and asks the API server, when the
// history's watches are slow or a deletion leaves no trace in them.

// awaitLeaving bounds how long a read waits for the history's watches to
// account for a record that left the open cache, before it asks the API
// server.
const awaitLeaving = 2 * time.Second

// leaving is a record that left the open cache at resourceVersion.
type leaving struct {
	node, policy    string
	resourceVersion string
	// record is the finished record, once the API server said it is one.
	record *Record
}

// left notes that the open cache let the record of name, node and policy go
// at resourceVersion.
func (h *History) left(name, node, policy, resourceVersion string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	l := &leaving{node: h.intern(node), policy: h.intern(policy), resourceVersion: resourceVersion}
	if !h.accounted(name, l) {
		h.leaving[name] = l
	}
}

// storeChanged forgets the leaving records the stores now account for, and
// wakes the reads that wait.
func (h *History) storeChanged() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for name, l := range h.leaving {
		if h.accounted(name, l) {
			delete(h.leaving, name)
		}
	}
	close(h.changed)
	h.changed = make(chan struct{})
}

// accounted says whether the stores account for l; h.mu is held.
func (h *History) accounted(name string, l *leaving) bool {
	rv := l.resourceVersion
	if l.record != nil {
		rv = l.record.ResourceVersion
	}
	all := true
	for _, st := range h.stores {
		if st.holds(name, rv) {
			return true
		}
		all = all && st.hasReached(rv)
	}
	return all
}

// getter reads one NodeMaintenance from the API server.
type getter func(ctx context.Context, name string) (*v1alpha1.NodeMaintenance, error)

// await returns once no record that left the open cache and that concerns
// a read (concerns) is unaccounted for: the stores account for it, or the
// API server, asked with get after awaitLeaving, said it finished (it is
// read from here until a store has it) or is gone.
func (h *History) await(ctx context.Context, concerns func(name string, l *leaving) bool, get getter) error {
	timer := time.NewTimer(awaitLeaving)
	defer timer.Stop()
	for {
		h.mu.Lock()
		pending := h.pendingLocked(concerns)
		changed := h.changed
		h.mu.Unlock()
		if len(pending) == 0 {
			return nil
		}
		select {
		case <-changed:
			continue
		case <-ctx.Done():
			return fmt.Errorf("wait for the history to have NodeMaintenance %s: %w", pending[0], ctx.Err())
		case <-timer.C:
		}
		var errs []error
		for _, name := range pending {
			errs = append(errs, h.ask(ctx, name, get))
		}
		return errors.Join(errs...)
	}
}

// pendingLocked names the unaccounted leaving records concerns picks; h.mu
// is held.
func (h *History) pendingLocked(concerns func(string, *leaving) bool) []string {
	var out []string
	for name, l := range h.leaving {
		if l.record == nil && concerns(name, l) {
			out = append(out, name)
		}
	}
	return out
}

// ask asks the API server about a leaving record the stores have not
// accounted for in time.
func (h *History) ask(ctx context.Context, name string, get getter) error {
	nm, err := get(ctx, name)
	switch {
	case apierrors.IsNotFound(err):
		nm = nil
	case err != nil:
		return fmt.Errorf("NodeMaintenance %s left the cache of open records, and the history does not have it yet: %w", name, err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	l := h.leaving[name]
	if l == nil {
		return nil // accounted for meanwhile
	}
	if nm == nil || nm.Unreadable() != nil || !nm.Status.Phase.Done() {
		// Gone; or open again, and back in the open cache; or no longer
		// readable, and its own watch brings it.
		delete(h.leaving, name)
		return nil
	}
	l.record = newRecord(nm, h.intern)
	if h.accounted(name, l) {
		delete(h.leaving, name)
	}
	return nil
}

// withFound adds to out the records the API server said finished that match
// accepts and that no store holds yet (out holds what the stores do).
func (h *History) withFound(out []*Record, match func(*Record) bool) []*Record {
	h.mu.Lock()
	defer h.mu.Unlock()
	for name, l := range h.leaving {
		if l.record == nil || !match(l.record) {
			continue
		}
		held := false
		for _, st := range h.stores {
			held = held || st.get(name) != nil
		}
		if !held {
			out = append(out, l.record)
		}
	}
	return out
}

// Watching returns the open cache's ListerWatcher lw, telling the history
// of each record that leaves what it lists and watches: a deletion in the
// watch, or a record the cache held that a new list or a new watch's
// initial events no longer hold. It is told before the cache lets the
// record go.
func (h *History) Watching(lw toolscache.ListerWatcher) toolscache.ListerWatcher {
	t := &leaveTracker{h: h, held: map[string]heldRecord{}}
	inner := toolscache.ToListerWatcherWithContext(lw)
	return &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			list, err := inner.ListWithContext(ctx, opts)
			if err != nil {
				return list, err
			}
			return list, t.listed(opts, list)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			w, err := inner.WatchWithContext(ctx, opts)
			if err != nil {
				return w, err
			}
			initial := opts.SendInitialEvents != nil && *opts.SendInitialEvents
			return t.watch(w, initial), nil
		},
	}
}

// heldRecord is what the open cache holds of a record, as far as the
// history needs to know.
type heldRecord struct{ node, policy string }

// leaveTracker follows what the open cache holds, from what it lists and
// watches, for History.Watching. The cache's Reflector lists and watches
// one at a time.
type leaveTracker struct {
	h *History

	mu   sync.Mutex
	held map[string]heldRecord
	// listing are the records of a list read in pages so far.
	listing map[string]heldRecord
}

func heldOf(nm *v1alpha1.NodeMaintenance) heldRecord {
	return heldRecord{node: nm.Spec.NodeName, policy: nm.Spec.Policy}
}

// listed takes a list (or a page of one) the cache is given.
func (t *leaveTracker) listed(opts metav1.ListOptions, obj runtime.Object) error {
	list, ok := obj.(*v1alpha1.NodeMaintenanceList)
	if !ok {
		return fmt.Errorf("history: the open cache lists %T, not NodeMaintenances", obj)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if opts.Continue == "" {
		t.listing = map[string]heldRecord{}
	}
	for i := range list.Items {
		t.listing[list.Items[i].Name] = heldOf(&list.Items[i])
	}
	if list.Continue == "" {
		t.replace(t.listing, list.ResourceVersion)
		t.listing = nil
	}
	return nil
}

// replace makes now what the cache holds, as of resourceVersion; t.mu is
// held.
func (t *leaveTracker) replace(now map[string]heldRecord, resourceVersion string) {
	for name, r := range t.held {
		if _, ok := now[name]; !ok {
			t.h.left(name, r.node, r.policy, resourceVersion)
		}
	}
	t.held = now
}

// watch passes w's events on, following what they hold and let go.
func (t *leaveTracker) watch(w watch.Interface, initial bool) watch.Interface {
	out := &trackedWatch{Interface: w, events: make(chan watch.Event), stop: make(chan struct{})}
	var initialEvents map[string]heldRecord
	if initial {
		initialEvents = map[string]heldRecord{}
	}
	go func() {
		defer close(out.events)
		for e := range w.ResultChan() {
			initialEvents = t.event(e, initialEvents)
			select {
			case out.events <- e:
			case <-out.stop:
				return
			}
		}
	}()
	return out
}

// event follows one event of a watch; initialEvents, while not nil, are the
// records of a watch's initial events so far. It returns them, nil once they
// end.
func (t *leaveTracker) event(e watch.Event, initialEvents map[string]heldRecord) map[string]heldRecord {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e.Type == watch.Bookmark {
		m, err := meta.Accessor(e.Object)
		if initialEvents != nil && err == nil && m.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true" {
			t.replace(initialEvents, m.GetResourceVersion())
			return nil
		}
		return initialEvents
	}
	nm, ok := e.Object.(*v1alpha1.NodeMaintenance)
	if !ok {
		return initialEvents
	}
	switch e.Type {
	case watch.Added, watch.Modified:
		if initialEvents != nil {
			initialEvents[nm.Name] = heldOf(nm)
			return initialEvents
		}
		t.held[nm.Name] = heldOf(nm)
	case watch.Deleted:
		delete(t.held, nm.Name)
		t.h.left(nm.Name, nm.Spec.NodeName, nm.Spec.Policy, nm.ResourceVersion)
	}
	return initialEvents
}

// trackedWatch is a watch whose events pass through a leaveTracker.
type trackedWatch struct {
	watch.Interface
	events chan watch.Event
	stop   chan struct{}
	once   sync.Once
}

func (w *trackedWatch) ResultChan() <-chan watch.Event { return w.events }

func (w *trackedWatch) Stop() {
	w.once.Do(func() { close(w.stop) })
	w.Interface.Stop()
}
