package gate

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/operator/gate/plan"
	"github.com/kmaint/kmaint/operator/gate/quorum"
	"github.com/kmaint/kmaint/operator/gate/view"
)

// A control-plane pool (spec.controlPlane) lets one node go at a time
// whatever maxUnavailable says (observe), and admits or approves it only
// while the guard says the cluster keeps its quorum with it down
// (quorum.AtRisk): before an admission, the pool-wide hold QuorumAtRisk
// (decide); before an approval, the drained node waits (act). The etcd
// members are read from the API server when a node would go, not watched:
// the pool looks again every BlockingQueryInterval while it holds.

// guarded reports whether the pool is a control-plane pool.
func (st *poolState) guarded() bool { return st.pool.Spec.ControlPlane != nil }

// quorumAtRisk is why one more node of the control-plane pool must not go
// down now, node being the one to admit or approve (empty: any); empty
// when it may. It reads the etcd members' pods, and asks the pool to look
// again later while it holds.
func (r *Reconciler) quorumAtRisk(ctx context.Context, st *poolState, node string) string {
	f := quorum.Facts{Node: node}
	for _, n := range st.countedNodes() {
		if node == "" || !strings.HasPrefix(n, node+" (") {
			f.Unavailable = append(f.Unavailable, n)
		}
	}
	f.Members, f.ListErr = r.etcdMembers(ctx, st)
	if f.ListErr == nil && len(f.Members) == 0 {
		f.ReadyzErr = errors.New("the operator cannot ask the API server")
		if r.EtcdReady != nil {
			f.ReadyzErr = r.EtcdReady(ctx)
		}
	}
	risk := quorum.AtRisk(f)
	if risk != "" {
		st.wakeAt(st.now.Add(r.BlockingQueryInterval))
	}
	return risk
}

// downOutsideMaintenance names the pool's nodes that are NotReady or
// cordoned by someone else, not in a maintenance of kmaint's: in a
// control-plane pool they hold every admission with reason QuorumAtRisk
// from the start (holdBase), before the budget says so in its own words.
func (st *poolState) downOutsideMaintenance() []string {
	var names []string
	add := func(v *view.Node) {
		if why := plan.UnavailableBecause(v); why == "not Ready" || why == "cordoned" {
			names = append(names, fmt.Sprintf("%s (%s)", v.Node.Name, why))
		}
	}
	for _, v := range st.views {
		if v.UsesBudget() {
			add(v)
		}
	}
	for _, k := range st.members.Rebooting() {
		add(&k.Value.View)
	}
	return names
}

// etcdMembers lists the pods the pool's guard selects as etcd members.
func (r *Reconciler) etcdMembers(ctx context.Context, st *poolState) ([]quorum.Member, error) {
	g := st.pool.Spec.ControlPlane
	ns, err := g.Namespace()
	if err != nil {
		return nil, err
	}
	sel, err := g.Selector().AsSelector()
	if err != nil {
		return nil, fmt.Errorf("etcdSelector: %w", err)
	}
	var pods corev1.PodList
	if err := r.Pods.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, fmt.Errorf("list the pods in %s matching %s: %w", ns, sel, err)
	}
	members := make([]quorum.Member, 0, len(pods.Items))
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			members = append(members, quorum.Member{Pod: p.Name, Node: p.Spec.NodeName})
			continue
		}
		members = append(members, quorum.Member{Pod: p.Name, Node: p.Spec.NodeName, Ready: podReady(p)})
	}
	return members, nil
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
