package policy

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/metrics"
	"github.com/kmaint/kmaint/operator/statuspatch"
	"github.com/kmaint/kmaint/policies"
)

// missedChangeDelay is how soon a policy with candidates evaluates again
// when another source's request changed while it evaluated: soon, and at
// most about once per this while a rollout changes requests many times a
// second.
const missedChangeDelay = time.Second

// Reconciler evaluates one RebootPolicy per reconcile and raises its
// NodeMaintenances.
type Reconciler struct {
	client.Client
	// Prometheus answers the policies' queries; nil reports every
	// Prometheus policy as unable to reach one.
	Prometheus policies.Querier
	Recorder   events.EventRecorder
	Clock      clock.PassiveClock
	// Metrics records evaluations; nil records nothing.
	Metrics *metrics.Recorder

	// written remembers the status last written per policy: the
	// cache may not show it yet, and a reconcile reading an older
	// evaluation time would query Prometheus again before the interval.
	written *statuspatch.Written[*v1alpha1.RebootPolicyStatus]
	// wakes says which policies another source's NodeMaintenance can
	// move (see policiesOf).
	wakes *policyWakes
	// apiReader lists the nodes a schedule fires for past the cache
	// (fire.go).
	apiReader client.Reader
}

// +kubebuilder:rbac:groups=kmaint.io,resources=rebootpolicies,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=kmaint.io,resources=rebootpolicies/status,verbs=get;patch;update
// +kubebuilder:rbac:groups=kmaint.io,resources=nodemaintenances,verbs=get;list;watch;create
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch

// Reconcile evaluates the policy's trigger, applies its guards, raises
// requests, and patches its status once.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, reterr error) {
	// A NodeMaintenance's change from now on may be one this evaluation
	// does not see: it is noted, and brings the policy back if it ends
	// with candidates.
	r.wakes.start(req.Name)
	var p v1alpha1.RebootPolicy
	if err := r.Get(ctx, req.NamespacedName, &p); err != nil {
		if apierrors.IsNotFound(err) {
			r.written.Forget(req.Name)
			r.wakes.forget(req.Name)
			r.Metrics.ForgetPolicy(req.Name)
			return ctrl.Result{}, nil
		}
		r.wakes.forget(req.Name)
		return ctrl.Result{}, fmt.Errorf("get policy %s: %w", req.Name, err)
	}
	// A policy that cannot be read raises nothing and is never written
	// back; package unreadable reports it.
	if !p.DeletionTimestamp.IsZero() || p.Unreadable() != nil {
		r.written.Forget(p.Name)
		r.wakes.forget(p.Name)
		return ctrl.Result{}, nil
	}
	last := p.Status
	if mem, ok := r.written.Last(p.Name, p.UID); ok {
		last = *mem
	}
	now := r.Clock.Now()
	out := &outcome{now: now, last: &last, freeze: freezeOf(&p, now)}
	defer func() {
		status := r.status(&p, out)
		if !equalStatus(last, status) {
			p.Status = status
			if err := r.Status().Patch(ctx, &p, statuspatch.Whole{}); err != nil {
				reterr = errors.Join(reterr, fmt.Errorf("patch status of policy %s: %w", p.Name, err))
				r.wakes.finish(p.Name, false)
				return
			}
			r.written.Remember(p.Name, p.UID, &status)
		}
		quiet := reterr == nil && len(status.Candidates) == 0
		if missed := r.wakes.finish(p.Name, quiet); missed && !quiet && reterr == nil {
			res = wakeAt(res, now, now.Add(missedChangeDelay))
		}
		// The Frozen condition changes with time alone.
		res = wakeAt(res, now, out.freeze.Until, out.freeze.Next)
	}()

	if p.Spec.Suspend {
		out.suspended = true
		return ctrl.Result{}, nil
	}
	s, err := parseSpec(&p)
	if err != nil {
		out.specErr = err
		return ctrl.Result{}, nil // reported; nothing to do until the spec changes
	}
	f, err := r.observe(ctx, &p)
	var se *specError
	if errors.As(err, &se) {
		out.specErr = err
		return ctrl.Result{}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	out.facts, out.interval = f, s.interval
	out.eval = r.evaluate(ctx, &p, &last, s, f, out.now)
	if p.Spec.Schedule != nil && out.eval.ran && out.eval.err == nil {
		out.eval = r.holdFireForTheCache(ctx, &p, &last, f, out.eval)
	}
	r.record(&p, out.eval)
	if out.eval.err != nil {
		return r.requeue(out), nil
	}
	out.cap, err = policies.ResolveCap(p.Spec.MaxConcurrentRequests, len(f.selected))
	if err != nil {
		out.specErr = &specError{field: "spec.maxConcurrentRequests", err: err}
		return ctrl.Result{}, nil
	}
	out.selection = r.decide(&p, s, f, out)
	if f.err != nil {
		return ctrl.Result{}, f.err
	}
	if p.Spec.DryRun || len(f.unreadable) > 0 {
		return r.requeue(out), nil
	}
	out.raised, err = r.raise(ctx, &p, s, byNode(out.eval.candidates), f.boot, out.selection.Raise)
	return r.requeue(out), err
}

// record counts an evaluation that ran, and keeps a Prometheus trigger's
// values per node.
func (r *Reconciler) record(p *v1alpha1.RebootPolicy, ev evaluation) {
	if !ev.ran {
		return
	}
	reason := ""
	if ev.err != nil {
		reason = "unreachable"
		if policies.IsQueryError(ev.err) {
			reason = "query"
		} else if p.Spec.Alert != nil {
			reason = "invalid"
		}
	}
	r.Metrics.PolicyEvaluated(p.Name, reason)
	if p.Spec.Prometheus != nil && ev.err == nil {
		r.Metrics.PolicyQueried(p.Name, ev.took)
		r.Metrics.PolicyValues(p.Name, ev.values)
	}
}

// decide applies the guards. A node whose request for this episode
// exists already, even a failed one, is not asked for again: a drain that
// timed out would only time out again.
func (r *Reconciler) decide(p *v1alpha1.RebootPolicy, s spec, f *facts, out *outcome) policies.Selection {
	open := make(map[string]bool, len(f.open))
	for node := range f.open {
		open[node] = true
	}
	for _, c := range out.eval.candidates {
		if f.requested(c.Node, requestName(p.Name, c.Node, f.boot[c.Node], c.Since)) {
			open[c.Node] = true
		}
	}
	nodes := make([]string, 0, len(out.eval.candidates))
	for _, c := range out.eval.candidates {
		nodes = append(nodes, c.Node)
	}
	return policies.Select(out.eval.candidates, policies.Guards{
		For:          s.forDur,
		Cooldown:     s.cooldown,
		LastReboot:   f.lastReboots(nodes, out.now),
		Open:         open,
		OpenByPolicy: f.ownOpen,
		Cap:          out.cap,
	}, out.now)
}

// requeue comes back for the next evaluation, or when a waiting candidate
// qualifies or leaves its cooldown, whichever is first.
func (r *Reconciler) requeue(out *outcome) ctrl.Result {
	next := out.eval.next
	if n := out.selection.Next; !n.IsZero() && (next.IsZero() || n.Before(next)) {
		next = n
	}
	if next.IsZero() {
		return ctrl.Result{}
	}
	return ctrl.Result{RequeueAfter: max(next.Sub(out.now), time.Second)}
}

// wakeAt returns res coming back by the earliest of times after now, if
// that is sooner than it already does.
func wakeAt(res ctrl.Result, now time.Time, times ...time.Time) ctrl.Result {
	for _, t := range times {
		if !t.After(now) {
			continue
		}
		if after := max(t.Sub(now), time.Second); res.RequeueAfter == 0 || after < res.RequeueAfter {
			res.RequeueAfter = after
		}
	}
	return res
}

func byNode(cs []policies.Candidate) map[string]policies.Candidate {
	m := make(map[string]policies.Candidate, len(cs))
	for _, c := range cs {
		m[c.Node] = c
	}
	return m
}
