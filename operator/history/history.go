package history

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

// History holds the cluster's finished NodeMaintenances as Records. It
// watches the records of each finished phase (a field selector takes one
// value per field). The open cache watches the others: a record that
// finishes leaves the one watch and joins the other, each at its own pace,
// and must never be missing from both. So History also hears of each
// record that leaves the open cache (Watching), and a read that concerns
// one waits until the history has accounted for it (see leaving.go).
type History struct {
	stores   map[v1alpha1.Phase]*store
	watchers map[v1alpha1.Phase]toolscache.ListerWatcher
	intern   func(string) string

	mu sync.Mutex
	// leaving are the records the open cache let go of that the stores
	// have not accounted for yet; changed is closed, and made anew, when
	// a store changes.
	leaving map[string]*leaving
	changed chan struct{}
}

// finishedPhases are the phases History holds.
var finishedPhases = []v1alpha1.Phase{v1alpha1.PhaseSucceeded, v1alpha1.PhaseFailed}

// Open selects the NodeMaintenances not finished, for the open cache. It
// needs status.phase to be a selectable field of the CRD, which Kubernetes
// 1.31 and later read (1.30 with the CustomResourceFieldSelectors feature
// gate).
func Open() fields.Selector {
	var not []fields.Selector
	for _, phase := range finishedPhases {
		not = append(not, fields.OneTermNotEqualSelector("status.phase", string(phase)))
	}
	return fields.AndSelectors(not...)
}

// New returns a History that watches the API server cfg and httpClient
// reach, decoding with scheme; intern shares the records' strings. Start
// runs it.
func New(cfg *rest.Config, httpClient *http.Client, scheme *runtime.Scheme, intern func(string) string) (*History, error) {
	gvk := v1alpha1.GroupVersion.WithKind("NodeMaintenance")
	rc, err := apiutil.RESTClientForGVK(gvk, true, false, cfg, serializer.NewCodecFactory(scheme), httpClient)
	if err != nil {
		return nil, fmt.Errorf("history: client for NodeMaintenances: %w", err)
	}
	watchers := map[v1alpha1.Phase]toolscache.ListerWatcher{}
	for _, phase := range finishedPhases {
		selector := fields.OneTermEqualSelector("status.phase", string(phase)).String()
		watchers[phase] = toolscache.NewFilteredListWatchFromClient(rc, "nodemaintenances", metav1.NamespaceAll, func(o *metav1.ListOptions) {
			o.FieldSelector = selector
		})
	}
	return newWatching(watchers, intern), nil
}

// newWatching returns a History that watches each finished phase's records
// through watchers.
func newWatching(watchers map[v1alpha1.Phase]toolscache.ListerWatcher, intern func(string) string) *History {
	h := &History{
		stores:   map[v1alpha1.Phase]*store{},
		watchers: watchers,
		intern:   intern,
		leaving:  map[string]*leaving{},
		changed:  make(chan struct{}),
	}
	for _, phase := range finishedPhases {
		h.stores[phase] = newStore(intern, h.storeChanged)
	}
	return h
}

// Start watches until ctx ends; it is a manager.Runnable.
func (h *History) Start(ctx context.Context) error {
	var wg sync.WaitGroup
	for phase, st := range h.stores {
		r := toolscache.NewReflectorWithOptions(h.watchers[phase], &v1alpha1.NodeMaintenance{}, st,
			toolscache.ReflectorOptions{Name: "history-" + string(phase)})
		wg.Go(func() { r.RunWithContext(ctx) })
	}
	wg.Wait()
	return nil
}

// NeedLeaderElection is false: like the manager's cache, the history is
// read in as soon as the operator starts, ready when it leads.
func (h *History) NeedLeaderElection() bool { return false }

// WaitForSync waits until each phase's records have been listed.
func (h *History) WaitForSync(ctx context.Context) error {
	for phase, st := range h.stores {
		select {
		case <-st.synced:
		case <-ctx.Done():
			return fmt.Errorf("wait for the %s NodeMaintenances to be listed: %w", phase, ctx.Err())
		}
	}
	return nil
}

// Synced says whether WaitForSync would return at once.
func (h *History) Synced() bool {
	for _, st := range h.stores {
		select {
		case <-st.synced:
		default:
			return false
		}
	}
	return true
}

// Count returns how many readable records there are.
func (h *History) Count() int {
	n := 0
	for _, r := range h.All() {
		if r.Readable() {
			n++
		}
	}
	return n
}

// Unreadable returns the records that cannot be read.
func (h *History) Unreadable() []*Record {
	var out []*Record
	for _, r := range h.Node("") {
		if !r.Readable() {
			out = append(out, r)
		}
	}
	return out
}

// Nodes returns the nodes that have readable records.
func (h *History) Nodes() []string {
	seen := map[string]bool{}
	for _, r := range h.All() {
		if r.Readable() {
			seen[r.Node] = true
		}
	}
	return slices.Collect(maps.Keys(seen))
}

// Get returns the record named, nil when there is none.
func (h *History) Get(name string) *Record {
	for _, st := range h.stores {
		if rec := st.get(name); rec != nil {
			return rec
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if l := h.leaving[name]; l != nil {
		return l.record
	}
	return nil
}

// Node returns the records of one node.
func (h *History) Node(node string) []*Record {
	var out []*Record
	for _, st := range h.stores {
		st.read(func(_ map[string]*Record, byNode map[string][]*Record) { out = append(out, byNode[node]...) })
	}
	return h.withFound(out, func(r *Record) bool { return r.Node == node })
}

// All returns every record.
func (h *History) All() []*Record {
	var out []*Record
	for _, st := range h.stores {
		st.read(func(records map[string]*Record, _ map[string][]*Record) {
			out = slices.Grow(out, len(records))
			for _, r := range records {
				out = append(out, r)
			}
		})
	}
	return h.withFound(out, func(*Record) bool { return true })
}
