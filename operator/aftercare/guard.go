package aftercare

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/poolnodes"
	"github.com/kmaint/kmaint/operator/poolstatus"
)

// guardState is what the settle phase found: what halts the pool.
type guardState struct {
	// failed lists the nodes the pool holds whose checks failed, oldest
	// failure first.
	failed []v1alpha1.HaltedNode
	// unavailable says why the checks cannot run for the pool's settling
	// nodes; empty when they ran (or none settles). unavailableReason is
	// the Halted condition's reason then.
	unavailable       string
	unavailableReason string
	// resumeErr says why the pool's kmaint.io/resume-halt cannot be read.
	resumeErr error
}

// halted reports whether the pool admits nothing new because of its
// health checks.
func (g guardState) halted() bool { return len(g.failed) > 0 || g.unavailable != "" }

// settle decides, for every settling node of the pool, whether it passes,
// fails its health checks, starts its settle time again or stays as it is
// (decideSettle), and writes that on the node, one patch each; then finds
// what halts the pool. The checks run at most once per interval for all
// the pool's settling nodes together.
func (r *Reconciler) settle(ctx context.Context, st *poolState) error {
	pool := st.pool
	var settling []string
	for _, v := range st.nodes.Members {
		if v.Settle != nil && v.Unreadable == nil {
			settling = append(settling, v.Node.Name)
		}
	}
	hc := pool.Spec.HealthChecks
	checks := hc != nil && len(hc.Queries) > 0
	var health *healthResult
	if checks && len(settling) > 0 {
		for _, q := range hc.Queries {
			r.Metrics.InitHealthCheck(pool.Name, q.Name)
		}
		// Only the checks read the pool's nodes as a list; copying them at
		// every reconcile was about a seventh of the operator's allocations
		// at 2000 nodes.
		nodes := make([]corev1.Node, 0, len(st.nodes.Members))
		for _, v := range st.nodes.Members {
			nodes = append(nodes, *v.Node)
		}
		h, next := r.health(ctx, st, settling, nodes)
		health = &h
		st.wakeAt(next)
		if h.err != "" {
			st.guard.unavailable, st.guard.unavailableReason = h.err, h.errReason
		}
	}
	resumeAt, resumeErr := pool.ResumeHaltTime(st.now)
	st.guard.resumeErr = resumeErr
	var errs []error
	for _, name := range settling {
		v := st.member(name)
		d := decideSettle(settleInput{
			now: st.now, rec: *v.Settle, node: name, bootID: v.BootID, ready: v.Ready,
			guarded: pool.Spec.Guarded(), settle: pool.Spec.Settle(),
			checks: checks, health: health, resume: hc.ResumePolicy(), resumeAt: resumeAt,
		})
		st.wakeAt(d.wake)
		errs = append(errs, r.settleStep(ctx, st, v, d))
	}
	st.guard.failed = haltedNodes(st)
	return errors.Join(errs...)
}

// settleStep writes what decideSettle decided for one node, with its event.
func (r *Reconciler) settleStep(ctx context.Context, st *poolState, v poolnodes.Member, d settleDecision) error {
	log := ctrl.LoggerFrom(ctx).WithValues("node", v.Node.Name)
	switch d.step {
	case settleKeep:
		return nil
	case settleUpdate, settleFail:
		next := d.next
		if err := r.patchNode(ctx, st, v, protocol.UpdateSettle(next)); err != nil {
			return err
		}
		if d.step == settleFail {
			f := next.Failure
			log.Info("Health check failed", "check", f.Check, "value", f.Value, "series", f.Series)
			r.Metrics.HealthCheckFailed(st.pool.Name, f.Check)
			r.events.Both(st.pool, v.Node, corev1.EventTypeWarning, v1alpha1.HealthCheckFailedReason, "Check",
				"Node %s failed health check %q after its reboot: value %s for %s; it keeps its slot and pool %s is halted",
				v.Node.Name, f.Check, f.Value, f.Series, st.pool.Name)
		}
		return nil
	}
	if err := r.patchNode(ctx, st, v, protocol.Settled()); err != nil {
		return err
	}
	rec := v.Settle
	switch d.step {
	case settlePass:
		log.Info("Node settled")
		r.events.Node(st.pool, v.Node, corev1.EventTypeNormal, v1alpha1.SettledReason, "Settle",
			"Node %s settled after its reboot (since %s) and passed its checks; its slot is free", v.Node.Name, rec.Since.UTC().Format(time.RFC3339))
	case settleRecovered:
		log.Info("Node recovered from a failed health check", "check", rec.Failure.Check)
		r.events.Both(st.pool, v.Node, corev1.EventTypeNormal, v1alpha1.HealthCheckRecoveredReason, "Settle",
			"Node %s passed its health checks for a whole settle time after %q failed; its slot is free and the pool goes on", v.Node.Name, rec.Failure.Check)
	case settleResumed:
		log.Info("Halt resumed", "check", rec.Failure.Check)
		r.events.Both(st.pool, v.Node, corev1.EventTypeNormal, v1alpha1.HealthCheckResumedReason, "Resume",
			"Pool %s was resumed (%s) after node %s failed health check %q; the node gives up its slot as it is",
			st.pool.Name, v1alpha1.ResumeHaltAnnotation, v.Node.Name, rec.Failure.Check)
	case settleRelease:
		log.Info("Settle released, the pool has no settle time or health checks any longer")
		r.events.Both(st.pool, v.Node, corev1.EventTypeNormal, v1alpha1.SettledReason, "Settle",
			"Node %s gives up its slot: pool %s no longer has a settle time or health checks", v.Node.Name, st.pool.Name)
	}
	return nil
}

// haltedNodes lists the nodes the pool holds (pools.Of: its own, a node in
// flight it admitted among them, whatever its labels say now) whose checks
// failed, oldest failure first.
func haltedNodes(st *poolState) []v1alpha1.HaltedNode {
	var out []v1alpha1.HaltedNode
	for _, v := range st.nodes.Members {
		if h := v.HaltsPool(); h != nil {
			out = append(out, h.Entry)
		}
	}
	slices.SortFunc(out, func(a, b v1alpha1.HaltedNode) int {
		if c := a.Time.Compare(b.Time.Time); c != 0 {
			return c
		}
		return cmp.Compare(a.Node, b.Node)
	})
	return out
}

// maxHaltedNodes is status.halt.nodes' bound in the schema.
const maxHaltedNodes = 100

// setHalted reports the pool's halt on its status: status.halt and
// status.settling, and the condition Halted; it returns whether a halt
// begins. The gate writes the status's other fields and reads the halt
// from Halted, as NodeMaintenances do.
func setHalted(st *poolState) (begins bool) {
	pool := st.pool
	s := &pool.Status
	s.Settling, s.Halt = 0, nil
	for _, v := range st.nodes.Members {
		if v.Settle != nil || v.SettleUnreadable() {
			s.Settling++
		}
	}
	g := st.guard
	if len(g.failed) > 0 {
		s.Halt = &v1alpha1.PoolHalt{Since: g.failed[0].Time, Resume: pool.Spec.HealthChecks.ResumePolicy(), Nodes: g.failed[:min(len(g.failed), maxHaltedNodes)]}
	}
	reason, msg := haltMessage(st)
	was := meta.IsStatusConditionTrue(s.Conditions, v1alpha1.HaltedCondition)
	c := metav1.Condition{Type: v1alpha1.HaltedCondition, Status: metav1.ConditionFalse, Reason: v1alpha1.NotHaltedReason, ObservedGeneration: pool.Generation}
	if reason != "" {
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, reason, v1alpha1.FitMessage(msg)
	}
	meta.SetStatusCondition(&s.Conditions, c)
	return reason != "" && !was
}

// writeStatus writes the pool's halt when it changed, with a Warning event
// PoolHalted as a halt begins: aftercare's part of the status
// (poolstatus.AftercarePart: settling, halt and the Halted condition),
// applied as its own field manager, so that it and the gate, which writes
// the rest, never undo each other's writes; applied only to the version of
// the pool it was made from, so that a halt is announced once. The built-in default pool has
// no status, and a pool that cannot be read is never written back.
func (r *Reconciler) writeStatus(ctx context.Context, st *poolState) error {
	pool := st.pool
	// The gate writes the status first: its counts are required fields,
	// which an apply of the halt alone would leave out. Its write wakes this
	// controller again.
	if pool.UID == "" || pool.Unreadable() != nil || pool.Status.ObservedGeneration == 0 {
		return nil
	}
	base := pool.DeepCopy()
	begins := setHalted(st)
	if equality.Semantic.DeepEqual(base.Status, pool.Status) {
		return nil
	}
	applied, err := poolstatus.AftercarePart.Part(pool)
	if err != nil {
		return err
	}
	switch err := r.Status().Patch(ctx, pool, poolstatus.AftercarePart, client.FieldOwner(poolstatus.AftercareManager), client.ForceOwnership); {
	case apierrors.IsConflict(err):
		// The cache is behind a write (this controller's: the halt would
		// be announced twice; or the gate's), or the pool was made again:
		// the next reconcile, on the pool as it is, writes it.
		st.wakeAt(st.now.Add(time.Second))
		return nil
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("apply the halt of pool %s: %w", pool.Name, err)
	}
	if err := r.removeLeftovers(ctx, pool, applied); err != nil {
		return err
	}
	if begins {
		reason, msg := haltMessage(st)
		ctrl.LoggerFrom(ctx).Info("Pool halted", "reason", reason)
		r.Recorder.Eventf(pool, nil, corev1.EventTypeWarning, v1alpha1.PoolHaltedReason, "Halt", "%s", v1alpha1.FitMessage(msg))
	}
	return nil
}

// removeLeftovers removes from the pool what is aftercare's part of its
// status but was not applied (statuspatch.Apply.Leftovers): a halt written
// by an operator before the status had a field manager per controller
// would otherwise outlive its end.
func (r *Reconciler) removeLeftovers(ctx context.Context, stored *v1alpha1.MaintenancePool, applied map[string]any) error {
	patch, err := poolstatus.AftercarePart.Leftovers(stored, applied)
	if patch == nil || err != nil {
		return err
	}
	if err := r.Status().Patch(ctx, stored, patch, client.FieldOwner(poolstatus.AftercareManager)); err != nil && !apierrors.IsInvalid(err) {
		return fmt.Errorf("remove what is left of an earlier halt of pool %s: %w", stored.Name, err)
	}
	return nil
}

// haltMessage says why the pool is halted: the failed nodes first, since
// they need a person; empty when it is not.
func haltMessage(st *poolState) (reason, msg string) {
	g := st.guard
	switch {
	case len(g.failed) > 0:
		var parts []string
		for _, n := range g.failed {
			parts = append(parts, fmt.Sprintf("node %s failed: %s", n.Node, n.Message))
		}
		msg = strings.Join(parts, "; ") + "; nothing new is admitted until "
		if st.pool.Spec.HealthChecks.ResumePolicy() == v1alpha1.ResumeOnRecovery {
			msg += "the checks pass again for a whole settle time, or "
		}
		msg += fmt.Sprintf("a person resumes the pool (kubectl kmaint resume %s)", st.pool.Name)
		if g.resumeErr != nil {
			msg += fmt.Sprintf("; %v, so it resumes nothing", g.resumeErr)
		}
		reason = v1alpha1.HealthCheckFailedReason
		if v1alpha1.IsHookHalt(g.failed[0]) {
			reason = v1alpha1.HookFailedReason
		}
		return reason, msg
	case g.unavailable != "":
		reason = g.unavailableReason
		if reason == "" {
			reason = v1alpha1.HealthCheckUnavailableReason
		}
		return reason, g.unavailable + "; no settling node passes and nothing new is admitted until the checks run"
	}
	return "", ""
}
