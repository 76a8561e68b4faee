package cmd

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmaint/kmaint/operator/api/protocol"
	"github.com/kmaint/kmaint/operator/api/v1alpha1"
)

func TestPhaseOf(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	req := protocol.Encode(protocol.Requested{BootID: "b1", Requests: []protocol.Request{
		{ID: "r1", Source: v1alpha1.SourceHost, Reason: "kernel", Time: t0},
	}})
	open := []v1alpha1.NodeMaintenance{{
		ObjectMeta: metav1.ObjectMeta{Name: "n-x", CreationTimestamp: metav1.NewTime(t0)},
		Spec:       v1alpha1.NodeMaintenanceSpec{NodeName: "n", Source: v1alpha1.SourceAPI, Reason: "asked"},
	}}
	tests := map[string]struct {
		annotations map[string]string
		open        []v1alpha1.NodeMaintenance
		notReady    bool
		// want is the phase, reason and since the node shows.
		want nodeState
	}{
		"nothing asked":            {want: nodeState{Phase: protocol.StageIdle}},
		"not Ready, nothing asked": {notReady: true, want: nodeState{Phase: protocol.StageIdle, Reason: "not Ready"}},
		"open request not raised": {open: open,
			want: nodeState{Phase: v1alpha1.PhasePending, Reason: "api: asked", Since: t0}},
		"raised in this boot": {annotations: map[string]string{protocol.RebootRequested: req},
			want: nodeState{Phase: v1alpha1.PhaseRequested, Reason: "host: kernel", Since: t0}},
		"raised in an earlier boot is satisfied": {annotations: map[string]string{
			protocol.RebootRequested: protocol.Encode(protocol.Requested{BootID: "b0", Requests: []protocol.Request{{ID: "r0"}}})},
			want: nodeState{Phase: protocol.StageIdle}},
		"admitted": {annotations: map[string]string{protocol.RebootRequested: req,
			protocol.Admitted: protocol.Encode(protocol.Admission{BootID: "b1", Requests: []string{"r1"}, Time: t0.Add(time.Minute)})},
			want: nodeState{Phase: v1alpha1.PhaseDraining, Reason: "host: kernel", Since: t0.Add(time.Minute)}},
		"approved for this boot": {annotations: map[string]string{protocol.RebootRequested: req, protocol.RebootApproved: "b1",
			protocol.State: protocol.Encode(protocol.DaemonState{Phase: protocol.DaemonRebooting, BootID: "b1", Since: t0.Add(2 * time.Minute)})},
			want: nodeState{Phase: v1alpha1.PhaseRebooting, Reason: "host: kernel", Since: t0.Add(2 * time.Minute)}},
		"approved, the daemon not rebooting yet": {annotations: map[string]string{protocol.RebootRequested: req, protocol.RebootApproved: "b1"},
			want: nodeState{Phase: v1alpha1.PhaseApproved, Reason: "host: kernel"}},
		"approved for the boot before, coming back": {annotations: map[string]string{protocol.RebootApproved: "b0"},
			want: nodeState{Phase: v1alpha1.PhaseRebooting, Reason: "coming back with boot b1"}},
		"daemon degraded": {annotations: map[string]string{protocol.RebootApproved: "b1",
			protocol.State: protocol.Encode(protocol.DaemonState{Phase: protocol.DaemonDegraded, Message: "reboot did not happen", Since: t0})},
			want: nodeState{Phase: protocol.StageDegraded, Reason: "reboot did not happen", Since: t0}},
		"drain failed for these requests": {annotations: map[string]string{protocol.RebootRequested: req,
			protocol.DrainFailed: protocol.Encode(protocol.DrainFailure{BootID: "b1", Requests: []string{"r1"}, Time: t0, Reason: "DrainTimeout", Message: "pod a/b"})},
			want: nodeState{Phase: protocol.StageDegraded, Reason: "drain failed (DrainTimeout): pod a/b", Since: t0}},
		"malformed annotation": {annotations: map[string]string{protocol.Admitted: "{"},
			want: nodeState{Phase: protocol.StageDegraded, Reason: "annotation kmaint.io/admitted on node n is malformed: unexpected end of JSON input"}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Annotations: tt.annotations}}
			n.Status.NodeInfo.BootID = "b1"
			n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
			if tt.notReady {
				n.Status.Conditions[0].Status = corev1.ConditionFalse
			}
			if got := phaseOf(n, tt.open); got != tt.want {
				t.Errorf("phaseOf = %+v, want %+v", got, tt.want)
			}
		})
	}
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
