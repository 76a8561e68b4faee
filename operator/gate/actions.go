package gate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/drain"
	"github.com/kmaint/kmaint/operator/hooks"
	"github.com/kmaint/kmaint/operator/poolnodes"
)

// defaultDrainTimeout applies when a pool leaves drain.timeout unset, as the
// built-in default pool does.
const defaultDrainTimeout = 10 * time.Minute

// patchNode applies a protocol transition to the node (poolnodes.Patch)
// and puts the node as written back into the state, so that later phases and
// the status see the write.
func (r *Reconciler) patchNode(ctx context.Context, st *poolState, v *nodeView, lock bool, t protocol.Transition) (*corev1.Node, error) {
	node, err := poolnodes.Patch(ctx, r.Client, v.Node, lock, t)
	if err != nil {
		return nil, err
	}
	st.replace(node)
	return node, nil
}

// syncDesiredConfig writes the pool's desiredConfig to its nodes. Nodes that
// two pools select get none: no pool owns them.
func (r *Reconciler) syncDesiredConfig(ctx context.Context, st *poolState) error {
	want := st.pool.Spec.DesiredConfig
	var errs []error
	started := false
	for _, v := range st.views {
		// Read from the annotation: with want set, equal means it is there;
		// with none wanted, absent or empty is the same.
		if len(v.otherPools) > 0 || v.DesiredConfig == want {
			continue
		}
		_, err := r.patchNode(ctx, st, v, false, protocol.SetDesiredConfig(want))
		errs = append(errs, err)
		started = started || err == nil && want != "" && v.CurrentConfig != want
	}
	if started && st.pool.UID != "" {
		// The quiet members not among the views are in no other pool.
		outdated := st.quiet().Nodes - st.quiet().Current
		for _, v := range st.views {
			if len(v.otherPools) == 0 && v.CurrentConfig != want {
				outdated++
			}
		}
		r.status.RolloutStarted(ctx, st.pool, outdated, st.memberCount())
	}
	return errors.Join(errs...)
}

// releaseVoid releases admissions that no longer stand for a request
// (protocol.NodeState.AdmissionVoid), freeing their slots: the node
// rebooted by other means, or its requests are gone. The release is one
// patch, and the Jobs of its hooks are stopped after it. What comes after
// an approved reboot is aftercare's.
func (r *Reconciler) releaseVoid(ctx context.Context, st *poolState) error {
	var errs []error
	for _, v := range st.views {
		if !v.AdmissionVoid() {
			continue
		}
		rec := v.Hook
		if _, err := r.patchNode(ctx, st, v, true, protocol.Release()); err != nil {
			errs = append(errs, err)
			continue
		}
		errs = append(errs, r.hooks.Stop(ctx, rec))
		r.events.Node(st.pool, v.Node, corev1.EventTypeNormal, "AdmissionReleased", "Release",
			"Node %s no longer requests a reboot of the admitted boot; released before approval", v.Node.Name)
	}
	return errors.Join(errs...)
}

// drain marks every admitted, unapproved node and steps its drain;
// approves nodes that are drained; retries, abandons or forces drains past
// the pool's timeout (drain.onTimeout). It returns when to come back while
// drains are in progress.
func (r *Reconciler) drain(ctx context.Context, st *poolState) (time.Duration, error) {
	timeout := drainTimeout(st.pool)
	reportBackoff(st)
	var requeue time.Duration
	var errs []error
	mayApprove, used := approvable(st.views, st.counted(), st.admission.budget)
	// Put the cordon back where someone lifted it, and the pool's marks on
	// nodes that lack them; then read what each drain's last step found
	// (drainSteps steps them outside this reconcile) and act on it.
	following := map[string]bool{}
	for _, v := range st.views {
		// A node whose annotations cannot be read is never approved: what
		// its admission stands for cannot be told.
		if !v.Draining() || v.Admission.BootID == "" || v.Unreadable != nil {
			continue
		}
		name := v.Node.Name
		if !v.Unschedulable {
			// Someone uncordoned a node kmaint is draining; pods would land
			// on it again, so the cordon goes back on, and what the drain
			// found before counts for nothing: a node at its beforeReboot
			// hooks drains again, and meets them again after (their Jobs
			// are the same, and are not run twice).
			var err error
			if drainedForHooks(v) {
				_, err = r.patchNode(ctx, st, v, true, protocol.Redrain())
			} else {
				_, err = r.patchNode(ctx, st, v, true, protocol.Recordon())
			}
			if err != nil {
				errs = append(errs, err)
				continue
			}
			r.steps.Stop(name)
			v = st.view(name)
		}
		marked, err := r.mark(ctx, st, v)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if marked && drainedForHooks(v) {
			following[name] = true
			errs = append(errs, r.beforeReboot(ctx, st, v, mayApprove[name], used, true))
			continue
		}
		var last drain.StepResult
		var stepped bool
		if marked {
			// Nothing is evicted before the beforeDrain hooks pass.
			outcome, err := r.atHooks(ctx, st, v, protocol.BeforeDrain)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if v = st.view(name); outcome != hooks.OutcomePassed {
				errs = append(errs, r.heldByHooks(ctx, st, v, outcome))
				continue
			}
			following[name] = true
			last, stepped = r.steps.Follow(drain.KeyOf(name, v.Admission.BootID, v.Admission.Time), st.pool.Name, st.pool.Spec.Drain)
		}
		drained := stepped && last.Err == nil && last.Progress.Done
		switch {
		case drained && !mayApprove[name]:
			// Drained, but approving it would take the pool past its
			// budget: it waits, cordoned, and the pool says why. Its
			// drain is done, so no timeout abandons it.
			st.drains[name] = drainReport{blocked: true, message: fmt.Sprintf(
				"drained; its approval waits: %d nodes count against a maxUnavailable of %d", used, st.admission.budget)}
		case drained && last.Stale:
			// Its pool's reconciles lagged behind the steps: the next
			// step, under way, looks again before the node is approved.
			st.drains[name] = drainReport{message: "drained; looking once more before its approval"}
		case drained:
			errs = append(errs, r.beforeReboot(ctx, st, v, true, used, false))
		case st.now.Sub(st.drainStart(v)) >= timeout:
			r.steps.Stop(name)
			errs = append(errs, r.atDeadline(ctx, st, v, timeout, last.Progress, last.Err, mayApprove[name]))
		default:
			switch {
			case stepped:
				st.drains[name] = report(last.Progress, last.Err)
			case marked:
				st.drains[name] = drainReport{message: "its first drain step is under way"}
			}
			// Each step wakes the pool; this wakes it at the drain's
			// deadline should no step end before it.
			wait := min(drain.StepTimeout, timeout-st.now.Sub(st.drainStart(v)))
			if requeue == 0 || wait < requeue {
				requeue = wait
			}
		}
	}
	r.steps.StopOthers(st.pool.Name, following)
	return requeue, errors.Join(errs...)
}

// drainTimeout is how long a drain of the pool may take (drain.timeout).
func drainTimeout(p *v1alpha1.MaintenancePool) time.Duration {
	if t := p.Spec.Drain.Timeout; t != nil && t.Duration > 0 {
		return t.Duration
	}
	return defaultDrainTimeout
}

// drainReport is where a drain stands, for the pool's Draining condition.
type drainReport struct {
	message string
	// blocked is true when something refuses the drain: a budget, a pod the
	// options do not allow to evict, or a failing API call.
	blocked bool
	// markingRefused is true when the message says why the pool's
	// nodeMarking cannot be put on the node, whose drain then does not
	// start (marks.go); its deadline then never forces it.
	markingRefused bool
}

// report says, for a person, where a drain stands after a step.
func report(p drain.Progress, err error) drainReport {
	if err != nil {
		return drainReport{message: err.Error(), blocked: true}
	}
	msg := fmt.Sprintf("%d pods left", p.Remaining)
	if len(p.Blockers) > 0 {
		msg += ": " + strings.Join(p.Blockers, "; ")
	}
	return drainReport{message: msg, blocked: len(p.Blockers) > 0}
}

// approve writes reboot-approved for the boot the requests were made in, the
// last step before the daemon reboots. forced is the forced drain that
// approves it, nil for a drain that finished; a forced drain's record stays
// on the node, an earlier one's goes.
func (r *Reconciler) approve(ctx context.Context, st *poolState, v *nodeView, forced *protocol.DrainForcing) error {
	if cur := v.Current(); cur == nil || cur.BootID != v.Admission.BootID {
		return nil // releaseVoid releases it on the next pass
	}
	if behind := r.cacheBehind(ctx, st); behind != "" {
		// Approved from a stale budget, it could take the pool past a
		// lowered one: it waits, drained, for the next pass.
		st.drains[v.Node.Name] = drainReport{blocked: true, message: "drained; its approval waits: " + behind}
		return nil
	}
	boot := v.Admission.BootID
	approval := *v.Admission
	approval.View = st.freshness.nodes
	if _, err := r.patchNode(ctx, st, v, true, protocol.Approve(approval, st.now, forced != nil)); err != nil {
		return err
	}
	ctrl.LoggerFrom(ctx).Info("Reboot approved", "node", v.Node.Name, "bootID", boot, "forced", forced != nil)
	if forced != nil {
		r.events.Both(st.pool, v.Node, corev1.EventTypeNormal, "RebootApproved", "Approve",
			"Node %s's drain was forced; reboot approved for boot %s", v.Node.Name, boot)
		return nil
	}
	// A drain that finished gets no event: the daemon's Rebooting, on
	// the same node a moment later, tells a person the same, and the
	// NodeMaintenance's phase times say when the drain ended. One event
	// less per reboot is one write less in a rollout of thousands.
	r.Metrics.Drained(st.pool.Name, st.now.Sub(v.Admission.Time))
	return nil
}

// abandon gives up a drain that ran past the pool's timeout: the node is
// uncordoned and unmarked if kmaint did those, and its current requests
// are marked as failed so the same requests do not start the same drain
// again.
func (r *Reconciler) abandon(ctx context.Context, st *poolState, v *nodeView, timeout time.Duration, msg string) error {
	failure := protocol.DrainFailure{BootID: v.Admission.BootID, Requests: v.Admission.Requests, Time: st.now, Reason: v1alpha1.DrainTimeoutReason, Message: msg}
	if cur := v.Current(); cur != nil && cur.BootID == v.Admission.BootID {
		failure.Requests = cur.IDs()
	}
	if _, err := r.patchNode(ctx, st, v, true, protocol.Abandon(failure)); err != nil {
		return err
	}
	ctrl.LoggerFrom(ctx).Info("Drain abandoned", "node", v.Node.Name, "timeout", timeout, "message", msg)
	r.Metrics.DrainFailed(st.pool.Name, failure.Reason)
	r.events.Both(st.pool, v.Node, corev1.EventTypeWarning, v1alpha1.DrainFailedEventReason, "Drain", "%s", msg)
	return nil
}

// admit makes the admission decision (decide) and cordons each admitted
// node in one patch that also records the admission, then remembers the
// write until the cache has it. A budget that cannot be resolved admits
// nothing.
func (r *Reconciler) admit(ctx context.Context, st *poolState) error {
	r.decide(ctx, st)
	a := &st.admission
	if a.budgetErr != nil {
		return a.budgetErr
	}
	var errs []error
	for _, name := range a.plan.admit {
		v := st.view(name)
		cur := v.Current()
		admission := protocol.Admission{BootID: cur.BootID, Requests: cur.IDs(), Time: st.now, Pool: st.pool.Name, PoolUID: st.pool.UID,
			View: st.freshness.nodes}
		if h := st.pool.Spec.Hooks; h != nil && len(h.BeforeDrain)+len(h.BeforeReboot)+len(h.AfterReboot) > 0 {
			admission.Sources, admission.Reasons = cur.Describe(admission.Requests)
		}
		node, err := r.patchNode(ctx, st, v, true, protocol.Admit(admission))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		r.inflight.add(name, node.ResourceVersion, st.now)
		r.Metrics.Admitted(st.pool.Name)
		ctrl.LoggerFrom(ctx).Info("Node admitted", "node", name, "bootID", admission.BootID, "requests", admission.Requests)
		r.events.Node(st.pool, node, corev1.EventTypeNormal, "Admitted", "Admit",
			"Node %s admitted for reboot (%d of %d unavailable); cordoned and draining", name, st.unavailable(), a.budget)
		if o := v.overridden; o != nil {
			r.events.Both(st.pool, node, corev1.EventTypeWarning, v1alpha1.PodOptOutOverriddenReason, "Admit",
				"%s; held since %s, past the pool's podOptOuts.maxHold (%s): admitted as its afterMaxHold (%s) says",
				o.Message, v.Held.Since.UTC().Format(time.RFC3339), st.pool.Spec.PodOptOuts.MaxHold.Duration, v1alpha1.PodHoldAdmit)
		}
	}
	return errors.Join(errs...)
}
