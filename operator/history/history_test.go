package history_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/history"
	"github.com/kmaint/kmaint/operator/index"
	"github.com/kmaint/kmaint/test/harness"
)

const timeout = 60 * time.Second

// reader is what the operator's controllers read NodeMaintenances through:
// the open cache, selected by history.Open and watching through the
// history's Watching, and the history.
type reader struct {
	*history.Client
	open client.Reader
}

// start runs a History over the watchers and an open cache beside it, as
// the operator does, until the test ends.
func start(t *testing.T, watchers map[v1alpha1.Phase]toolscache.ListerWatcher) reader {
	t.Helper()
	h := history.NewWatching(watchers, func(s string) string { return s })
	ctx := runUntilTheEnd(t, h.Start)
	r := openCache(t, h)
	if err := h.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	return r
}

// openCache starts an open cache, selected by history.Open and watching
// through h's Watching, until the test ends, and returns the client that
// reads it and h together.
func openCache(t *testing.T, h *history.History) reader {
	t.Helper()
	c, err := cache.New(bed.Config, cache.Options{
		Scheme: bed.Scheme,
		ByObject: map[client.Object]cache.ByObject{
			&v1alpha1.NodeMaintenance{}: {Field: history.Open()},
		},
		NewInformer: func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
			return toolscache.NewSharedIndexInformer(h.Watching(lw), obj, resync, indexers)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := index.Setup(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	ctx := runUntilTheEnd(t, c.Start)
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("the open cache did not sync")
	}
	cl, err := client.New(bed.Config, client.Options{Scheme: bed.Scheme, Cache: &client.CacheOptions{Reader: c}})
	if err != nil {
		t.Fatal(err)
	}
	return reader{Client: &history.Client{Client: cl, History: h, APIReader: bed.Client}, open: c}
}

// runUntilTheEnd runs start until the test ends, and returns the context
// it runs in.
func runUntilTheEnd(t *testing.T, start func(context.Context) error) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return ctx
}

// watchers are the History's watchers of the API server, as history.New
// makes them; hold, when set, holds the Succeeded watch's events while it
// is closed.
func watchers(t *testing.T, hold *valve) map[v1alpha1.Phase]toolscache.ListerWatcher {
	t.Helper()
	hc, err := rest.HTTPClientFor(bed.Config)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := apiutil.RESTClientForGVK(v1alpha1.GroupVersion.WithKind("NodeMaintenance"), true, false, bed.Config, serializer.NewCodecFactory(bed.Scheme), hc)
	if err != nil {
		t.Fatal(err)
	}
	out := map[v1alpha1.Phase]toolscache.ListerWatcher{}
	for _, phase := range []v1alpha1.Phase{v1alpha1.PhaseSucceeded, v1alpha1.PhaseFailed} {
		sel := fields.OneTermEqualSelector("status.phase", string(phase)).String()
		lw := toolscache.NewFilteredListWatchFromClient(rc, "nodemaintenances", metav1.NamespaceAll, func(o *metav1.ListOptions) { o.FieldSelector = sel })
		if phase == v1alpha1.PhaseSucceeded && hold != nil {
			inner := lw
			lw = &toolscache.ListWatch{ListFunc: inner.ListFunc, WatchFunc: func(o metav1.ListOptions) (watch.Interface, error) {
				w, err := inner.WatchFunc(o)
				if err != nil {
					return nil, err
				}
				return hold.wrap(w), nil
			}}
		}
		out[phase] = lw
	}
	return out
}

// valve passes a watch's events while it is open.
type valve struct {
	mu     sync.Mutex
	closed bool
	opened chan struct{}
}

func newValve() *valve { return &valve{opened: make(chan struct{})} }

func (v *valve) close() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.closed, v.opened = true, make(chan struct{})
}

func (v *valve) open() {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed {
		v.closed = false
		close(v.opened)
	}
}

// wait returns a channel closed once the valve is open.
func (v *valve) wait() <-chan struct{} {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.closed {
		done := make(chan struct{})
		close(done)
		return done
	}
	return v.opened
}

func (v *valve) wrap(w watch.Interface) watch.Interface {
	out := make(chan watch.Event)
	stop := make(chan struct{})
	go func() {
		defer close(out)
		for e := range w.ResultChan() {
			select {
			case <-v.wait():
			case <-stop:
				return
			}
			select {
			case out <- e:
			case <-stop:
				return
			}
		}
	}()
	return &valved{Interface: w, out: out, stop: stop}
}

type valved struct {
	watch.Interface
	out  chan watch.Event
	stop chan struct{}
	once sync.Once
}

func (w *valved) ResultChan() <-chan watch.Event { return w.out }
func (w *valved) Stop() {
	w.once.Do(func() { close(w.stop) })
	w.Interface.Stop()
}

func create(t *testing.T, name, node, policy string) {
	t.Helper()
	harness.Create(t, bed, &v1alpha1.NodeMaintenance{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       v1alpha1.NodeMaintenanceSpec{NodeName: node, Reason: "history test", Policy: policy, Source: v1alpha1.SourceAPI},
	})
}

func finish(t *testing.T, name string, phase v1alpha1.Phase, at time.Time) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		nm := &v1alpha1.NodeMaintenance{}
		if err := bed.Client.Get(context.Background(), types.NamespacedName{Name: name}, nm); err != nil {
			return err
		}
		nm.Status.Phase = phase
		nm.Status.RequestID = name + "-id"
		nm.Status.Message = "a message only a person reads"
		nm.Status.PhaseTimes.Set(phase, metav1.NewTime(at))
		return bed.Client.Status().Update(context.Background(), nm)
	})
	if err != nil {
		t.Fatalf("finish %s: %v", name, err)
	}
}

// phases lists the NodeMaintenances opts select through r, by name.
func phases(g Gomega, r client.Reader, opts ...client.ListOption) map[string]v1alpha1.Phase {
	var list v1alpha1.NodeMaintenanceList
	g.Expect(r.List(context.Background(), &list, opts...)).To(Succeed())
	out := map[string]v1alpha1.Phase{}
	for _, nm := range list.Items {
		g.Expect(out).NotTo(HaveKey(nm.Name), "listed twice")
		out[nm.Name] = nm.Status.Phase
	}
	return out
}

// The controllers read a node's open and finished records together, select
// them by node, policy and state as the cache's indexes do, and get a
// finished one by name; of a finished one they read what the operator
// reads of it, not what only a person reads.
func TestTheClientReadsOpenAndFinishedRecordsAsOne(t *testing.T) {
	g := NewWithT(t)
	at := time.Now().Add(-time.Hour).Truncate(time.Second)
	create(t, "hist-open", "hist-a", "")
	create(t, "hist-done", "hist-a", "hist-p")
	create(t, "hist-failed", "hist-a", "")
	create(t, "hist-other", "hist-b", "hist-p")
	finish(t, "hist-done", v1alpha1.PhaseSucceeded, at)
	finish(t, "hist-failed", v1alpha1.PhaseFailed, at)
	finish(t, "hist-other", v1alpha1.PhaseSucceeded, at)
	r := start(t, watchers(t, nil))

	g.Expect(phases(g, r, client.MatchingFields{index.NodeName: "hist-a"})).To(Equal(map[string]v1alpha1.Phase{
		"hist-open": "", "hist-done": v1alpha1.PhaseSucceeded, "hist-failed": v1alpha1.PhaseFailed}))
	g.Expect(phases(g, r.open, client.MatchingFields{index.NodeName: "hist-a"})).To(Equal(map[string]v1alpha1.Phase{"hist-open": ""}),
		"the open cache holds no finished record")
	g.Expect(phases(g, r, client.MatchingFields{index.OpenOnNode: "hist-a"})).To(Equal(map[string]v1alpha1.Phase{"hist-open": ""}),
		"a node's open records, without its history")
	g.Expect(phases(g, r, client.MatchingFields{index.Policy: "hist-p"})).To(Equal(map[string]v1alpha1.Phase{
		"hist-done": v1alpha1.PhaseSucceeded, "hist-other": v1alpha1.PhaseSucceeded}))
	g.Expect(phases(g, r, client.MatchingFields{index.State: index.Open})).To(HaveKey("hist-open"))
	g.Expect(phases(g, r, client.MatchingFields{index.State: index.Open})).NotTo(HaveKey("hist-done"))
	g.Expect(phases(g, r)).To(HaveKey("hist-other"))

	nm := &v1alpha1.NodeMaintenance{}
	g.Expect(r.Get(context.Background(), types.NamespacedName{Name: "hist-done"}, nm)).To(Succeed())
	g.Expect(nm.Spec.NodeName).To(Equal("hist-a"))
	g.Expect(nm.Spec.Policy).To(Equal("hist-p"))
	g.Expect(nm.Spec.Source).To(Equal(v1alpha1.SourceAPI))
	g.Expect(nm.RequestID()).To(Equal("hist-done-id"))
	g.Expect(nm.Status.PhaseTimes.Succeeded.Time.Equal(at)).To(BeTrue(), "finished at %v, want %v", nm.Status.PhaseTimes.Succeeded, at)
	g.Expect(nm.UID).NotTo(BeEmpty())
	g.Expect(nm.ResourceVersion).NotTo(BeEmpty())
	g.Expect(nm.Status.Message).To(BeEmpty(), "kept only what the operator reads")
	g.Expect(nm.Spec.Reason).To(BeEmpty(), "kept only what the operator reads")
	err := r.Get(context.Background(), types.NamespacedName{Name: "hist-none"}, nm)
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "a record that does not exist: %v", err)

	var list v1alpha1.NodeMaintenanceList
	err = r.List(context.Background(), &list, client.MatchingLabels{"a": "b"})
	g.Expect(err).To(MatchError(ContainSubstring("selects by one indexed field or nothing")),
		"a list the history cannot answer fails, and reads no less than asked")
}

// A record that finishes leaves the open cache and comes to the history by
// two watches of the API server, each at its own pace. While the history's
// lags, the record the open cache let go of is read all the same, finished
// (asked of the API server): never missing, as a cooldown that missed the
// node's last reboot would reboot it again at once. A record deleted while
// open is not read at all.
func TestAFinishedRecordIsReadWhileTheHistoryLags(t *testing.T) {
	g := NewWithT(t)
	hold := newValve()
	r := start(t, watchers(t, hold))
	create(t, "lag-a", "lag-node", "lag-p")
	g.Eventually(func(g Gomega) {
		g.Expect(phases(g, r, client.MatchingFields{index.NodeName: "lag-node"})).To(Equal(map[string]v1alpha1.Phase{"lag-a": ""}))
	}).WithTimeout(timeout).Should(Succeed())

	hold.close()
	finish(t, "lag-a", v1alpha1.PhaseSucceeded, time.Now())
	g.Eventually(func(g Gomega) {
		g.Expect(phases(g, r.open, client.MatchingFields{index.NodeName: "lag-node"})).To(BeEmpty())
	}).WithTimeout(timeout).Should(Succeed(), "the open cache lets the finished record go")
	g.Expect(phases(g, r, client.MatchingFields{index.NodeName: "lag-node"})).To(Equal(map[string]v1alpha1.Phase{"lag-a": v1alpha1.PhaseSucceeded}),
		"the history's watch has not delivered the record yet, and it is read all the same")
	g.Expect(phases(g, r, client.MatchingFields{index.Policy: "lag-p"})).To(HaveKeyWithValue("lag-a", v1alpha1.PhaseSucceeded))
	nm := &v1alpha1.NodeMaintenance{}
	g.Expect(r.Get(context.Background(), types.NamespacedName{Name: "lag-a"}, nm)).To(Succeed())
	g.Expect(nm.Status.Phase).To(Equal(v1alpha1.PhaseSucceeded))

	// An open record deleted while the history's watch is held: nothing
	// brings word of it to the history, and it is not read.
	create(t, "lag-b", "lag-node", "")
	g.Eventually(func(g Gomega) {
		g.Expect(phases(g, r.open, client.MatchingFields{index.NodeName: "lag-node"})).To(HaveKey("lag-b"))
	}).WithTimeout(timeout).Should(Succeed())
	g.Expect(bed.Client.Delete(context.Background(), &v1alpha1.NodeMaintenance{ObjectMeta: metav1.ObjectMeta{Name: "lag-b"}})).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(phases(g, r.open, client.MatchingFields{index.NodeName: "lag-node"})).NotTo(HaveKey("lag-b"))
	}).WithTimeout(timeout).Should(Succeed())
	g.Expect(phases(g, r, client.MatchingFields{index.NodeName: "lag-node"})).To(Equal(map[string]v1alpha1.Phase{"lag-a": v1alpha1.PhaseSucceeded}))

	hold.open()
	// Deleted once the history has it: a record read twice, or one
	// read on after it is gone, would show here.
	g.Eventually(func(g Gomega) {
		g.Expect(r.History.Get("lag-a")).NotTo(BeNil())
	}).WithTimeout(timeout).Should(Succeed())
	g.Expect(phases(g, r, client.MatchingFields{index.NodeName: "lag-node"})).To(Equal(map[string]v1alpha1.Phase{"lag-a": v1alpha1.PhaseSucceeded}))
	g.Expect(bed.Client.Delete(context.Background(), nm)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(phases(g, r, client.MatchingFields{index.NodeName: "lag-node"})).To(BeEmpty())
	}).WithTimeout(timeout).Should(Succeed(), "a finished record deleted is gone")
}

// A finished record whose body does not fit the Go type is read as
// unreadable, as the cache would read it: it holds every policy's requests
// and is in no node's list.
func TestAFinishedRecordThatCannotBeReadIsReadAsUnreadable(t *testing.T) {
	g := NewWithT(t)
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(), "kind": "NodeMaintenance",
		"metadata": map[string]any{"name": "hist-unreadable"},
		"spec":     map[string]any{"nodeName": "hist-u", "type": "Reboot", "reason": "x", "source": "API", "ignoreWindows": "yes"},
		"status":   map[string]any{"phase": "Succeeded"},
	}}
	if err := bed.StoreUnchecked(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
	r := start(t, watchers(t, nil))
	var list v1alpha1.NodeMaintenanceList
	g.Expect(r.List(context.Background(), &list, client.MatchingFields{index.State: index.Unreadable})).To(Succeed())
	names := []string{}
	for _, nm := range list.Items {
		g.Expect(nm.Unreadable()).To(HaveOccurred(), nm.Name)
		names = append(names, nm.Name)
	}
	g.Expect(names).To(ContainElement("hist-unreadable"))
	g.Expect(phases(g, r, client.MatchingFields{index.NodeName: "hist-u"})).To(BeEmpty())
	g.Expect(slices.Contains(names, "hist-done")).To(BeFalse())
}

// Before the history is listed, an open record is read as the open cache
// has it, at once: the operator's first reconciles do not wait for a year
// of history. A record the open cache does not hold waits for the history,
// and a read that gives up says what it waited for.
func TestAnOpenRecordIsReadBeforeTheHistoryIsListed(t *testing.T) {
	g := NewWithT(t)
	create(t, "early-open", "early-node", "")
	never := history.NewWatching(map[v1alpha1.Phase]toolscache.ListerWatcher{}, func(s string) string { return s })
	r := openCache(t, never)

	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	nm := &v1alpha1.NodeMaintenance{}
	g.Expect(r.Get(ctx, types.NamespacedName{Name: "early-open"}, nm)).To(Succeed())
	g.Expect(nm.Spec.NodeName).To(Equal("early-node"))

	// The open cache answers from memory: the short wait can only run out
	// in the history's.
	short, cancelShort := context.WithTimeout(context.Background(), time.Second)
	defer cancelShort()
	err := r.Get(short, types.NamespacedName{Name: "early-none"}, nm)
	g.Expect(err).To(MatchError(ContainSubstring("NodeMaintenances to be listed")))
	g.Expect(apierrors.IsNotFound(err)).To(BeFalse(), "not found is not known until the history is listed")
}
