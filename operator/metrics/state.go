package metrics

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/internal/pools"
)

// State collects the per-pool and per-policy gauges from the operator's
// cache at scrape time. It registers itself when started by the manager and
// unregisters when the manager stops, so that an operator restarted in the
// same process (as the simulated cluster does) does not report twice.
type State struct {
	// Reader reads the cache; Finished counts the finished
	// NodeMaintenances, which Reader would have to copy to count.
	Reader   client.Reader
	Finished func() int
	Registry prometheus.Registerer
	Clock    clock.PassiveClock

	descs map[string]*prometheus.Desc
}

// NewState returns a collector reading from reader, which counts finished
// NodeMaintenances with finished.
func NewState(reader client.Reader, finished func() int, reg prometheus.Registerer, clk clock.PassiveClock) *State {
	s := &State{Reader: reader, Finished: finished, Registry: reg, Clock: clk, descs: map[string]*prometheus.Desc{}}
	pool := []string{"pool"}
	s.desc(PoolNodes, "Nodes in the pool.", pool)
	s.desc(PoolReadyNodes, "Ready nodes in the pool.", pool)
	s.desc(PoolUpdatedNodes, "Nodes running the pool's desired config.", pool)
	s.desc(PoolUnavailableNodes, "Nodes counted against the pool's budget: admitted, draining, rebooting, not Ready or cordoned.", pool)
	s.desc(PoolMaxUnavailable, "The pool's budget, maxUnavailable resolved to nodes.", pool)
	s.desc(PoolDrainingNodes, "Nodes being drained.", pool)
	s.desc(PoolRebootingNodes, "Nodes approved to reboot and not yet back.", pool)
	s.desc(PoolDegradedNodes, "Nodes whose approved reboot did not happen.", pool)
	s.desc(PoolPendingRequests, "Nodes with requests waiting for admission.", pool)
	s.desc(PoolBlocked, "1 while the pool admits nothing new, with the reason (Paused, BudgetExhausted, OutsideWindow, BlockingQuery ...).", []string{"pool", "reason"})
	s.desc(PoolWindowOpen, "1 while one of the pool's maintenance windows is open, or the pool has none.", pool)
	s.desc(PoolPaused, "1 while the pool is paused.", pool)
	s.desc(PoolOverBudget, "1 while more of the pool's nodes count against its budget than maxUnavailable allows (its OverBudget condition).", pool)
	s.desc(PoolOptedOutNodes, "Waiting nodes of the pool held by an opt-out (do-not-disrupt on the node or a pod, or blockingPodSelector).", pool)
	s.desc(PoolHalted, "1 while the pool's health checks halt it: a node failed one after its reboot, or they cannot run (its Halted condition).", pool)
	s.desc(PoolSettlingNodes, "Nodes back from their reboot that hold their slot in the pool's budget while they settle (settle time, health checks).", pool)
	s.desc(PoolHookNodes, "Nodes that wait at one of the pool's hooks (before the drain, before the reboot, after it), or whose hook failed; each keeps its slot.", pool)
	s.desc(PoolFrozen, "1 while one of the pool's freezes is in force, or one cannot be read (its Frozen condition).", pool)
	s.desc(ClusterPaused, "1 while the MaintenanceGate named cluster stops every pool's admissions: paused, or unreadable.", nil)
	policy := []string{"policy"}
	s.desc(PolicyCandidates, "Nodes meeting a policy's trigger, by what they wait for.", []string{"policy", "state"})
	s.desc(PolicyOpenRequests, "A policy's requests not yet Succeeded or Failed.", policy)
	s.desc(PolicyRequestsRaised, "Requests a policy has raised since it was created.", policy)
	s.desc(PolicyThreshold, "A Prometheus policy's threshold.", policy)
	s.desc(PolicyCondition, "1 while a policy's condition is True.", []string{"policy", "condition"})
	s.desc(PolicyLastEvaluation, "When a policy was last evaluated, in seconds since the epoch.", policy)
	s.desc(UnreadableObjects, "kmaint objects whose stored body does not fit the API (see their Unreadable condition), by kind.", []string{"kind"})
	s.desc(Maintenances, "NodeMaintenances kept, by state: open, finished, or unreadable.", []string{"state"})
	return s
}

func (s *State) desc(name, help string, labels []string) {
	s.descs[name] = prometheus.NewDesc(name, help, labels, nil)
}

// Describe implements prometheus.Collector.
func (s *State) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range s.descs {
		ch <- d
	}
}

// Start registers the collector until ctx ends; it implements
// manager.Runnable.
func (s *State) Start(ctx context.Context) error {
	err := s.Registry.Register(s)
	var already prometheus.AlreadyRegisteredError
	switch {
	case errors.As(err, &already):
		// Another operator in this process reports the same cache
		// contents; one report is enough.
		<-ctx.Done()
		return nil
	case err != nil:
		return fmt.Errorf("register state metrics: %w", err)
	}
	<-ctx.Done()
	s.Registry.Unregister(s)
	return nil
}

// NeedLeaderElection is true: only the leader reports the gauges, so that a
// sum over replicas does not count a pool twice.
func (s *State) NeedLeaderElection() bool { return true }

// Collect implements prometheus.Collector.
func (s *State) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	log := ctrl.Log.WithName("metrics")
	var pools v1alpha1.MaintenancePoolList
	if err := s.Reader.List(ctx, &pools); err != nil {
		log.Error(err, "list pools for metrics")
	}
	for i := range pools.Items {
		// Nothing of a pool that cannot be read is known but that;
		// UnreadableObjects counts it.
		if pools.Items[i].Unreadable() == nil {
			s.collectPool(ch, &pools.Items[i])
		}
	}
	var list v1alpha1.RebootPolicyList
	if err := s.Reader.List(ctx, &list); err != nil {
		log.Error(err, "list policies for metrics")
	}
	counts, err := s.countMaintenances(ctx)
	if err != nil {
		log.Error(err, "count node maintenances for metrics")
	} else {
		s.gauge(ch, Maintenances, float64(counts.open), "open")
		s.gauge(ch, Maintenances, float64(counts.finished), "finished")
		s.gauge(ch, Maintenances, float64(counts.unreadable), "unreadable")
	}
	for i := range list.Items {
		if list.Items[i].Unreadable() == nil {
			s.collectPolicy(ch, &list.Items[i], counts.openByPolicy[list.Items[i].Name])
		}
	}
	unreadable := map[string]int{"MaintenancePool": 0, "RebootPolicy": 0, "NodeMaintenance": counts.unreadable, "MaintenanceGate": 0}
	gate := &v1alpha1.MaintenanceGate{}
	stopped := false
	switch err := s.Reader.Get(ctx, client.ObjectKey{Name: v1alpha1.ClusterGateName}, gate); {
	case err == nil:
		stopped = v1alpha1.StopOf(gate) != nil
		if gate.Unreadable() != nil {
			unreadable["MaintenanceGate"]++
		}
	case !apierrors.IsNotFound(err):
		log.Error(err, "get the MaintenanceGate for metrics")
	}
	s.gauge(ch, ClusterPaused, bool01(stopped))
	for i := range pools.Items {
		if pools.Items[i].Unreadable() != nil {
			unreadable["MaintenancePool"]++
		}
	}
	for i := range list.Items {
		if list.Items[i].Unreadable() != nil {
			unreadable["RebootPolicy"]++
		}
	}
	for kind, n := range unreadable {
		s.gauge(ch, UnreadableObjects, float64(n), kind)
	}
}

func (s *State) gauge(ch chan<- prometheus.Metric, name string, v float64, labels ...string) {
	ch <- prometheus.MustNewConstMetric(s.descs[name], prometheus.GaugeValue, v, labels...)
}

func (s *State) collectPool(ch chan<- prometheus.Metric, p *v1alpha1.MaintenancePool) {
	st, name := p.Status, p.Name
	s.gauge(ch, PoolNodes, float64(st.Nodes), name)
	s.gauge(ch, PoolReadyNodes, float64(st.Ready), name)
	s.gauge(ch, PoolUpdatedNodes, float64(st.Updated), name)
	s.gauge(ch, PoolUnavailableNodes, float64(st.Unavailable), name)
	s.gauge(ch, PoolMaxUnavailable, float64(st.MaxUnavailable), name)
	s.gauge(ch, PoolDrainingNodes, float64(st.Draining), name)
	s.gauge(ch, PoolRebootingNodes, float64(st.Rebooting), name)
	s.gauge(ch, PoolDegradedNodes, float64(st.Degraded), name)
	s.gauge(ch, PoolPendingRequests, float64(st.PendingRequests), name)
	reason, blocked := "", 0.0
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.BlockedCondition); c != nil && c.Status == metav1.ConditionTrue {
		reason, blocked = c.Reason, 1
	}
	s.gauge(ch, PoolBlocked, blocked, name, reason)
	// Unreadable windows count as shut, as the gate treats them.
	s.gauge(ch, PoolWindowOpen, bool01(pools.NewWindows(s.Clock.Now(), p, nil).Pool().Open), name)
	s.gauge(ch, PoolPaused, bool01(p.Spec.Paused), name)
	s.gauge(ch, PoolOverBudget, bool01(meta.IsStatusConditionTrue(st.Conditions, v1alpha1.OverBudgetCondition)), name)
	s.gauge(ch, PoolOptedOutNodes, float64(st.OptedOut), name)
	s.gauge(ch, PoolHalted, bool01(meta.IsStatusConditionTrue(st.Conditions, v1alpha1.HaltedCondition)), name)
	s.gauge(ch, PoolSettlingNodes, float64(st.Settling), name)
	s.gauge(ch, PoolHookNodes, float64(st.AtHooks), name)
	// From the Frozen condition the gate writes: a freeze that cannot be
	// read counts as in force, as the gate treats it.
	s.gauge(ch, PoolFrozen, bool01(meta.IsStatusConditionTrue(st.Conditions, v1alpha1.FrozenCondition)), name)
}

func (s *State) collectPolicy(ch chan<- prometheus.Metric, p *v1alpha1.RebootPolicy, open int) {
	name := p.Name
	states := map[v1alpha1.CandidateState]int{
		v1alpha1.CandidatePending: 0, v1alpha1.CandidateCooldown: 0, v1alpha1.CandidateOverCap: 0,
		v1alpha1.CandidateRequested: 0, v1alpha1.CandidateWouldRequest: 0,
	}
	for _, c := range p.Status.Candidates {
		states[c.State]++
	}
	for state, n := range states {
		s.gauge(ch, PolicyCandidates, float64(n), name, string(state))
	}
	s.gauge(ch, PolicyOpenRequests, float64(open), name)
	ch <- prometheus.MustNewConstMetric(s.descs[PolicyRequestsRaised], prometheus.CounterValue, float64(p.Status.RequestsRaised), name)
	if t := p.Spec.Prometheus; t != nil {
		if v, err := strconv.ParseFloat(t.Threshold, 64); err == nil {
			s.gauge(ch, PolicyThreshold, v, name)
		}
	}
	for _, c := range []string{v1alpha1.ReadyCondition, v1alpha1.QueryFailingCondition, v1alpha1.PrometheusUnreachableCondition,
		v1alpha1.CapReachedCondition, v1alpha1.UnmatchedSeriesCondition} {
		s.gauge(ch, PolicyCondition, bool01(meta.IsStatusConditionTrue(p.Status.Conditions, c)), name, c)
	}
	if t := p.Status.LastEvaluationTime; t != nil {
		s.gauge(ch, PolicyLastEvaluation, float64(t.Unix()), name)
	}
}

func bool01(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
