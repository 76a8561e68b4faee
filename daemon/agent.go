package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/daemon/journal"
	"github.com/kmaint/kmaint/daemon/rebooter"
	"github.com/kmaint/kmaint/daemon/sentinel"
)

// agent is the daemon's one controller. Every trigger (its Node, a journal
// entry) reconciles the same key, the node.
type agent struct {
	// client reads the node from the daemon's cache, which holds only it.
	client client.Client
	// reader reads NodeMaintenances from the API server, one by name: the
	// daemon watches none (protocol.APIRequests).
	reader   client.Reader
	journal  journal.Journal
	rebooter rebooter.Rebooter
	recorder events.EventRecorder
	clock    clock.PassiveClock
	metrics  *metrics

	nodeName      string
	bootID        string
	rebootTimeout time.Duration

	// journalChanged wakes the controller when an entry arrives.
	journalChanged chan event.GenericEvent

	mu       sync.Mutex
	entries  []journal.Entry
	caughtUp bool
	// written are entries this daemon appended that the follower has not
	// read back yet. A sync in between must see them: without them it would
	// journal a request again, or ask for a second reboot in the same boot.
	written []journal.Entry
	// ignored is the last approval for another boot that was logged, so
	// that it is logged once, not on every sync.
	ignored string
	// refused is the last refused approval that was reported, so that it
	// is reported once.
	refused string
	// told are the cancellations whose outcome was logged and evented, so
	// that each is told once.
	told map[string]bool
	// volatile is whether the journal holds nothing of the node's earlier
	// boots; nil until the first sync has looked.
	volatile *bool
	// settled are the NodeMaintenances named on the node that were read
	// once and will never be journaled (see settled), by UID, so that they
	// are not read again at every sync.
	settled map[types.UID]bool
	// badAPIRequests is the last unreadable protocol.APIRequests that was
	// logged, so that it is logged once.
	badAPIRequests string

	// sentinel looks at the host's reboot sentinel every sentinelInterval;
	// nil when the daemon watches none. observed is its last look.
	sentinel         sentinel.Checker
	sentinelInterval time.Duration
	observed         *sentinel.Observation
}

// onEntry records an entry read back from the journal.
func (a *agent) onEntry(e journal.Entry) {
	a.mu.Lock()
	a.entries = append(a.entries, e)
	a.written = slices.DeleteFunc(a.written, func(w journal.Entry) bool { return sameEntry(w, e) })
	caughtUp := a.caughtUp
	a.mu.Unlock()
	if e.Kind == journal.KindRequest && e.BootID == a.bootID {
		a.metrics.requests.WithLabelValues(string(e.Source)).Inc()
	}
	if caughtUp {
		a.wake()
	}
}

// onCaughtUp lets the daemon act: before the journal is replayed it cannot
// know which requests it already wrote.
func (a *agent) onCaughtUp() {
	a.mu.Lock()
	a.caughtUp = true
	a.mu.Unlock()
	a.wake()
}

// wake triggers a sync. One pending trigger is as good as many: every
// trigger syncs the same node from the whole journal.
func (a *agent) wake() {
	select {
	case a.journalChanged <- event.GenericEvent{Object: &corev1.Node{}}:
	default:
	}
}

func (a *agent) snapshot() ([]journal.Entry, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Concat(a.entries, a.written), a.caughtUp
}

// append journals an entry and remembers it until it is read back.
func (a *agent) append(e journal.Entry) error {
	if err := a.journal.Append(e); err != nil {
		return err
	}
	a.remember(e)
	return nil
}

// remember counts an entry as written, as the journal stamps it (this
// boot, root), until the follower reads it back; one the journal refused
// stays for the process's life: what it says happened all the same.
func (a *agent) remember(e journal.Entry) {
	e.BootID, e.UID = a.bootID, 0
	a.mu.Lock()
	a.written = append(a.written, e)
	a.mu.Unlock()
}

// sameEntry reports whether a read-back entry is one this daemon wrote: a
// request or a cancellation by its id, a rebooting entry by its boot.
func sameEntry(written, read journal.Entry) bool {
	if written.Kind != read.Kind || written.BootID != read.BootID {
		return false
	}
	return written.Kind == journal.KindRebooting || written.ID == read.ID
}

// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=kmaint.io,resources=nodemaintenances,verbs=get
// +kubebuilder:rbac:groups=kmaint.io,resources=nodemaintenances/status,verbs=patch
// +kubebuilder:rbac:groups=events.k8s.io,namespace=default,resources=events,verbs=create;patch

// Reconcile syncs the node: observe the journal, the Node and the
// NodeMaintenances it names, decide (a pure function of what was
// observed), and act: journal what is missing, raise or clear the request,
// report, and reboot when the current boot is approved.
func (a *agent) Reconcile(ctx context.Context, _ ctrl.Request) (ctrl.Result, error) {
	f, ok, unread, err := a.observe(ctx)
	if err != nil || !ok {
		return ctrl.Result{}, err
	}
	res, err := a.act(ctx, f.node, decide(f))
	return res, errors.Join(err, unread)
}

// observe gathers the facts of one sync. Until the journal has been read
// back there are none: the daemon cannot know which requests it already
// wrote. A NodeMaintenance that cannot be read is left out of them, and
// said (unread), without holding up the rest of the sync: the request waits,
// the node's approval does not.
func (a *agent) observe(ctx context.Context) (f facts, ok bool, unread, err error) {
	entries, caughtUp := a.snapshot()
	if !caughtUp {
		return facts{}, false, nil, nil
	}
	node := &corev1.Node{}
	if err := a.client.Get(ctx, types.NamespacedName{Name: a.nodeName}, node); err != nil {
		return facts{}, false, nil, fmt.Errorf("get own node %s: %w", a.nodeName, err)
	}
	reqs, known := a.apiRequests(ctx, node)
	nms, unread := a.readMaintenances(ctx, reqs, entries)
	return facts{
		now: a.clock.Now(), bootID: a.bootID, entries: entries, node: node,
		apiRequests: reqs, apiRequestsKnown: known, maintenances: nms,
		rebootTimeout:   a.rebootTimeout,
		volatileJournal: a.checkJournal(ctx, node),
		sentinelEnabled: a.sentinel != nil, sentinel: a.lastObservation(),
	}, true, unread, nil
}

// checkJournal finds out, once, whether the journal kept the node's earlier
// boots, and says so when it did not: a log line, an event on the Node, a
// metric, and the daemon's state.
func (a *agent) checkJournal(ctx context.Context, node *corev1.Node) bool {
	if a.volatile != nil {
		return *a.volatile
	}
	boots, err := a.journal.Boots()
	if err != nil {
		// Not knowing changes nothing kmaint does; it is only not said.
		ctrl.LoggerFrom(ctx).Info("Cannot tell whether the journal keeps earlier boots", "reason", err.Error())
		boots = nil
	}
	if len(boots) > 0 && !slices.Contains(boots, a.bootID) {
		// journald stamps every entry with the boot it is written in, its
		// own start first: a boot the node's journal has never seen is
		// not the node's. Said, not acted on (a journal that stores only
		// errors may hold nothing of a boot yet).
		ctrl.LoggerFrom(ctx).Error(nil, "The node's journal holds no entry of the daemon's boot ID, which is then not the node's: "+
			"the daemon would ignore every request journaled on the node. On nodes that are containers with a boot ID of their own "+
			"(systemd-nspawn machines), pass the node's with --boot-id-file (the chart's daemon.bootIDFile)", "bootsInJournal", len(boots))
	}
	volatile, previous := volatileJournal(boots, a.bootID, node)
	a.volatile = &volatile
	a.metrics.setVolatileJournal(volatile)
	if volatile && previous != "" {
		msg := fmt.Sprintf("The journal holds no entry from before boot %s, though the node ran boot %s before it (volatile journal storage, or vacuumed): "+
			"the node keeps no record of its earlier reboot requests. kmaint keeps what must outlive a reboot on the Node and its NodeMaintenances, "+
			"so no request or config reboots the node twice.", a.bootID, previous)
		ctrl.LoggerFrom(ctx).Info("Volatile journal", "message", msg, "previousBoot", previous)
		a.recorder.Eventf(node, nil, corev1.EventTypeNormal, "VolatileJournal", "Start", "%s", msg)
	}
	return volatile
}

// volatileJournal reports whether a journal holding entries of boots has
// lost the node's earlier boots: it holds none but the current one, and the
// daemon's state on the node names another boot the node ran before, which
// it returns. A new node's journal holds only its first boot too, and is not
// called volatile. A daemon restarted in the same boot keeps what its state
// says the first one found, with no previous boot to name.
func volatileJournal(boots []string, bootID string, node *corev1.Node) (volatile bool, previous string) {
	if slices.ContainsFunc(boots, func(b string) bool { return b != bootID }) || node == nil {
		return false, ""
	}
	st, _ := protocol.Read(node)
	switch {
	case st.Daemon == nil || st.Daemon.BootID == "":
		return false, ""
	case st.Daemon.BootID == bootID:
		return st.Daemon.VolatileJournal, ""
	}
	return true, st.Daemon.BootID
}

// act carries out a plan, in its order.
func (a *agent) act(ctx context.Context, node *corev1.Node, p plan) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	var errs []error
	for _, w := range p.write {
		if w.reportFirst != nil {
			// A NodeMaintenance deleted meanwhile is not journaled.
			if err := a.report(ctx, *w.reportFirst); err != nil {
				if !apierrors.IsNotFound(err) {
					errs = append(errs, err)
				}
				continue
			}
		}
		e := w.entry
		if err := a.append(e); err != nil {
			errs = append(errs, fmt.Errorf("journal %s %s: %w", e.Kind, e.ID, err))
			continue
		}
		log.Info("Journaled", "kind", e.Kind, "request", e.ID, "source", e.Source, "reason", e.Reason)
	}
	if err := a.patchAnnotations(ctx, node, p.annotations, p.lock); err != nil {
		return ctrl.Result{}, errors.Join(append(errs, err)...)
	}
	a.tellCancellations(ctx, node, p.cancellations)
	if p.ignoredApproval != "" && p.ignoredApproval != a.ignored {
		a.ignored = p.ignoredApproval
		log.Info("Ignoring an approval for another boot", "approvedBoot", p.ignoredApproval, "bootID", a.bootID)
	}
	if p.refusedApproval != "" && p.refusedApproval != a.refused {
		a.refused = p.refusedApproval
		log.Info("Refusing an approval that no admission covers", "bootID", a.bootID, "reason", p.refusedApproval)
		a.recorder.Eventf(node, nil, corev1.EventTypeWarning, "ApprovalRefused", "Reboot", "%s", p.refusedApproval)
		a.metrics.refusedApprovals.Inc()
	}
	if p.sentinelEntered {
		a.tellSentinel(ctx, node, p.state.Sentinel)
	}
	a.metrics.setSentinel(p.state.Sentinel)
	if p.becameDegraded {
		a.recorder.Eventf(node, nil, corev1.EventTypeWarning, "RebootNotObserved", "Reboot", "%s", p.state.Message)
	}
	a.metrics.setState(p.state.Phase, len(p.outstanding))
	if p.reboot != nil {
		errs = append(errs, a.reboot(ctx, node, *p.reboot))
	}

	var res ctrl.Result
	if !p.recheckAt.IsZero() {
		res.RequeueAfter = max(p.recheckAt.Sub(a.clock.Now()), time.Second)
	}
	return res, errors.Join(errs...)
}

// reboot asks the rebooter, then journals that it asked, so that it never
// asks twice in one boot. Asking first means that a daemon stopped or killed
// in between asks again when it restarts in the same boot, which the one
// reboot under way satisfies; journaling first would mean that such a daemon
// never asks, and its node, cordoned and drained, waits for a person. A
// refused ask is journaled too: it is reported (degraded), not retried. One
// cut short by the daemon's own stop is not: the next daemon asks again.
func (a *agent) reboot(ctx context.Context, node *corev1.Node, e journal.Entry) error {
	ctrl.LoggerFrom(ctx).Info("Rebooting", "bootID", a.bootID, "requests", e.Requests)
	a.recorder.Eventf(node, nil, corev1.EventTypeNormal, "Rebooting", "Reboot", "Rebooting boot %s for requests %v", a.bootID, e.Requests)
	a.metrics.reboots.Inc()
	var errs []error
	if err := a.rebooter.Reboot(ctx); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("reboot cut short by the daemon's stop: %w", err)
		}
		a.recorder.Eventf(node, nil, corev1.EventTypeWarning, "RebootFailed", "Reboot", "The reboot could not be started: %v", err)
		errs = append(errs, fmt.Errorf("reboot: %w", err))
	}
	if err := a.append(e); err != nil {
		// Still, this daemon asked: it must not ask again.
		a.remember(e)
		errs = append(errs, fmt.Errorf("journal reboot: %w", err))
	}
	return errors.Join(errs...)
}

// tellCancellations logs each cancellation's outcome and records it as an
// event on the Node, once per daemon.
func (a *agent) tellCancellations(ctx context.Context, node *corev1.Node, cs []cancellation) {
	for _, c := range cs {
		if a.told[c.id] {
			continue
		}
		if a.told == nil {
			a.told = map[string]bool{}
		}
		a.told[c.id] = true
		ctrl.LoggerFrom(ctx).Info("Cancellation", "request", c.id, "source", c.source, "refused", c.refused, "message", c.message)
		if c.refused {
			a.recorder.Eventf(node, nil, corev1.EventTypeWarning, "CancelRefused", "Cancel", "%s", c.message)
		} else {
			a.recorder.Eventf(node, nil, corev1.EventTypeNormal, "RequestCancelled", "Cancel", "%s", c.message)
		}
	}
}

// patchAnnotations writes only the daemon's own annotations that changed,
// as a merge patch, so it never races the operator's writes to others.
// With lock it also names the node's resourceVersion, so that it fails with
// a conflict, and the sync runs again, if the node changed since it was
// read.
func (a *agent) patchAnnotations(ctx context.Context, node *corev1.Node, changes map[string]*string, lock bool) error {
	if len(changes) == 0 {
		return nil
	}
	metadata := map[string]any{"annotations": changes}
	if lock {
		metadata["resourceVersion"] = node.ResourceVersion
	}
	data, err := json.Marshal(map[string]any{"metadata": metadata})
	if err != nil {
		return fmt.Errorf("encode annotations: %w", err)
	}
	if err := a.client.Patch(ctx, node, client.RawPatch(types.MergePatchType, data)); err != nil {
		return fmt.Errorf("patch annotations of node %s: %w", a.nodeName, err)
	}
	return nil
}

// report tells a NodeMaintenance in which boot its request was journaled; it
// writes only the two fields the daemon owns.
func (a *agent) report(ctx context.Context, r report) error {
	data, err := json.Marshal(map[string]any{"status": map[string]any{
		"journaledBootID": r.bootID,
		"journaledTime":   r.time.UTC().Format(time.RFC3339),
	}})
	if err != nil {
		return fmt.Errorf("encode report: %w", err)
	}
	nm := &v1alpha1.NodeMaintenance{}
	nm.Name = r.name
	if err := a.client.Status().Patch(ctx, nm, client.RawPatch(types.MergePatchType, data)); err != nil {
		return fmt.Errorf("report to maintenance %s: %w", r.name, err)
	}
	return nil
}
