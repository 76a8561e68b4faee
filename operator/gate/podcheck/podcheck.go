package podcheck

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/drain"
	"github.com/kmaint/kmaint/operator/recent"
)

// MaxListsPerReconcile bounds the pod Lists one reconcile makes: nodes
// beyond it wait for the next pass, a second later.
const MaxListsPerReconcile = 32

// listParallelism bounds the Lists of nodes' pods in flight at once.
const listParallelism = 16

// versionReuse is how old a read of the pods' version a pass may list
// from: one a drain or another pool's pass made within it serves. A pod
// bound to the node in that second may go unseen by the check, as one
// bound between the check and the cordon always could; the drain, listing
// from a version read after the cordon, sees it.
const versionReuse = time.Second

// Check is what a node's pods said when its turn last came.
type Check struct {
	At time.Time
	// Pool and Generation are the pool and its spec the check was made
	// for: another blockingPodSelector asks again.
	Pool       string
	Generation int64
	// OptOut is what holds the node; nil when nothing does.
	OptOut *protocol.OptOut
	// Unseen is true when the pods could not be listed: what holds the
	// node then is not an opt-out that podOptOuts.maxHold may set aside.
	Unseen bool
}

// MadeAt is when the check was made: a recent.Cache forgets old ones.
func (c Check) MadeAt() time.Time { return c.At }

// Pool is what one reconcile checks its pool's nodes' pods for.
type Pool struct {
	Name       string
	Generation int64
	// Selector is the pool's blockingPodSelector, parsed; nil when it has
	// none (no pod matches then).
	Selector labels.Selector
	// OptOuts are the pool's podOptOuts, which say which pods' opt-outs
	// count.
	OptOuts *v1alpha1.PodOptOuts
	// Now is the reconcile's time, by the gate's clock.
	Now time.Time
}

// Pass is what the pod checks of one reconcile's decision share: how many
// Lists they made, and the pods' resource version they list from. The zero
// Pass begins one.
type Pass struct {
	lists int
	since *version
}

// version is a read of the pods' resource version, or why it failed.
type version struct {
	version string
	err     error
}

// Checker lists nodes' pods and keeps, between reconciles, what each
// node's said when its turn last came. One serves every pool, from
// concurrent reconciles.
type Checker struct {
	pods     client.Reader
	versions *drain.Versions
	interval time.Duration
	checks   *recent.Cache[string, Check]
}

// New returns a Checker that lists pods through pods, no older than the
// versions that versions reads (nil reads them through pods), and finds a
// hold stale once interval has passed.
func New(pods client.Reader, versions *drain.Versions, interval time.Duration) *Checker {
	c := &Checker{pods: pods, versions: versions, interval: interval, checks: recent.New[string, Check]()}
	if c.versions == nil {
		c.versions = drain.NewVersionsReading(c.readVersionFromPods)
	}
	return c
}

// Fresh returns the node's last check when it still stands.
func (c *Checker) Fresh(node string, p Pool) (Check, bool) {
	check, ok := c.checks.Get(node)
	if !ok || check.Pool != p.Name || check.Generation != p.Generation || p.Now.Sub(check.At) >= c.interval {
		return Check{}, false
	}
	// A node found free is admitted at once; only a hold is kept.
	return check, check.OptOut != nil
}

// ListStale checks the pods of those of nodes whose last check does not
// stand (Fresh), as many as the pass's Lists left allow, and returns what
// each said by node; the nodes past them are not checked.
func (c *Checker) ListStale(ctx context.Context, pass *Pass, p Pool, nodes []string) map[string]Check {
	// The nodes not looked at lately have their pods listed together: one
	// after another, a wave of 100 admissions waited on 100 Lists in turn
	// (seconds each on a busy API server) before the first node was
	// admitted.
	var stale []string
	for _, name := range nodes {
		if _, fresh := c.Fresh(name, p); !fresh && pass.lists+len(stale) < MaxListsPerReconcile {
			stale = append(stale, name)
		}
	}
	pass.lists += len(stale)
	if len(stale) == 0 {
		return nil
	}
	if pass.since == nil {
		// One read serves every pass: a pass that follows a held node
		// comes within moments of the first.
		pass.since = c.readVersion(ctx)
	}
	return c.checkAll(ctx, p, stale, pass.since)
}

// readVersion reads the pods' current resource version with a consistent
// List of one pod, as drain.PodsVersion does for a drain, or takes one read
// since versionReuse ago: the nodes' pods are then listed no older than
// it, from the API server's watch cache, never from etcd
// (operator/drain/podsince.go says why).
func (c *Checker) readVersion(ctx context.Context) *version {
	v, err := c.versions.After(ctx, c.versions.Now().Add(-versionReuse))
	if err != nil {
		return &version{err: err}
	}
	return &version{version: v}
}

// readVersionFromPods reads the pods' resource version through pods.
func (c *Checker) readVersionFromPods(ctx context.Context) (string, error) {
	var one corev1.PodList
	if err := c.pods.List(ctx, &one, client.Limit(1)); err != nil {
		return "", fmt.Errorf("read the resource version of pods: %w", err)
	}
	return one.ResourceVersion, nil
}

// checkAll checks the pods of the nodes, listParallelism at a time, each
// listed no older than since.
func (c *Checker) checkAll(ctx context.Context, p Pool, nodes []string, since *version) map[string]Check {
	checks := make([]Check, len(nodes))
	var wg sync.WaitGroup
	slots := make(chan struct{}, listParallelism)
	for i, node := range nodes {
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			checks[i] = c.check(ctx, p, node, since)
		}()
	}
	wg.Wait()
	found := make(map[string]Check, len(nodes))
	for i, node := range nodes {
		found[node] = checks[i]
	}
	return found
}

// check lists the node's pods that have not finished, no older than since,
// and says whether any holds it. A List that fails (or a version that
// could not be read) holds the node, as kured does: what cannot be seen
// might be what must not be disrupted.
func (c *Checker) check(ctx context.Context, p Pool, node string, since *version) Check {
	check := Check{At: p.Now, Pool: p.Name, Generation: p.Generation}
	var pods corev1.PodList
	err := since.err
	if err == nil {
		err = c.pods.List(ctx, &pods, &client.ListOptions{
			FieldSelector: fields.AndSelectors(
				fields.OneTermEqualSelector("spec.nodeName", node),
				fields.OneTermNotEqualSelector("status.phase", string(corev1.PodSucceeded)),
				fields.OneTermNotEqualSelector("status.phase", string(corev1.PodFailed)),
			),
			Raw: &metav1.ListOptions{ResourceVersion: since.version, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan},
		})
	}
	if err != nil {
		ctrl.LoggerFrom(ctx).Info("Pods of a node cannot be listed; it is not admitted", "node", node, "error", err.Error())
		check.OptOut = &protocol.OptOut{Reason: v1alpha1.BlockingPodReason,
			Message: fmt.Sprintf("the pods of node %s cannot be listed (%v); it is not admitted until they can", node, err)}
		check.Unseen = true
	} else {
		sel := p.Selector
		if sel == nil {
			sel = labels.Nothing()
		}
		check.OptOut = protocol.PodsOptOut(node, pods.Items, sel, p.OptOuts, p.Now)
	}
	c.checks.Put(node, check, 10*c.interval)
	return check
}
