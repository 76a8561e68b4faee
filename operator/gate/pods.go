package gate

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
)

// A node's pods, the last per-node verdict before its admission. Pods are
// not cached: at thousands of nodes a cluster-wide pod informer would cost
// the operator more memory than everything else it holds. The gate lists
// the pods of a node (one List with a spec.nodeName field selector, served
// from the API server's watch cache: checkPodsOf) only when the node's
// turn comes, that is when the plan would admit it (decide), and at most
// once per BlockingPodInterval per node. A node its pods hold gives its
// turn to the next waiting node; while one is held the pool looks again
// every interval, since nothing else tells it that a pod went away.

// maxPodListsPerReconcile bounds the pod Lists one reconcile makes: nodes
// beyond it wait for the next pass, a second later.
const maxPodListsPerReconcile = 32

func (p podCheck) MadeAt() time.Time { return p.at }

// podPass is what the pod checks of one reconcile's decision share: how
// many Lists they made, and the pods' resource version they list from.
type podPass struct {
	lists int
	since *podsVersion
}

// passHeldByPods checks the pods of each node the plan admits, and reports
// whether one of them holds its node: the node then gives its turn to the
// next, and the plan is made again (decide). When none holds, the plan
// keeps only the nodes whose pods were looked at.
func (r *Reconciler) passHeldByPods(ctx context.Context, st *poolState, pass *podPass) (again bool, wake time.Time) {
	p := &st.admission.plan
	// The planned nodes not looked at lately have their pods listed
	// together: one after another, a wave of 100 admissions waited on 100
	// Lists in turn (seconds each on a busy API server) before the first
	// node was admitted.
	var stale []string
	for _, name := range p.Admit {
		if _, fresh := r.freshPodCheck(st, name); !fresh && pass.lists+len(stale) < maxPodListsPerReconcile {
			stale = append(stale, name)
		}
	}
	pass.lists += len(stale)
	if len(stale) > 0 && pass.since == nil {
		// One read serves every pass: a pass that follows a held node
		// comes within moments of the first.
		pass.since = r.readPodsVersion(ctx)
	}
	checked := r.checkPodsOf(ctx, st, stale, pass.since)
	wakeBy := func(t time.Time) {
		if wake.IsZero() || t.Before(wake) {
			wake = t
		}
	}
	var admit []string
	for _, name := range p.Admit {
		v := st.views[st.index(name)]
		check, fresh := r.freshPodCheck(st, name)
		if !fresh {
			var ok bool
			if check, ok = checked[name]; !ok {
				// Past this reconcile's Lists: its turn comes on the next
				// pass, soon.
				p.Waiting = append(p.Waiting, name)
				wakeBy(st.now.Add(time.Second))
				continue
			}
		}
		v.PodsChecked = true
		if check.optOut != nil {
			hold := podHold(st.pool.Spec.PodOptOuts, v.Held, check, st.now)
			if hold.admit {
				// Held past the pool's maxHold, which says to admit.
				v.Overridden = check.optOut
				admit = append(admit, name)
				continue
			}
			v.OptedOut, v.PodHeld, v.Overdue = hold.optOut, true, hold.overdue
			// Nothing tells the gate that a pod went away: it looks again
			// once the finding is stale, or when the hold runs out.
			wakeBy(check.at.Add(r.BlockingPodInterval))
			if !hold.until.IsZero() {
				wakeBy(hold.until)
			}
			again = true
			continue
		}
		admit = append(admit, name)
	}
	if !again {
		p.Admit = admit
	}
	return again, wake
}

// podListParallelism bounds the Lists of nodes' pods in flight at once.
const podListParallelism = 16

// podsVersionReuse is how old a read of the pods' version a pass may list
// from: one a drain or another pool's pass made within it serves. A pod
// bound to the node in that second may go unseen by the check, as one
// bound between the check and the cordon always could; the drain, listing
// from a version read after the cordon, sees it.
const podsVersionReuse = time.Second

// readPodsVersion reads the pods' current resource version with a
// consistent List of one pod, as drain.PodsVersion does for a drain, or
// takes one read since podsVersionReuse ago: the nodes' pods are then
// listed no older than it, from the API server's watch cache, never from
// etcd (operator/drain/podsince.go says why).
func (r *Reconciler) readPodsVersion(ctx context.Context) *podsVersion {
	version, err := r.PodsVersions.After(ctx, r.PodsVersions.Now().Add(-podsVersionReuse))
	if err != nil {
		return &podsVersion{err: err}
	}
	return &podsVersion{version: version}
}

// readPodsVersionFromPods reads the pods' resource version through Pods.
func (r *Reconciler) readPodsVersionFromPods(ctx context.Context) (string, error) {
	var one corev1.PodList
	if err := r.Pods.List(ctx, &one, client.Limit(1)); err != nil {
		return "", fmt.Errorf("read the resource version of pods: %w", err)
	}
	return one.ResourceVersion, nil
}

// checkPodsOf checks the pods of the nodes, podListParallelism at a time,
// each listed no older than since.
func (r *Reconciler) checkPodsOf(ctx context.Context, st *poolState, nodes []string, since *podsVersion) map[string]podCheck {
	if len(nodes) == 0 {
		return nil
	}
	checks := make([]podCheck, len(nodes))
	var wg sync.WaitGroup
	slots := make(chan struct{}, podListParallelism)
	for i, node := range nodes {
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			checks[i] = r.checkPods(ctx, st, node, since)
		}()
	}
	wg.Wait()
	found := make(map[string]podCheck, len(nodes))
	for i, node := range nodes {
		found[node] = checks[i]
	}
	return found
}

// freshPodCheck returns the node's last pod check when it still stands.
func (r *Reconciler) freshPodCheck(st *poolState, node string) (podCheck, bool) {
	p, ok := r.podChecks.Get(node)
	if !ok || p.pool != st.pool.Name || p.generation != st.pool.Generation || st.now.Sub(p.at) >= r.BlockingPodInterval {
		return podCheck{}, false
	}
	// A node found free is admitted at once; only a hold is kept.
	return p, p.optOut != nil
}

// checkPods lists the node's pods that have not finished, no older than
// since, and says whether any holds it. A List that fails (or a version
// that could not be read) holds the node, as kured does: what cannot be
// seen might be what must not be disrupted.
func (r *Reconciler) checkPods(ctx context.Context, st *poolState, node string, since *podsVersion) podCheck {
	p := podCheck{at: st.now, pool: st.pool.Name, generation: st.pool.Generation}
	var pods corev1.PodList
	err := since.err
	if err == nil {
		err = r.Pods.List(ctx, &pods, &client.ListOptions{
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
		p.optOut = &protocol.OptOut{Reason: v1alpha1.BlockingPodReason,
			Message: fmt.Sprintf("the pods of node %s cannot be listed (%v); it is not admitted until they can", node, err)}
		p.unseen = true
	} else {
		sel := st.admission.podSelector
		if sel == nil {
			sel = labels.Nothing()
		}
		p.optOut = protocol.PodsOptOut(node, pods.Items, sel, st.pool.Spec.PodOptOuts, st.now)
	}
	r.podChecks.Put(node, p, 10*r.BlockingPodInterval)
	return p
}
