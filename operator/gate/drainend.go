package gate

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/drain"
)

// deadlineStep is what the gate does with a drain past its timeout.
type deadlineStep int

const (
	// abandonDrain: uncordon, and fail the requests.
	abandonDrain deadlineStep = iota
	// retryDrain: uncordon, and admit the node again after the backoff.
	retryDrain
	// forceDrain: delete what eviction could not move, and approve.
	forceDrain
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
	d := deadlineDecision{step: abandonDrain, attempts: 1, maxAttempts: 1}
	switch opts.TimeoutAction() {
	case v1alpha1.DrainForceAction:
		if !markingRefused {
			d.step = forceDrain
		}
	case v1alpha1.DrainRetryAction:
		d.maxAttempts = attempts
		if prev != nil && prev.BootID == boot {
			d.attempts = prev.Attempts + 1
		}
		if d.attempts < d.maxAttempts {
			d.step, d.nextAt = retryDrain, now.Add(backoff)
		}
	}
	return d
}

// atDeadline acts on a drain past its timeout, as decideDeadline says.
// A forced drain waits, cordoned, while approving it would take the pool
// past its budget.
func (r *Reconciler) atDeadline(ctx context.Context, st *poolState, v *nodeView, timeout time.Duration, progress drain.Progress, stepErr error, mayApprove bool) error {
	var refused string
	if dr := st.drains[v.Node.Name]; dr.markingRefused {
		refused = dr.message
	}
	d := decideDeadline(st.pool.Spec.Drain, v.Retrying(), v.Admission.BootID, refused != "", st.now)
	msg := deadlineMessage(v, timeout, progress.Blockers, stepErr, refused)
	switch d.step {
	case retryDrain:
		return r.retry(ctx, st, v, d, msg)
	case forceDrain:
		if !mayApprove {
			st.drains[v.Node.Name] = drainReport{blocked: true, message: "past its timeout; the forced reboot waits for the pool's budget"}
			return nil
		}
		return r.force(ctx, st, v, timeout)
	}
	if d.maxAttempts > 1 {
		msg = fmt.Sprintf("%s (attempt %d of %d; no attempt left)", msg, d.attempts, d.maxAttempts)
	}
	return r.abandon(ctx, st, v, timeout, msg)
}

// deadlineMessage says what kept a drain from finishing.
func deadlineMessage(v *nodeView, timeout time.Duration, blockers []string, stepErr error, markingRefused string) string {
	msg := fmt.Sprintf("drain of node %s did not finish within %s", v.Node.Name, timeout)
	switch {
	case markingRefused != "":
		msg += ": " + markingRefused
	case len(blockers) > 0:
		msg += ": " + strings.Join(blockers, "; ")
	case stepErr != nil:
		msg += ": " + stepErr.Error()
	}
	return msg
}

// retry gives a drain up for now: the node is uncordoned and unmarked
// (if kmaint did those), its admission released, and the attempt recorded
// on the node with when the next may start. Its requests stay open and
// wait (DrainRetryBackoff).
func (r *Reconciler) retry(ctx context.Context, st *poolState, v *nodeView, d deadlineDecision, msg string) error {
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
// node first, and then takes the node on as drained: to its beforeReboot
// hooks, or to its approval in the same pass when it has none (or they
// passed already: a drain taken again after them was forced). A forced
// drain lets a node past nothing else: approved straight away, it skipped
// the work its beforeReboot hooks were for. The record names the boot and
// requests, so that the NodeMaintenance controller tells the request it
// was forced whenever it looks, before or after the reboot.
func (r *Reconciler) force(ctx context.Context, st *poolState, v *nodeView, timeout time.Duration) error {
	if behind := r.cacheBehind(ctx, st); behind != "" {
		// Forcing approves: nothing is deleted before it may.
		st.drains[v.Node.Name] = drainReport{blocked: true, message: "past its deadline; forcing it waits: " + behind}
		return nil
	}
	forcing := protocol.DrainForcing{BootID: v.Admission.BootID, Requests: v.Admission.Requests, Time: st.now, Timeout: timeout.String()}
	// A forcing of this admission, recorded by a pass that then failed,
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
	ctrl.LoggerFrom(ctx).Info("Drain forced", "node", v.Node.Name, "timeout", timeout, "deleted", forcing.Pods)
	r.Metrics.DrainForced(st.pool.Name, len(forcing.Pods)+forcing.MorePods)
	r.events.Both(st.pool, v.Node, corev1.EventTypeWarning, v1alpha1.DrainForcedReason, "Drain", "%s", forcing.Message(v.Node.Name))
	// Forcing is only taken when the approval fits the budget: used is
	// not read.
	r.steps.Stop(v.Node.Name)
	return r.beforeReboot(ctx, st, v, true, 0, false)
}

// forcedRecord is the node's forced-drain record if its current admission
// was forced, for its approval to keep; else nil.
func forcedRecord(v *nodeView) *protocol.DrainForcing {
	if !forcedThisAdmission(v) {
		return nil
	}
	f := *v.DrainForced
	return &f
}

// forcedThisAdmission reports whether the node's forced-drain record is
// that of its current admission.
func forcedThisAdmission(v *nodeView) bool {
	f := v.DrainForced
	return f != nil && f.BootID == v.Admission.BootID && !f.Time.Before(v.Admission.Time)
}

// reportBackoff says, in the pool's Draining condition, which nodes wait
// for their next drain attempt, and wakes the pool when the first may
// start.
func reportBackoff(st *poolState) {
	for _, v := range st.views {
		if !v.backingOff {
			continue
		}
		r := v.Retrying()
		st.drains[v.Node.Name] = drainReport{blocked: true, message: r.Waiting()}
		st.wakeAt(r.NextAt)
	}
}
