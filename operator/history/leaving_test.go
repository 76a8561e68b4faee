package history

import (
	"context"
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

func same(s string) string { return s }

func record(name, node string, phase v1alpha1.Phase, rv string) *v1alpha1.NodeMaintenance {
	return &v1alpha1.NodeMaintenance{
		ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: rv},
		Spec:       v1alpha1.NodeMaintenanceSpec{NodeName: node},
		Status:     v1alpha1.NodeMaintenanceStatus{Phase: phase},
	}
}

// synced lists each store empty as of resourceVersion.
func synced(t *testing.T, h *History, resourceVersion string) {
	t.Helper()
	for _, st := range h.stores {
		if err := st.Replace(nil, resourceVersion); err != nil {
			t.Fatal(err)
		}
	}
}

func pendingNames(h *History) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.pendingLocked(func(string, *leaving) bool { return true })
}

// A record that left the open cache is pending until a store holds it as of
// that moment, or every store has passed that moment; one left before what
// the stores reached is not pending at all.
func TestALeavingRecordIsPendingUntilTheStoresAccountForIt(t *testing.T) {
	h := newWatching(nil, same)
	synced(t, h, "10")

	h.left("before", "n", "", "9")
	if got := pendingNames(h); len(got) != 0 {
		t.Fatalf("a record that left before the stores reached: pending %v", got)
	}

	h.left("a", "n", "", "20")
	h.left("b", "n", "", "21")
	if got := pendingNames(h); len(got) != 2 {
		t.Fatalf("pending %v, want a and b", got)
	}
	// a finished: the Succeeded store has it as of the moment it left.
	if err := h.stores[v1alpha1.PhaseSucceeded].Add(record("a", "n", v1alpha1.PhaseSucceeded, "20")); err != nil {
		t.Fatal(err)
	}
	if got := pendingNames(h); len(got) != 1 || got[0] != "b" {
		t.Fatalf("pending %v, want b", got)
	}
	// b was deleted: only once both stores passed 21 is that known.
	if err := h.stores[v1alpha1.PhaseSucceeded].Bookmark("30"); err != nil {
		t.Fatal(err)
	}
	if got := pendingNames(h); len(got) != 1 {
		t.Fatalf("one store passed b's going, the other not: pending %v, want b", got)
	}
	if err := h.stores[v1alpha1.PhaseFailed].Bookmark("30"); err != nil {
		t.Fatal(err)
	}
	if got := pendingNames(h); len(got) != 0 {
		t.Fatalf("pending %v, want none", got)
	}
}

// A read that concerns a pending record waits for the stores, and asks the
// API server after awaitLeaving: a finished record is read from its answer
// until a store has it, a record gone is not read, and an error fails the
// read rather than read the record as gone.
func TestAReadAsksTheAPIServerAboutARecordTheStoresAreSlowToAccountFor(t *testing.T) {
	h := newWatching(nil, same)
	synced(t, h, "10")
	all := func(string, *leaving) bool { return true }
	ctx := context.Background()

	h.left("finished", "n", "", "20")
	asked := 0
	err := h.await(ctx, all, func(_ context.Context, name string) (*v1alpha1.NodeMaintenance, error) {
		asked++
		return record(name, "n", v1alpha1.PhaseFailed, "20"), nil
	})
	if err != nil || asked != 1 {
		t.Fatalf("await: %v, asked %d times, want once", err, asked)
	}
	if got := h.Node("n"); len(got) != 1 || got[0].Name != "finished" || got[0].Phase() != v1alpha1.PhaseFailed {
		t.Fatalf("node n reads %v, want the finished record", got)
	}
	if err := h.stores[v1alpha1.PhaseFailed].Add(record("finished", "n", v1alpha1.PhaseFailed, "20")); err != nil {
		t.Fatal(err)
	}
	if got := h.Node("n"); len(got) != 1 {
		t.Fatalf("node n reads %d records once the store has it, want 1", len(got))
	}

	h.left("gone", "m", "", "22")
	err = h.await(ctx, all, func(_ context.Context, name string) (*v1alpha1.NodeMaintenance, error) {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: "kmaint.io", Resource: "nodemaintenances"}, name)
	})
	if err != nil || len(h.Node("m")) != 0 || len(pendingNames(h)) != 0 {
		t.Fatalf("a record gone: await %v, node m reads %v, pending %v", err, h.Node("m"), pendingNames(h))
	}

	h.left("unknown", "o", "", "23")
	err = h.await(ctx, all, func(context.Context, string) (*v1alpha1.NodeMaintenance, error) {
		return nil, errors.New("connection refused")
	})
	if err == nil {
		t.Fatal("the API server cannot be asked, and the read succeeds")
	}
	if got := pendingNames(h); len(got) != 1 {
		t.Fatalf("pending %v, want the record still pending", got)
	}
	other := func(name string, _ *leaving) bool { return name != "unknown" }
	if err := h.await(ctx, other, nil); err != nil {
		t.Fatalf("a read the pending record does not concern waits for it: %v", err)
	}
}

// The open cache's records that a new list, or a new watch's initial
// events, no longer hold have left it, as a deletion in a watch has.
func TestWatchingHearsOfEveryRecordThatLeavesTheOpenCache(t *testing.T) {
	h := newWatching(nil, same)
	synced(t, h, "1")
	lists := []*v1alpha1.NodeMaintenanceList{
		{ListMeta: metav1.ListMeta{ResourceVersion: "5"}, Items: []v1alpha1.NodeMaintenance{*record("a", "n", "", "2"), *record("b", "n", "", "3")}},
		{ListMeta: metav1.ListMeta{ResourceVersion: "9"}, Items: []v1alpha1.NodeMaintenance{*record("b", "n", "", "3")}},
	}
	events := make(chan watch.Event, 10)
	lw := h.Watching(&toolscache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			l := lists[0]
			lists = lists[1:]
			return l, nil
		},
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			return watch.NewProxyWatcher(events), nil
		},
	})
	lww := toolscache.ToListerWatcherWithContext(lw)
	ctx := context.Background()
	if _, err := lww.ListWithContext(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := pendingNames(h); len(got) != 0 {
		t.Fatalf("pending after the first list: %v", got)
	}
	if _, err := lww.ListWithContext(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := pendingNames(h); len(got) != 1 || got[0] != "a" {
		t.Fatalf("pending %v, want a, which the second list no longer holds", got)
	}

	w, err := lww.WatchWithContext(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	events <- watch.Event{Type: watch.Added, Object: record("c", "n", "", "10")}
	events <- watch.Event{Type: watch.Deleted, Object: record("b", "n", "", "11")}
	for range 2 {
		<-w.ResultChan()
	}
	if got := pendingNames(h); len(got) != 2 {
		t.Fatalf("pending %v, want a and b", got)
	}
	w.Stop()

	// A new watch from its initial events: c is not among them.
	events = make(chan watch.Event, 10)
	w, err = lww.WatchWithContext(ctx, metav1.ListOptions{SendInitialEvents: ptr.To(true)})
	if err != nil {
		t.Fatal(err)
	}
	end := record("", "", "", "15")
	end.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: "true"}
	events <- watch.Event{Type: watch.Added, Object: record("d", "n", "", "14")}
	events <- watch.Event{Type: watch.Bookmark, Object: end}
	for range 2 {
		<-w.ResultChan()
	}
	if got := pendingNames(h); len(got) != 3 {
		t.Fatalf("pending %v, want a, b and c", got)
	}
	w.Stop()
}
