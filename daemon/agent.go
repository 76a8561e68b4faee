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

	"github.com/kmaint/kmaint/daemon/journal"
	"github.com/kmaint/kmaint/daemon/rebooter"
	"github.com/kmaint/kmaint/operator/api/v1alpha1"
)

// agent is the daemon's one controller. Every trigger (its Node, its
// NodeMaintenances, a journal entry) reconciles the same key, the node.
type agent struct {
	client   client.Client
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
	// As the journal stamps it: this boot, root.
	e.BootID, e.UID = a.bootID, 0
	a.mu.Lock()
	a.written = append(a.written, e)
	a.mu.Unlock()
	return nil
}

// sameEntry reports whether a read-back entry is one this daemon wrote: a
// request by its id, a rebooting entry by its boot.
func sameEntry(written, read journal.Entry) bool {
	if written.Kind != read.Kind || written.BootID != read.BootID {
		return false
	}
	return written.Kind != journal.KindRequest || written.ID == read.ID
}

// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=kmaint.io,resources=nodemaintenances,verbs=get;list;watch
// +kubebuilder:rbac:groups=kmaint.io,resources=nodemaintenances/status,verbs=patch
// +kubebuilder:rbac:groups=events.k8s.io,namespace=default,resources=events,verbs=create;patch

// Reconcile syncs the node: observe the journal, the Node and its
// NodeMaintenances, decide (a pure function of what was observed), and act:
// journal what is missing, raise or clear the request, report, and reboot
// when the current boot is approved.
func (a *agent) Reconcile(ctx context.Context, _ ctrl.Request) (ctrl.Result, error) {
	f, ok, err := a.observe(ctx)
	if err != nil || !ok {
		return ctrl.Result{}, err
	}
	return a.act(ctx, f.node, decide(f))
}

// observe gathers the facts of one sync. Until the journal has been read
// back there are none: the daemon cannot know which requests it already
// wrote.
func (a *agent) observe(ctx context.Context) (facts, bool, error) {
	entries, caughtUp := a.snapshot()
	if !caughtUp {
		return facts{}, false, nil
	}
	node := &corev1.Node{}
	if err := a.client.Get(ctx, types.NamespacedName{Name: a.nodeName}, node); err != nil {
		return facts{}, false, fmt.Errorf("get own node %s: %w", a.nodeName, err)
	}
	var nms v1alpha1.NodeMaintenanceList
	if err := a.client.List(ctx, &nms); err != nil {
		return facts{}, false, fmt.Errorf("list own maintenances: %w", err)
	}
	return facts{
		now: a.clock.Now(), bootID: a.bootID, entries: entries, node: node,
		maintenances: nms.Items, rebootTimeout: a.rebootTimeout,
	}, true, nil
}

// act carries out a plan, in its order.
func (a *agent) act(ctx context.Context, node *corev1.Node, p plan) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	var errs []error
	for _, e := range p.write {
		if err := a.append(e); err != nil {
			errs = append(errs, fmt.Errorf("journal request %s: %w", e.ID, err))
			continue
		}
		log.Info("Request journaled", "request", e.ID, "source", e.Source, "reason", e.Reason)
	}
	if err := a.patchAnnotations(ctx, node, p.annotations); err != nil {
		return ctrl.Result{}, errors.Join(append(errs, err)...)
	}
	for _, r := range p.reports {
		errs = append(errs, a.report(ctx, r))
	}
	if p.ignoredApproval != "" && p.ignoredApproval != a.ignored {
		a.ignored = p.ignoredApproval
		log.Info("Ignoring an approval for another boot", "approvedBoot", p.ignoredApproval, "bootID", a.bootID)
	}
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

// reboot journals that it is rebooting, so that it never asks twice in one
// boot, then asks the rebooter.
func (a *agent) reboot(ctx context.Context, node *corev1.Node, e journal.Entry) error {
	if err := a.append(e); err != nil {
		return fmt.Errorf("journal reboot: %w", err)
	}
	ctrl.LoggerFrom(ctx).Info("Rebooting", "bootID", a.bootID, "requests", e.Requests)
	a.recorder.Eventf(node, nil, corev1.EventTypeNormal, "Rebooting", "Reboot", "Rebooting boot %s for requests %v", a.bootID, e.Requests)
	a.metrics.reboots.Inc()
	if err := a.rebooter.Reboot(ctx); err != nil {
		a.recorder.Eventf(node, nil, corev1.EventTypeWarning, "RebootFailed", "Reboot", "The reboot could not be started: %v", err)
		return fmt.Errorf("reboot: %w", err)
	}
	return nil
}

// patchAnnotations writes only the daemon's own annotations that changed,
// as a merge patch, so it never races the operator's writes to others.
func (a *agent) patchAnnotations(ctx context.Context, node *corev1.Node, changes map[string]*string) error {
	if len(changes) == 0 {
		return nil
	}
	data, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": changes}})
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
	if err := a.client.Status().Patch(ctx, nm, client.RawPatch(types.MergePatchType, data)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("report to maintenance %s: %w", r.name, err)
	}
	return nil
}
