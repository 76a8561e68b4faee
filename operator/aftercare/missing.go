package aftercare

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/poolnodes"
)

// defaultDaemonConfirmTimeout is how long aftercare waits, by default, for
// the daemon of a node back from its reboot. A daemon that comes back at all
// does within a minute or two (its pod restarts with the node, its image is
// cached); ten minutes also covers a daemon pod whose first starts crash
// (the kubelet's back-off reaches five minutes) and a slow registry, and is
// short beside the hours a node would otherwise stay cordoned in the budget.
const defaultDaemonConfirmTimeout = 10 * time.Minute

// daemonWaitGrace is how long aftercare keeps its wait for a node's daemon
// in memory before it writes the wait on the node (half the bound when that
// is shorter). Nearly every daemon confirms its node's reboot within seconds
// of the kubelet reporting Ready: writing the wait at first sight cost a
// node patch in nearly every reboot, and often a conflict with the daemon's
// own write. A wait written after the grace names the time aftercare first
// saw the node back, so the bound still counts from then. A node already
// back when aftercare first looks at its pool may have been seen back by an
// operator before this one, whose sighting died with it: its wait is
// written at once, so that restarts lengthen the bound by one grace at
// most, however many there are.
const daemonWaitGrace = time.Minute

// daemonPodGrace is how long, within daemonWaitGrace, a node may be back
// from its reboot without its daemon before aftercare deletes the node's
// failed daemon pods (deleteFailedDaemonPods says why they hold the daemon
// off). The DaemonSet controller's back-off behind them doubles with every
// reboot of the node, so a node rebooted a few times within half an hour
// waited out the whole daemonWaitGrace, cordoned and in its slot, for a
// daemon that would start the moment they were gone (seen on the real
// nodes: a minute more for each of ten reboots of test/realkmaint). A
// daemon that confirms within this grace, nearly every one, costs no List.
const daemonPodGrace = 10 * time.Second

// backSighting is when aftercare first saw a node back from the reboot
// approved for approvedBoot, its daemon silent.
type backSighting struct {
	approvedBoot string
	at           time.Time
	// atFirstLook: the node was already back at aftercare's first look at
	// its pool, so an earlier operator may have seen it back before.
	atFirstLook bool
}

func (b backSighting) MadeAt() time.Time { return b.at }

// firstSeenBack returns when aftercare first saw the node back from the
// reboot approved for its approved boot, remembering now if it never did.
func (r *Reconciler) firstSeenBack(st *poolState, v poolnodes.Member) backSighting {
	if b, ok := r.backSightings.Get(v.Node.Name); ok && b.approvedBoot == v.Approved {
		return b
	}
	b := backSighting{approvedBoot: v.Approved, at: st.now, atFirstLook: st.firstLook}
	// A sighting older than the bound is written on its node by then, or
	// its node is long done: forget it.
	r.backSightings.Put(v.Node.Name, b, r.DaemonConfirmTimeout)
	return b
}

// lookedPools are the pools, by UID, this operator's aftercare has observed.
type lookedPools struct {
	mu   sync.Mutex
	uids map[types.UID]struct{}
}

func newLookedPools() *lookedPools { return &lookedPools{uids: map[types.UID]struct{}{}} }

// first reports whether aftercare looks at the pool for the first time, and
// remembers that it did. Pools are few: a deleted pool's UID is kept.
func (l *lookedPools) first(uid types.UID) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.uids[uid]; ok {
		return false
	}
	l.uids[uid] = struct{}{}
	return true
}

// daemonStep is what aftercare does about a node that is back from its
// approved reboot while its daemon has not confirmed it.
type daemonStep int

const (
	// keepWaitingForDaemon: the grace or the bound has not passed yet.
	keepWaitingForDaemon daemonStep = iota
	// clearDaemonPods: within the grace, the daemon is late enough
	// (daemonPodGrace) that the node's failed daemon pods are deleted; the
	// wait is still kept in memory.
	clearDaemonPods
	// startDaemonWait writes on the node when it was first seen back, so
	// that the wait is bounded whatever restarts.
	startDaemonWait
	// completeWithoutDaemon: the bound has passed; aftercare completes what
	// it can prove (a new boot ID, Ready) without the daemon.
	completeWithoutDaemon
)

// decideDaemonWait decides about a node for which AwaitingDaemon holds,
// seen back as seen says, and when to look again while it waits.
func decideDaemonWait(s protocol.NodeState, seen backSighting, now time.Time, bound time.Duration) (daemonStep, time.Time) {
	m := s.UnconfirmedFor()
	if m == nil {
		grace := min(daemonWaitGrace, bound/2)
		if seen.atFirstLook {
			grace = 0
		}
		graceEnd := seen.at.Add(grace)
		if !now.Before(graceEnd) {
			return startDaemonWait, seen.at.Add(bound)
		}
		if podsDue := seen.at.Add(min(daemonPodGrace, grace)); now.Before(podsDue) {
			return keepWaitingForDaemon, podsDue
		}
		return clearDaemonPods, graceEnd
	}
	if deadline := m.Since.Add(bound); now.Before(deadline) {
		return keepWaitingForDaemon, deadline
	}
	return completeWithoutDaemon, time.Time{}
}

// awaitDaemon bounds the wait for the daemon of a node back from its
// approved reboot. Past the bound the reboot is completed as RebootDone
// completes it, except that RebootUnconfirmed stays on the node: the daemon's
// reboot-requested still names the approved boot, which is no longer the
// node's, so it is never admitted again for it, and a daemon that comes back
// later finds no request in its new boot and clears it.
func (r *Reconciler) awaitDaemon(ctx context.Context, st *poolState, v poolnodes.Member) error {
	seen := backSighting{at: st.now}
	if v.UnconfirmedFor() == nil {
		seen = r.firstSeenBack(st, v)
	}
	step, wakeAt := decideDaemonWait(v.NodeState, seen, st.now, r.DaemonConfirmTimeout)
	st.wakeAt(wakeAt)
	switch step {
	case clearDaemonPods:
		return r.clearFailedDaemonPods(ctx, v, st.now)
	case startDaemonWait:
		back := protocol.UnconfirmedReboot{ApprovedBoot: v.Approved, BootID: v.BootID, Since: seen.at}
		if err := r.patchNode(ctx, st, v, protocol.AwaitDaemon(back)); err != nil {
			return err
		}
		return r.clearFailedDaemonPods(ctx, v, seen.at)
	case keepWaitingForDaemon:
		if v.UnconfirmedFor() != nil {
			// The wait is written: its pods were cleared when it was,
			// unless that failed or the operator died in between.
			return r.clearFailedDaemonPods(ctx, v, st.now)
		}
		return nil
	}
	unconfirmed := *v.Unconfirmed
	if len(st.pool.Spec.Hooks.At(string(protocol.AfterReboot))) > 0 {
		// The pool's afterReboot hooks run once the daemon confirms the
		// reboot; completing without it would skip them. The node keeps its
		// slot, cordoned, and waits for its daemon.
		return nil
	}
	if err := r.patchNode(ctx, st, v, protocol.CompleteWithoutDaemon(st.pool.Spec.NodeMarking, protocol.SettleOnCompletion(st.pool, v.NodeState, st.now))); err != nil {
		return err
	}
	ctrl.LoggerFrom(ctx).Info("Reboot completed without the daemon", "node", v.Node.Name, "bootID", v.BootID,
		"approvedBoot", unconfirmed.ApprovedBoot, "waited", r.DaemonConfirmTimeout)
	r.events.Both(st.pool, v.Node, corev1.EventTypeWarning, v1alpha1.DaemonMissingReason, "Complete",
		"Node %s is back and Ready with boot %s (approved for boot %s), and its daemon has not confirmed the reboot within %s: "+
			"reboot completed without it, slot freed, uncordoned if kmaint cordoned it. Is kmaint-daemon running on the node?",
		v.Node.Name, v.BootID, unconfirmed.ApprovedBoot, r.DaemonConfirmTimeout)
	return nil
}

// The label, and its value, of the daemon's pods, as the chart and the
// manifests label them.
const daemonPodLabel, daemonPodLabelValue = "app.kubernetes.io/name", "kmaint-daemon"

// clearedDaemonPods is when aftercare deleted the failed daemon pods of a
// node back with bootID.
type clearedDaemonPods struct {
	bootID string
	at     time.Time
}

func (c clearedDaemonPods) MadeAt() time.Time { return c.at }

// clearFailedDaemonPods deletes the node's failed daemon pods once per boot
// of the node, from daemonPodGrace after it was seen back: at that step,
// when the wait is written, and at any later reconcile of the wait until a
// deletion succeeded, so that a failed List or an operator restarted
// between the two writes does not leave the pod to the DaemonSet's
// back-off.
func (r *Reconciler) clearFailedDaemonPods(ctx context.Context, v poolnodes.Member, now time.Time) error {
	if c, ok := r.clearedDaemonPods.Get(v.Node.Name); ok && c.bootID == v.BootID {
		return nil
	}
	if err := r.deleteFailedDaemonPods(ctx, v.Node.Name); err != nil {
		return err
	}
	// Kept as long as the wait can last: a node whose wait ended does not
	// ask again.
	r.clearedDaemonPods.Put(v.Node.Name, clearedDaemonPods{bootID: v.BootID, at: now}, r.DaemonConfirmTimeout)
	return nil
}

// deleteFailedDaemonPods deletes the node's daemon pods that failed, once
// the node's daemon is late (daemonPodGrace). The kubelet's graceful
// shutdown marks the daemon's pod Failed; the DaemonSet controller replaces
// it at once, on the node still shutting down, where the new pod fails too;
// and it deletes a failed pod only after a back-off per node that doubles
// with every failure, up to 15 minutes (kubernetes/kubernetes#122912). A
// node rebooted six times in eleven minutes came back Ready and waited
// minutes, cordoned, for a daemon the back-off kept away. Deleted here, the
// pod is replaced at once. Only Failed pods are deleted: they run nothing.
func (r *Reconciler) deleteFailedDaemonPods(ctx context.Context, node string) error {
	// From the API server's watch cache, whatever its age (the pod failed
	// a minute ago at least), so that the List never reads every pod of
	// the cluster from etcd (operator/drain/podsince.go says why).
	var pods corev1.PodList
	if err := r.Pods.List(ctx, &pods, &client.ListOptions{
		LabelSelector: labels.SelectorFromSet(labels.Set{daemonPodLabel: daemonPodLabelValue}),
		FieldSelector: fields.AndSelectors(
			fields.OneTermEqualSelector("spec.nodeName", node),
			fields.OneTermEqualSelector("status.phase", string(corev1.PodFailed)),
		),
		Raw: &metav1.ListOptions{ResourceVersion: "0"},
	}); err != nil {
		return fmt.Errorf("list the failed daemon pods of node %s: %w", node, err)
	}
	var errs []error
	for i := range pods.Items {
		pod := &pods.Items[i]
		err := r.Delete(ctx, pod, client.Preconditions{UID: &pod.UID})
		if err == nil {
			ctrl.LoggerFrom(ctx).Info("Deleted the failed daemon pod of a node back from its reboot", "node", node, "pod", client.ObjectKeyFromObject(pod))
		} else if !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete failed daemon pod %s/%s: %w", pod.Namespace, pod.Name, err))
		}
	}
	return errors.Join(errs...)
}

// forgetUnconfirmed removes RebootUnconfirmed once the daemon is back.
func (r *Reconciler) forgetUnconfirmed(ctx context.Context, st *poolState, v poolnodes.Member) error {
	err := r.patchNode(ctx, st, v, protocol.ForgetUnconfirmed())
	if err != nil {
		return err
	}
	ctrl.LoggerFrom(ctx).Info("Daemon is back", "node", v.Node.Name, "bootID", v.BootID)
	return nil
}
