package policy

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/index"
)

// facts is what one reconcile reads off the cluster for a policy. It reads
// the NodeMaintenances it needs through the cache's indexes: the open ones,
// and the history of the nodes the policy asks about (the nodes that meet
// the trigger), so that a reconcile costs what the policy touches, not the
// cluster's whole reboot history. A monthly schedule over 5000 nodes owns
// 60,000 records after a year; only a Prometheus policy, whose outcomes
// report its last reboot of every node, reads all of its own. None of
// them is copied out of the cache: a reconcile only reads them.
type facts struct {
	// nodes are all nodes; selected the names the policy's selector picks.
	// selector is that selector, parsed: a fire lists with it (fire.go).
	selector labels.Selector
	nodes    []corev1.Node
	selected map[string]bool
	// open holds nodes with an open request of any source.
	open map[string]bool
	// ownOpen counts this policy's open requests.
	ownOpen int
	// ownDone is this policy's latest succeeded request per node; read
	// only for a Prometheus policy (see outcomes).
	ownDone map[string]*v1alpha1.NodeMaintenance
	// boot is each node's current boot ID.
	boot map[string]string
	// unreadable says which NodeMaintenances cannot be read; while there
	// are some, the policy raises nothing.
	unreadable []string

	// history lists a node's NodeMaintenances, shared with the cache: it
	// is read, never changed. nodeHistory calls it the first time it is
	// asked about a node.
	history   func(node string) ([]v1alpha1.NodeMaintenance, error)
	histories map[string][]v1alpha1.NodeMaintenance
	reboots   map[string]time.Time
	// futureTime reports a completion time that lies past the operator's
	// clock, which lastReboot does not believe.
	futureTime func(nm *v1alpha1.NodeMaintenance)
	// err is the first failure to read a node's history.
	err error
}

func (r *Reconciler) observe(ctx context.Context, p *v1alpha1.RebootPolicy) (*facts, error) {
	sel := labels.Everything()
	if p.Spec.NodeSelector != nil {
		var err error
		if sel, err = metav1.LabelSelectorAsSelector(p.Spec.NodeSelector); err != nil {
			return nil, &specError{field: "spec.nodeSelector", err: err}
		}
	}
	// Every list below is read, never changed, so none is copied out of
	// the cache: the policy reconciles on every request's phase change, and
	// copies of thousands of Nodes each time would cost more than the
	// evaluation.
	var nodes corev1.NodeList
	if err := r.List(ctx, &nodes, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	var open, unreadable v1alpha1.NodeMaintenanceList
	for _, l := range []struct {
		list  *v1alpha1.NodeMaintenanceList
		value string
	}{
		{&open, index.Open},
		{&unreadable, index.Unreadable},
	} {
		if err := r.List(ctx, l.list, client.MatchingFields{index.State: l.value}, client.UnsafeDisableDeepCopy); err != nil {
			return nil, fmt.Errorf("list node maintenances by %s %s: %w", index.State, l.value, err)
		}
	}
	f := &facts{
		nodes:     nodes.Items,
		selector:  sel,
		selected:  map[string]bool{},
		open:      map[string]bool{},
		ownDone:   map[string]*v1alpha1.NodeMaintenance{},
		boot:      make(map[string]string, len(nodes.Items)),
		histories: map[string][]v1alpha1.NodeMaintenance{},
		reboots:   map[string]time.Time{},
		history: func(node string) ([]v1alpha1.NodeMaintenance, error) {
			var list v1alpha1.NodeMaintenanceList
			err := r.List(ctx, &list, client.MatchingFields{index.NodeName: node}, client.UnsafeDisableDeepCopy)
			return list.Items, err
		},
		futureTime: func(nm *v1alpha1.NodeMaintenance) {
			r.Recorder.Eventf(nm, nil, corev1.EventTypeWarning, v1alpha1.FutureTimeReason, "Cooldown",
				"status.phaseTimes.succeeded (%s) lies more than %s past the operator's clock; cooldowns count from the record's creation (%s) instead",
				nm.Status.PhaseTimes.Succeeded.UTC().Format(time.RFC3339), v1alpha1.MaxClockSkew, nm.CreationTimestamp.UTC().Format(time.RFC3339))
		},
	}
	for i := range nodes.Items {
		f.boot[nodes.Items[i].Name] = protocol.BootID(&nodes.Items[i])
		if sel.Matches(labels.Set(nodes.Items[i].Labels)) {
			f.selected[nodes.Items[i].Name] = true
		}
	}
	for i := range open.Items {
		nm := &open.Items[i]
		f.open[nm.Spec.NodeName] = true
		if nm.Spec.Policy == p.Name {
			f.ownOpen++
		}
	}
	for i := range unreadable.Items {
		nm := &unreadable.Items[i]
		f.unreadable = append(f.unreadable, fmt.Sprintf("NodeMaintenance %s (%v)", nm.Name, nm.Unreadable()))
	}
	if p.Spec.Prometheus == nil {
		return f, nil
	}
	var own v1alpha1.NodeMaintenanceList
	if err := r.List(ctx, &own, client.MatchingFields{index.Policy: p.Name}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list node maintenances by %s %s: %w", index.Policy, p.Name, err)
	}
	for i := range own.Items {
		nm := &own.Items[i]
		done := nm.Status.PhaseTimes.Succeeded
		if nm.Status.Phase != v1alpha1.PhaseSucceeded || done == nil {
			continue
		}
		if prev := f.ownDone[nm.Spec.NodeName]; prev == nil || done.Time.After(prev.Status.PhaseTimes.Succeeded.Time) {
			f.ownDone[nm.Spec.NodeName] = nm
		}
	}
	return f, nil
}

// rebootedAt is when a succeeded request's node rebooted, for cooldowns, by
// the operator's clock: status.phaseTimes.succeeded, unless it lies further
// in the future than MaxClockSkew (written by hand, or by a clock far off),
// which would hold every cooldown of the node until then. Then it is the
// record's creation, which the API server stamped and which precedes the
// reboot, and ok is false.
func rebootedAt(nm *v1alpha1.NodeMaintenance, now time.Time) (at time.Time, ok bool) {
	latest := now.Add(v1alpha1.MaxClockSkew)
	if done := nm.Status.PhaseTimes.Succeeded.Time; !done.After(latest) {
		return done, true
	}
	if created := nm.CreationTimestamp.Time; !created.After(latest) {
		return created, false
	}
	return time.Time{}, false
}

// lastReboot is the node's last completed reboot, whatever its source; zero
// when none is recorded. Only nodes that meet the trigger need it, so it is
// looked up when first asked for. A history that cannot be read counts as a
// reboot just now, so that no cooldown is skipped; the error stops the
// reconcile from raising anything (see facts.err).
func (f *facts) lastReboot(node string, now time.Time) time.Time {
	if t, ok := f.reboots[node]; ok {
		return t
	}
	items, ok := f.nodeHistory(node)
	if !ok {
		f.reboots[node] = now
		return now
	}
	var last time.Time
	for i := range items {
		nm := &items[i]
		done := nm.Status.PhaseTimes.Succeeded
		if nm.Status.Phase != v1alpha1.PhaseSucceeded || done == nil {
			continue
		}
		at, ok := rebootedAt(nm, now)
		if !ok && f.futureTime != nil {
			f.futureTime(nm)
		}
		if at.After(last) {
			last = at
		}
	}
	f.reboots[node] = last
	return last
}

// nodeHistory is the node's NodeMaintenances, read once per reconcile.
// ok is false when they cannot be read; the error stops the reconcile from
// raising anything (see facts.err).
func (f *facts) nodeHistory(node string) (_ []v1alpha1.NodeMaintenance, ok bool) {
	if items, seen := f.histories[node]; seen {
		return items, items != nil
	}
	items, err := f.history(node)
	if err != nil {
		if f.err == nil {
			f.err = fmt.Errorf("read the reboot history of node %s: %w", node, err)
		}
		f.histories[node] = nil
		return nil, false
	}
	if items == nil {
		items = []v1alpha1.NodeMaintenance{}
	}
	f.histories[node] = items
	return items, true
}

// requested says whether the node has a NodeMaintenance of the given name:
// the request a policy raised for an episode is named after it, so one
// that exists, even finished or failed, is not asked for again. A history
// that cannot be read counts as not having it, so the candidate is kept;
// the error (facts.err) stops the reconcile from raising anything.
func (f *facts) requested(node, name string) bool {
	items, _ := f.nodeHistory(node)
	for i := range items {
		if items[i].Name == name {
			return true
		}
	}
	return false
}

// lastReboots is lastReboot for each of nodes, by node, leaving out those
// with none.
func (f *facts) lastReboots(nodes []string, now time.Time) map[string]time.Time {
	out := make(map[string]time.Time, len(nodes))
	for _, n := range nodes {
		if t := f.lastReboot(n, now); !t.IsZero() {
			out[n] = t
		}
	}
	return out
}

// specError is a policy spec the operator cannot use; it is reported in the
// status and not retried until the spec changes.
type specError struct {
	field string
	err   error
}

func (e *specError) Error() string { return fmt.Sprintf("%s: %v", e.field, e.err) }
func (e *specError) Unwrap() error { return e.err }
