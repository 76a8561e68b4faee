package report

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/gen"
)

// t0 is the start of every test's history.
var t0 = time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)

// at is t0 plus s seconds.
func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

// nm returns a NodeMaintenance in phase with the given phase times, in
// seconds after t0; a phase left out has no time.
func nm(name, node string, source v1alpha1.Source, phase v1alpha1.Phase, stamps map[v1alpha1.Phase]int) v1alpha1.NodeMaintenance {
	m := v1alpha1.NodeMaintenance{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       v1alpha1.NodeMaintenanceSpec{NodeName: node, Source: source, Reason: "kernel " + name, Type: v1alpha1.RebootMaintenance},
		Status:     v1alpha1.NodeMaintenanceStatus{Phase: phase, BootIDBefore: "boot-0-" + node},
	}
	if phase == v1alpha1.PhaseSucceeded {
		m.Status.BootIDAfter = "boot-1-" + node
	}
	pt := &m.Status.PhaseTimes
	fields := map[v1alpha1.Phase]**metav1.Time{
		v1alpha1.PhasePending: &pt.Pending, v1alpha1.PhaseRequested: &pt.Requested, v1alpha1.PhaseApproved: &pt.Approved,
		v1alpha1.PhaseDraining: &pt.Draining, v1alpha1.PhaseRebooting: &pt.Rebooting, v1alpha1.PhaseSettling: &pt.Settling, v1alpha1.PhaseSucceeded: &pt.Succeeded,
		v1alpha1.PhaseFailed: &pt.Failed,
	}
	for p, s := range stamps {
		t := metav1.NewTime(at(s))
		*fields[p] = &t
	}
	return m
}

// failedWith marks m failed for reason.
func failedWith(m v1alpha1.NodeMaintenance, reason, message string) v1alpha1.NodeMaintenance {
	m.Status.Message = message
	m.Status.Conditions = []metav1.Condition{{Type: "Succeeded", Status: metav1.ConditionFalse, Reason: reason, Message: message, LastTransitionTime: metav1.NewTime(m.Status.PhaseTimes.Failed.Time)}}
	return m
}

// stamps of a maintenance that went the whole way, each phase d seconds,
// starting at s.
func whole(s, d int) map[v1alpha1.Phase]int {
	return map[v1alpha1.Phase]int{
		v1alpha1.PhasePending: s, v1alpha1.PhaseRequested: s + d, v1alpha1.PhaseApproved: s + 2*d,
		v1alpha1.PhaseDraining: s + 2*d, v1alpha1.PhaseRebooting: s + 3*d, v1alpha1.PhaseSucceeded: s + 4*d,
	}
}

// fixture is a small rollout: pool "web" (maxUnavailable 1, nodes web-1..3)
// in which web-1 rebooted twice and web-2 overlapped web-3 (over budget);
// pool "db" (50% of 2 nodes = 1) with a drain that timed out and an open
// maintenance; the default pool with one node, rebooted by a schedule; and
// a maintenance of a node since deleted.
func fixture() ([]v1alpha1.NodeMaintenance, []v1alpha1.MaintenancePool, []corev1.Node, time.Time) {
	nodes := []corev1.Node{
		*gen.Node("web-1", gen.Labels("pool", "web")), *gen.Node("web-2", gen.Labels("pool", "web")),
		*gen.Node("web-3", gen.Labels("pool", "web")),
		*gen.Node("db-1", gen.Labels("pool", "db")), *gen.Node("db-2", gen.Labels("pool", "db")),
		*gen.Node("lonely"),
	}
	mpools := []v1alpha1.MaintenancePool{*gen.Pool("web", intstr.FromInt32(1)), *gen.Pool("db", intstr.FromString("50%"))}
	items := []v1alpha1.NodeMaintenance{
		nm("web-1-a", "web-1", v1alpha1.SourceConfig, v1alpha1.PhaseSucceeded, whole(0, 30)),
		nm("web-1-b", "web-1", v1alpha1.SourceAPI, v1alpha1.PhaseSucceeded, whole(400, 20)),
		nm("web-2-a", "web-2", v1alpha1.SourceConfig, v1alpha1.PhaseSucceeded, whole(100, 40)),
		nm("web-3-a", "web-3", v1alpha1.SourceConfig, v1alpha1.PhaseSucceeded, whole(150, 40)),
		failedWith(nm("db-1-a", "db-1", v1alpha1.SourceMetric, v1alpha1.PhaseFailed, map[v1alpha1.Phase]int{
			v1alpha1.PhaseRequested: 50, v1alpha1.PhaseApproved: 60, v1alpha1.PhaseDraining: 60, v1alpha1.PhaseFailed: 660,
		}), "DrainTimeout", "drain of db-1 timed out after 10m0s: pod db/postgres-0 blocked by its PodDisruptionBudget"),
		nm("db-2-a", "db-2", v1alpha1.SourceHost, v1alpha1.PhaseDraining, map[v1alpha1.Phase]int{
			v1alpha1.PhaseRequested: 670, v1alpha1.PhaseApproved: 680, v1alpha1.PhaseDraining: 680,
		}),
		nm("lonely-a", "lonely", v1alpha1.SourceSchedule, v1alpha1.PhaseSucceeded, whole(200, 25)),
		nm("ghost-a", "ghost", v1alpha1.SourceAPI, v1alpha1.PhaseSucceeded, whole(300, 10)),
	}
	items[len(items)-2].Spec.Policy = "monthly"
	return items, mpools, nodes, at(720)
}

// checkFailed gives m the Healthy condition of a node whose health check
// failed at s seconds, with reason (HealthCheckFailed, or HaltResumed once
// resumed).
func checkFailed(m v1alpha1.NodeMaintenance, s int, reason, message string) v1alpha1.NodeMaintenance {
	m.Status.Conditions = append(m.Status.Conditions, metav1.Condition{Type: v1alpha1.HealthyCondition, Status: metav1.ConditionFalse,
		Reason: reason, Message: message, LastTransitionTime: metav1.NewTime(at(s))})
	return m
}

// guardedFixture is a kernel rollout of pool "k" (settle time, health
// checks, maxUnavailable 1) halted at its third node: k-1 settled and
// succeeded; k-2 failed its check while settling, and was resumed (it
// succeeded as it was); k-3 failed its check and holds its slot, the pool
// halted; k-4 waits.
func guardedFixture() ([]v1alpha1.NodeMaintenance, []v1alpha1.MaintenancePool, []corev1.Node, time.Time) {
	var nodes []corev1.Node
	for _, n := range []string{"k-1", "k-2", "k-3", "k-4"} {
		nodes = append(nodes, *gen.Node(n, gen.Labels("pool", "k")))
	}
	pool := gen.Pool("k", intstr.FromInt32(1))
	pool.Spec.SettleTime = &metav1.Duration{Duration: time.Minute}
	pool.Status.Halt = &v1alpha1.PoolHalt{Since: metav1.NewTime(at(330)), Resume: v1alpha1.ResumeManual, Nodes: []v1alpha1.HaltedNode{
		{Node: "k-3", Check: "node-ready", Value: "0", Time: metav1.NewTime(at(330))},
	}}
	settled := func(s int) map[v1alpha1.Phase]int {
		return map[v1alpha1.Phase]int{v1alpha1.PhaseRequested: s, v1alpha1.PhaseDraining: s + 10, v1alpha1.PhaseApproved: s + 20,
			v1alpha1.PhaseRebooting: s + 20, v1alpha1.PhaseSettling: s + 40, v1alpha1.PhaseSucceeded: s + 100}
	}
	items := []v1alpha1.NodeMaintenance{
		nm("k-1-a", "k-1", v1alpha1.SourceConfig, v1alpha1.PhaseSucceeded, settled(0)),
		checkFailed(nm("k-2-a", "k-2", v1alpha1.SourceConfig, v1alpha1.PhaseSucceeded, settled(100)), 160,
			v1alpha1.HealthCheckResumedReason, `health check "node-ready" returned 0`),
		checkFailed(nm("k-3-a", "k-3", v1alpha1.SourceConfig, v1alpha1.PhaseSettling, map[v1alpha1.Phase]int{
			v1alpha1.PhaseRequested: 250, v1alpha1.PhaseDraining: 260, v1alpha1.PhaseApproved: 270, v1alpha1.PhaseRebooting: 270, v1alpha1.PhaseSettling: 300,
		}), 330, v1alpha1.HealthCheckFailedReason, `health check "node-ready" returned 0 (kube_node_status_condition{node="k-3"})`),
		nm("k-4-a", "k-4", v1alpha1.SourceConfig, v1alpha1.PhaseRequested, map[v1alpha1.Phase]int{v1alpha1.PhaseRequested: 0}),
	}
	return items, []v1alpha1.MaintenancePool{*pool}, nodes, at(600)
}
