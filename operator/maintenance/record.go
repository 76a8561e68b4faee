package maintenance

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/bits"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
)

// record creates a NodeMaintenance for each request of the node's current
// boot that started on the node and has none yet, so that every reboot
// request, whatever its source, shows up in `kubectl get nodemaintenances`.
// It records at most v1alpha1.MaxRecordedPerBoot per node and boot, and only
// ids it can record; it says so in a Warning event on the Node when there
// are others. They ask for nothing the recorded ones do not: one reboot
// satisfies every request of a boot.
func (r *Reconciler) record(ctx context.Context, state *protocol.NodeState, items []v1alpha1.NodeMaintenance) error {
	if state == nil || state.Current() == nil {
		return nil
	}
	node, requested := state.Node, state.Current()
	known := map[string]bool{}
	inBoot := 0
	learn := func(nm *v1alpha1.NodeMaintenance) {
		if known[nm.Name] {
			return
		}
		known[nm.RequestID()], known[nm.Name] = true, true
		if nm.Spec.Source.RaisedOnNode() && nm.Labels[v1alpha1.BootIDLabel] == v1alpha1.LabelValue(requested.BootID) {
			inBoot++
		}
	}
	for i := range items {
		learn(&items[i])
	}
	fresh := unrecorded(node.Name, requested.Requests, known)
	if len(fresh) == 0 {
		return nil
	}
	// The cache may not show records made a moment ago yet; items holds
	// them all the same (Reconciler.writes), so a daemon rewriting its ids
	// quickly gets no more than its share. This controller, on the leader,
	// is the only one that records a node's requests.
	sel := selectRecords(fresh, inBoot)
	r.reportNotRecorded(ctx, node, requested, sel)

	var errs []error
	for _, req := range sel.record {
		// The label is the id itself or absent, never a hash of it, since
		// RequestID reads it back; the status carries every id.
		labels := map[string]string{v1alpha1.BootIDLabel: v1alpha1.LabelValue(requested.BootID)}
		if v1alpha1.LabelValue(req.ID) == req.ID {
			labels[v1alpha1.RequestIDLabel] = req.ID
		}
		nm := &v1alpha1.NodeMaintenance{
			ObjectMeta: metav1.ObjectMeta{
				Name:   recordName(node.Name, req),
				Labels: labels,
			},
			Spec: v1alpha1.NodeMaintenanceSpec{
				NodeName: node.Name,
				Type:     v1alpha1.RebootMaintenance,
				Reason:   v1alpha1.FitReason(req.Reason),
				Source:   req.Source,
			},
		}
		if err := r.Create(ctx, nm); apierrors.IsAlreadyExists(err) {
			continue // made before this operator started, and its cache does not show it yet
		} else if err != nil {
			errs = append(errs, fmt.Errorf("record %s request %s of node %s: %w", req.Source, req.ID, node.Name, err))
			continue
		}
		r.writes.remember(nm, r.Clock.Now())
		// The label cannot carry every id; the status can. An id the label
		// carries goes into the status with the first phase written.
		if labels[v1alpha1.RequestIDLabel] == req.ID {
			continue
		}
		nm.Status.RequestID = req.ID
		if err := r.Status().Update(ctx, nm); err != nil {
			errs = append(errs, fmt.Errorf("set request id of maintenance %s: %w", nm.Name, err))
			continue
		}
		r.writes.remember(nm, r.Clock.Now())
	}
	return errors.Join(errs...)
}

// unrecorded returns the requests raised on the node that no known record
// stands for.
func unrecorded(node string, reqs []protocol.Request, known map[string]bool) []protocol.Request {
	var out []protocol.Request
	for _, req := range reqs {
		if known[req.ID] || known[recordName(node, req)] || !req.Source.RaisedOnNode() {
			continue
		}
		out = append(out, req)
	}
	return out
}

// recordSelection is which of a node's unrecorded requests get a record.
type recordSelection struct {
	// record are the requests to record, in the node's order.
	record []protocol.Request
	// recorded is how many of the boot's requests were recorded before.
	recorded int
	// overCap counts the requests left out because the boot has its
	// MaxRecordedPerBoot records.
	overCap int
	// invalid says why each request left out for its id was.
	invalid []string
}

// notRecorded counts the requests left out.
func (s recordSelection) notRecorded() int { return s.overCap + len(s.invalid) }

// selectRecords picks the requests to record: those with an id kmaint can
// record, in order, while the boot has fewer than MaxRecordedPerBoot
// records.
func selectRecords(fresh []protocol.Request, recorded int) recordSelection {
	s := recordSelection{recorded: recorded}
	room := v1alpha1.MaxRecordedPerBoot - recorded
	for _, req := range fresh {
		if err := v1alpha1.CheckRequestID(req.ID); err != nil {
			s.invalid = append(s.invalid, err.Error())
			continue
		}
		if room <= 0 {
			s.overCap++
			continue
		}
		room--
		s.record = append(s.record, req)
	}
	return s
}

// reportNotRecorded tells, in a Warning event on the Node, that requests
// were left out. A daemon rewriting its ids on every write would otherwise
// turn each write into an event: a node's boot gets one event, and another
// each time the number left out doubles.
func (r *Reconciler) reportNotRecorded(ctx context.Context, node *corev1.Node, requested *protocol.Requested, sel recordSelection) {
	n := sel.notRecorded()
	if n == 0 {
		return
	}
	if !r.firstWarning(node.Name, v1alpha1.RequestsNotRecordedReason, fmt.Sprintf("%s/%d", requested.BootID, bits.Len(uint(n)))) {
		return
	}
	msg := fmt.Sprintf("node %s raised %d reboot requests in boot %s; kmaint records at most %d per node and boot: %d recorded, %d not",
		node.Name, len(requested.Requests), requested.BootID, v1alpha1.MaxRecordedPerBoot, sel.recorded+len(sel.record), n)
	if len(sel.invalid) > 0 {
		msg += fmt.Sprintf(" (%d for an id that cannot be recorded, e.g. %s)", len(sel.invalid), cut(sel.invalid[0], 200))
	}
	msg += ". They ask for no further reboot; this many requests suggest that the node's daemon identity is misused"
	ctrl.LoggerFrom(ctx).Info("Requests not recorded", "bootID", requested.BootID, "requests", len(requested.Requests), "notRecorded", n)
	r.Recorder.Eventf(node, nil, corev1.EventTypeWarning, v1alpha1.RequestsNotRecordedReason, "Record", "%s", msg)
}

// firstWarning reports whether key differs from the last key of the
// node's warnings of this reason, and keeps it: a node's reconciles follow
// each of its writes, and the same finding is one event, not one per write.
func (r *Reconciler) firstWarning(node, reason, key string) bool {
	r.warnedMu.Lock()
	defer r.warnedMu.Unlock()
	if r.warned == nil {
		r.warned = map[string]string{}
	}
	// The key may hold what a daemon wrote (its request ids, hundreds of
	// them): kept as a digest, a node's findings cost a few bytes each.
	sum := sha256.Sum256([]byte(key))
	k, digest := node+"\x00"+reason, string(sum[:])
	if r.warned[k] == digest {
		return false
	}
	r.warned[k] = digest
	return true
}

// forgetWarning drops what the node's last warning of this reason said,
// for one that could not be made.
func (r *Reconciler) forgetWarning(node, reason string) {
	r.warnedMu.Lock()
	defer r.warnedMu.Unlock()
	delete(r.warned, node+"\x00"+reason)
}

// cut shortens s to at most n bytes, for an event's note (1 KiB at most).
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return v1alpha1.FitReason(s[:n])
}

// recordName is deterministic, so that a restarted operator finds the record
// it made instead of making a second one.
func recordName(node string, req protocol.Request) string {
	return v1alpha1.ObjectName(node, string(req.Source), req.ID)
}
