package cmd

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/gen"
)

func TestPhaseOf(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	req := gen.Requested("b1", protocol.Request{ID: "r1", Source: v1alpha1.SourceHost, Reason: "kernel", Time: t0})
	open := []v1alpha1.NodeMaintenance{{
		ObjectMeta: metav1.ObjectMeta{Name: "n-x", CreationTimestamp: metav1.NewTime(t0)},
		Spec:       v1alpha1.NodeMaintenanceSpec{NodeName: "n", Source: v1alpha1.SourceAPI, Reason: "asked"},
	}}
	tests := map[string]struct {
		// node are the options of node n, Ready in boot b1: its
		// annotations, and whether it is Ready.
		node []gen.NodeOption
		open []v1alpha1.NodeMaintenance
		// want is the phase, reason and since the node shows.
		want nodeState
	}{
		"nothing asked":            {want: nodeState{Phase: protocol.StageIdle}},
		"not Ready, nothing asked": {node: []gen.NodeOption{gen.NotReady()}, want: nodeState{Phase: protocol.StageIdle, Reason: "not Ready"}},
		"open request not raised": {open: open,
			want: nodeState{Phase: v1alpha1.PhasePending, Reason: "api: asked", Since: t0}},
		"raised in this boot": {node: []gen.NodeOption{req},
			want: nodeState{Phase: v1alpha1.PhaseRequested, Reason: "host: kernel", Since: t0}},
		"raised in an earlier boot is satisfied": {node: []gen.NodeOption{gen.Requested("b0", protocol.Request{ID: "r0"})},
			want: nodeState{Phase: protocol.StageIdle}},
		"admitted": {node: []gen.NodeOption{req, gen.Admitted("b1", t0.Add(time.Minute), "r1")},
			want: nodeState{Phase: v1alpha1.PhaseDraining, Reason: "host: kernel", Since: t0.Add(time.Minute)}},
		"approved for this boot": {node: []gen.NodeOption{req, gen.Approved("b1"), gen.DaemonState(protocol.DaemonRebooting, "b1", "", t0.Add(2*time.Minute))},
			want: nodeState{Phase: v1alpha1.PhaseRebooting, Reason: "host: kernel", Since: t0.Add(2 * time.Minute)}},
		"approved, the daemon not rebooting yet": {node: []gen.NodeOption{req, gen.Approved("b1")},
			want: nodeState{Phase: v1alpha1.PhaseApproved, Reason: "host: kernel"}},
		"approved for the boot before, coming back": {node: []gen.NodeOption{gen.Approved("b0")},
			want: nodeState{Phase: v1alpha1.PhaseRebooting, Reason: "coming back with boot b1"}},
		"back and Ready, its daemon not confirmed yet": {node: []gen.NodeOption{gen.Requested("b0", protocol.Request{ID: "r0"}), gen.Approved("b0")},
			want: nodeState{Phase: v1alpha1.PhaseRebooting, Reason: "back with boot b1; waiting for its daemon to confirm"}},
		"back, its daemon awaited for a minute": {node: []gen.NodeOption{gen.Requested("b0", protocol.Request{ID: "r0"}), gen.Approved("b0"), gen.RebootUnconfirmed("b0", "b1", t0)},
			want: nodeState{Phase: v1alpha1.PhaseRebooting, Reason: "back with boot b1; waiting for its daemon to confirm", Since: t0}},
		"daemon degraded": {node: []gen.NodeOption{gen.Approved("b1"), gen.DaemonState(protocol.DaemonDegraded, "b1", "reboot did not happen", t0)},
			want: nodeState{Phase: protocol.StageDegraded, Reason: "reboot did not happen", Since: t0}},
		"drain failed for these requests": {node: []gen.NodeOption{req, gen.DrainFailed("b1", t0, "pod a/b", "r1")},
			want: nodeState{Phase: protocol.StageDegraded, Reason: "drain failed (DrainTimeout): pod a/b", Since: t0}},
		"reboot loop held": {node: []gen.NodeOption{sentinelState("b1", protocol.SentinelRebootLoop, "unchanged since boot b0", t0)},
			want: nodeState{Phase: protocol.StageIdle, Reason: "reboot loop held: unchanged since boot b0", Since: t0}},
		"sentinel unreadable": {node: []gen.NodeOption{sentinelState("b1", protocol.SentinelError, "sentinel command exited 2", t0)},
			want: nodeState{Phase: protocol.StageIdle, Reason: "reboot sentinel unreadable: sentinel command exited 2", Since: t0}},
		"a reboot loop of the boot before is not shown": {node: []gen.NodeOption{sentinelState("b0", protocol.SentinelRebootLoop, "old", t0)},
			want: nodeState{Phase: protocol.StageIdle}},
		"opted out on the node, asking": {node: []gen.NodeOption{req, gen.Annotations(protocol.DoNotDisrupt, "db migration")},
			want: nodeState{Phase: v1alpha1.PhaseRequested, Since: t0,
				Reason: `opted out (DoNotDisrupt): node n is annotated kmaint.io/do-not-disrupt: "db migration"; kmaint admits no reboot of it until the annotation is removed; requested: host: kernel`}},
		"held by its pods, asking": {node: []gen.NodeOption{req, gen.Annotations(protocol.AdmissionHeld, `{"reason":"BlockingPod","message":"pod a/b matches","since":"2026-01-02T03:04:05Z"}`)},
			want: nodeState{Phase: v1alpha1.PhaseRequested, Since: t0, Reason: "opted out (BlockingPod): pod a/b matches; requested: host: kernel"}},
		"opted out, asking nothing": {node: []gen.NodeOption{gen.Annotations(protocol.KarpenterDoNotDisrupt, "true")},
			want: nodeState{Phase: protocol.StageIdle, Reason: "opted out (node n is annotated karpenter.sh/do-not-disrupt=true; kmaint admits no reboot of it until the annotation is removed)"}},
		"waiting for its next drain attempt": {node: []gen.NodeOption{req, gen.Annotations(protocol.DrainRetry, protocol.Encode(protocol.DrainRetrying{
			BootID: "b1", Requests: []string{"r1"}, Attempts: 1, MaxAttempts: 3, NextAt: t0.Add(time.Hour), Message: "pod a/b"}))},
			want: nodeState{Phase: v1alpha1.PhaseRequested, Since: t0,
				Reason: "host: kernel; drain attempt 1 of 3 did not finish (pod a/b); attempt 2 of 3 not before 2026-01-02T04:04:05Z"}},
		"draining again": {node: []gen.NodeOption{req, gen.Admitted("b1", t0.Add(time.Hour), "r1"), gen.Annotations(protocol.DrainRetry, protocol.Encode(protocol.DrainRetrying{
			BootID: "b1", Requests: []string{"r1"}, Attempts: 1, MaxAttempts: 3, NextAt: t0.Add(time.Hour)}))},
			want: nodeState{Phase: v1alpha1.PhaseDraining, Reason: "host: kernel (drain attempt 2 of 3)", Since: t0.Add(time.Hour)}},
		"settling, its checks passing": {node: []gen.NodeOption{settling(protocol.Settle{BootID: "b1", RebootedBoot: "b0", Pool: "web", Since: t0, Until: t0.Add(10 * time.Minute)})},
			open: []v1alpha1.NodeMaintenance{healthy(metav1.ConditionUnknown, v1alpha1.HealthCheckingReason, "")},
			want: nodeState{Phase: v1alpha1.PhaseSettling, Reason: "settling until 2026-01-02T03:14:05Z; health checks pass so far", Since: t0}},
		"settling, no health checks": {node: []gen.NodeOption{settling(protocol.Settle{BootID: "b1", RebootedBoot: "b0", Since: t0, Until: t0.Add(time.Minute)})},
			want: nodeState{Phase: v1alpha1.PhaseSettling, Reason: "settling until 2026-01-02T03:05:05Z", Since: t0}},
		"settling, checks cannot run": {node: []gen.NodeOption{settling(protocol.Settle{BootID: "b1", RebootedBoot: "b0", Since: t0, Until: t0.Add(time.Minute)})},
			open: []v1alpha1.NodeMaintenance{healthy(metav1.ConditionUnknown, v1alpha1.HealthCheckUnavailableReason, "Prometheus unreachable")},
			want: nodeState{Phase: v1alpha1.PhaseSettling, Reason: "settling until 2026-01-02T03:05:05Z; health checks cannot run: Prometheus unreachable", Since: t0}},
		"failed a health check": {node: []gen.NodeOption{settling(protocol.Settle{BootID: "b1", RebootedBoot: "b0", Pool: "web", Since: t0, Until: t0.Add(time.Minute),
			Failure: &protocol.HealthCheckFailure{Check: "node-ready", Value: "0", Series: `{node="n"}`, Time: t0.Add(30 * time.Second)}})},
			want: nodeState{Phase: v1alpha1.PhaseSettling, Since: t0.Add(30 * time.Second),
				Reason: `health check "node-ready" failed (value 0) at 2026-01-02T03:04:35Z; pool web halted: kubectl kmaint resume web; series {node="n"}`}},
		"malformed annotation": {node: []gen.NodeOption{gen.Annotations(protocol.Admitted, "{")},
			want: nodeState{Phase: protocol.StageDegraded, Reason: "annotation kmaint.io/admitted on node n is malformed: unexpected end of JSON input"}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			n := gen.Node("n", append([]gen.NodeOption{gen.BootID("b1")}, tt.node...)...)
			if got := phaseOf(n, tt.open); got != tt.want {
				t.Errorf("phaseOf = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// sentinelState is the daemon's state of boot with its sentinel in state.
func sentinelState(boot string, state protocol.SentinelState, msg string, since time.Time) gen.NodeOption {
	return gen.Annotations(protocol.State, protocol.Encode(protocol.DaemonState{Phase: protocol.DaemonIdle, BootID: boot, Since: since,
		Sentinel: &protocol.SentinelStatus{State: state, Message: msg, Since: since}}))
}

// settling is the gate's record of a node back from its reboot.
func settling(s protocol.Settle) gen.NodeOption {
	return gen.Annotations(protocol.Settling, protocol.Encode(s))
}

// healthy is an open NodeMaintenance of node n with a Healthy condition.
func healthy(status metav1.ConditionStatus, reason, message string) v1alpha1.NodeMaintenance {
	nm := v1alpha1.NodeMaintenance{Spec: v1alpha1.NodeMaintenanceSpec{NodeName: "n"}, Status: v1alpha1.NodeMaintenanceStatus{Phase: v1alpha1.PhaseSettling}}
	nm.Status.Conditions = []metav1.Condition{{Type: v1alpha1.HealthyCondition, Status: status, Reason: reason, Message: message}}
	return nm
}

func TestBar(t *testing.T) {
	tests := map[string]struct {
		done, total int
		want        string
	}{
		"none":   {0, 4, "[--------------------] 0/4"},
		"half":   {2, 4, "[##########----------] 2/4"},
		"all":    {4, 4, "[####################] 4/4"},
		"empty":  {0, 0, "[--------------------] 0/0"},
		"a hair": {1, 3, "[######--------------] 1/3"},
	}
	for name, tt := range tests {
		if got := bar(tt.done, tt.total); got != tt.want {
			t.Errorf("%s: bar(%d, %d) = %q, want %q", name, tt.done, tt.total, got, tt.want)
		}
	}
}
