package gate

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/gate/view"
)

// deadlineStep is what the gate does with a drain past its timeout.
type deadlineStep int

const (
	// deadlineAbandons: uncordon, and fail the requests.
	deadlineAbandons deadlineStep = iota
	// deadlineRetries: uncordon, and admit the node again after the backoff.
	deadlineRetries
	// deadlineForces: delete what eviction could not move, and approve.
	deadlineForces
)

// deadlineDecision is decideDeadline's answer.
type deadlineDecision struct {
	step deadlineStep
	// attempts is how many drains of the node's current requests have
	// timed out, this one included; maxAttempts how many the pool allows.
	attempts, maxAttempts int
	// nextAt is when a retried node may be admitted again.
	nextAt time.Time
}

// decideDeadline decides what happens to a drain that ran past its
// timeout, from the pool's drain options and the retries recorded on the
// node (prev, nil when none): a pure function of its inputs. A retry
// recorded for another boot counts for nothing: that boot's requests were
// satisfied by its reboot. A marking the gate refused is never forced: the
// node would reboot without what the pool wants on it (out of its load
// balancers, say).
func decideDeadline(opts v1alpha1.DrainOptions, prev *protocol.DrainRetrying, boot string, markingRefused bool, now time.Time) deadlineDecision {
	attempts, backoff := opts.RetryLimits()
	d := deadlineDecision{step: deadlineAbandons, attempts: 1, maxAttempts: 1}
	switch opts.TimeoutAction() {
	case v1alpha1.DrainForceAction:
		if !markingRefused {
			d.step = deadlineForces
		}
	case v1alpha1.DrainRetryAction:
		d.maxAttempts = attempts
		if prev != nil && prev.BootID == boot {
			d.attempts = prev.Attempts + 1
		}
		if d.attempts < d.maxAttempts {
			d.step, d.nextAt = deadlineRetries, now.Add(backoff)
		}
	}
	return d
}

// retry gives a drain up for now: the node is uncordoned and unmarked
// (if kmaint did those), its admission released, and the attempt recorded
// on the node with when the next may start. Its requests stay open and
// wait (DrainRetryBackoff).
func (r *Reconciler) retry(ctx context.Context, st *poolState, v *view.Node, d deadlineDecision, msg string) error {
	retrying := protocol.DrainRetrying{BootID: v.Admission.BootID, Requests: v.Admission.Requests, Attempts: d.attempts,
		MaxAttempts: d.maxAttempts, NextAt: d.nextAt, Message: v1alpha1.FitReason(msg)}
	if _, err := r.patchNode(ctx, st, v, true, protocol.Retry(retrying)); err != nil {
		return err
	}
	st.wakeAt(d.nextAt)
	ctrl.LoggerFrom(ctx).Info("Drain to be retried", "node", v.Node.Name, "attempt", d.attempts, "maxAttempts", d.maxAttempts, "nextAt", d.nextAt)
	r.Metrics.DrainRetried(st.pool.Name)
	r.events.Both(st.pool, v.Node, corev1.EventTypeWarning, v1alpha1.DrainRetryScheduledReason, "Drain",
		"%s (attempt %d of %d); node uncordoned, its requests wait; attempt %d not before %s",
		msg, d.attempts, d.maxAttempts, d.attempts+1, d.nextAt.UTC().Format(time.RFC3339))
	return nil
}

// force deletes the pods eviction could not move, recording them on the
// node first, and then takes the node on as drained, in the same reconcile: to
// its beforeReboot hooks, or to its approval when it has none (or they
// passed already: a drain taken again after them was forced). Only a
// forcing that ended is taken on: the record of one that failed midway
// says which pods it named, not that they are gone. A forced drain lets a
// node past nothing else: approved straight away, it skipped the work its
// beforeReboot hooks were for. The record names the boot and requests, so
// that the NodeMaintenance controller tells the request it was forced
// whenever it looks, before or after the reboot.
func (r *Reconciler) force(ctx context.Context, st *poolState, v *view.Node, f drainFacts) error {
	if behind := r.cacheBehind(ctx, st); behind != "" {
		// Forcing approves: nothing is deleted before it may.
		st.drains[v.Node.Name] = drainReport{blocked: true, message: "past its deadline; forcing it waits: " + behind}
		return nil
	}
	forcing := protocol.DrainForcing{BootID: v.Admission.BootID, Requests: v.Admission.Requests, Time: st.now, Timeout: f.timeout.String()}
	// A forcing of this admission, recorded by a reconcile that then failed,
	// keeps the pods it named.
	if forcedThisAdmission(v) {
		forcing = *v.DrainForced
	}
	record := func(pods []string) error {
		forcing.AddPods(pods)
		_, err := r.patchNode(ctx, st, v, true, protocol.RecordForcing(forcing))
		if err == nil {
			v = st.view(v.Node.Name)
		}
		return err
	}
	if _, err := r.Drainer.Force(ctx, v.Node.Name, st.pool.Spec.Drain, record); err != nil {
		return fmt.Errorf("force drain of node %s: %w", v.Node.Name, err)
	}
	if !forcedThisAdmission(v) {
		// Nothing was left to delete: the record still says the drain
		// was forced, and when.
		if err := record(nil); err != nil {
			return err
		}
	}
	ctrl.LoggerFrom(ctx).Info("Drain forced", "node", v.Node.Name, "timeout", f.timeout, "deleted", forcing.Pods)
	r.Metrics.DrainForced(st.pool.Name, len(forcing.Pods)+forcing.MorePods)
	r.events.Both(st.pool, v.Node, corev1.EventTypeWarning, v1alpha1.DrainForcedReason, "Drain", "%s", forcing.Message(v.Node.Name))
	// Forcing is only taken when the approval fits the budget.
	d, err := r.hookDecision(ctx, st, v, protocol.BeforeReboot)
	if err != nil {
		return err
	}
	f.rebootHooks = &d
	return r.act(ctx, st, v, decideBeforeReboot(f, false), f)
}

// forcedRecord is the node's forced-drain record if its current admission
// was forced, for its approval to keep; else nil.
func forcedRecord(v *view.Node) *protocol.DrainForcing {
	if !forcedThisAdmission(v) {
		return nil
	}
	f := *v.DrainForced
	return &f
}

// forcedThisAdmission reports whether the node's forced-drain record is
// that of its current admission.
func forcedThisAdmission(v *view.Node) bool {
	f := v.DrainForced
	return f != nil && f.BootID == v.Admission.BootID && !f.Time.Before(v.Admission.Time)
}

// reportBackoff says, in the pool's Draining condition, which nodes wait
// for their next drain attempt, and wakes the pool when the first may
// start.
func reportBackoff(st *poolState) {
	for _, v := range st.views {
		if !v.InBackoff {
			continue
		}
		r := v.Retrying()
		st.drains[v.Node.Name] = drainReport{blocked: true, message: r.Waiting()}
		st.wakeAt(r.NextAt)
	}
}
