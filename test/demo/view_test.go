package main

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/gen"
)

// TestProgressCounterKeepsItsDenominatorAsRequestsArrive: a pool's
// "back" counter counts against the nodes the demo means to reboot from
// the first frame on, before any request exists, and keeps that
// denominator while the requests arrive and the nodes reboot; only a node
// nobody planned to reboot, asked to anyway, adds to it.
func TestProgressCounterKeepsItsDenominatorAsRequestsArrive(t *testing.T) {
	var nodes []corev1.Node
	for i := range 4 {
		nodes = append(nodes, *gen.Node(fmt.Sprintf("batch-%03d", i), gen.Labels("pool", "batch")))
	}
	pools := []v1alpha1.MaintenancePool{*gen.Pool("batch", intstr.FromInt(2))}
	planned := []string{"batch-000", "batch-001", "batch-002"}
	nm := func(node string, phase v1alpha1.Phase) v1alpha1.NodeMaintenance {
		return v1alpha1.NodeMaintenance{
			ObjectMeta: metav1.ObjectMeta{Name: node + "-r"},
			Spec:       v1alpha1.NodeMaintenanceSpec{NodeName: node, Source: v1alpha1.SourceConfig},
			Status:     v1alpha1.NodeMaintenanceStatus{Phase: phase},
		}
	}
	steps := map[string]struct {
		maintenances []v1alpha1.NodeMaintenance
		// want is the counter as the live frame shows it.
		want string
	}{
		"1 before any request":        {nil, "0/3 back"},
		"2 the first request arrives": {[]v1alpha1.NodeMaintenance{nm("batch-000", v1alpha1.PhaseRequested)}, "0/3 back"},
		"3 one back, one rebooting": {[]v1alpha1.NodeMaintenance{
			nm("batch-000", v1alpha1.PhaseSucceeded), nm("batch-001", v1alpha1.PhaseRebooting),
		}, "1/3 back"},
		"4 every planned node back": {[]v1alpha1.NodeMaintenance{
			nm("batch-000", v1alpha1.PhaseSucceeded), nm("batch-001", v1alpha1.PhaseSucceeded), nm("batch-002", v1alpha1.PhaseSucceeded),
		}, "3/3 back"},
		"5 an unplanned node asked too": {[]v1alpha1.NodeMaintenance{
			nm("batch-000", v1alpha1.PhaseSucceeded), nm("batch-001", v1alpha1.PhaseSucceeded), nm("batch-002", v1alpha1.PhaseSucceeded),
			nm("batch-003", v1alpha1.PhaseRequested),
		}, "3/4 back"},
	}
	for name, step := range steps {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			d := newDisplay(&out, true, time.Now())
			d.planned = planned
			v := buildView(clusterState{nodes: nodes, pools: pools, maintenances: step.maintenances}, d.planned)
			d.draw(v, time.Now())
			if !bytes.Contains(out.Bytes(), []byte(step.want)) {
				t.Errorf("frame shows no %q:\n%s", step.want, out.String())
			}
		})
	}
}

// A request raised on the node is Requested from the moment it is raised:
// its record, which starts Pending until the maintenance controller reads
// the node, does not take it back to Pending.
func TestARaisedRequestStaysRequestedWhenRecorded(t *testing.T) {
	at := time.Date(2026, 12, 5, 7, 0, 0, 0, time.UTC)
	node := gen.Node("web-000", gen.Requested("boot-0", gen.Req("r1", v1alpha1.SourceHost, at)))
	if st, _, _, raised := nodeStep(node, nil); st != stepRequested || !raised {
		t.Fatalf("raised, not recorded: %s (raised %v), want Requested", st, raised)
	}
	record := &v1alpha1.NodeMaintenance{
		ObjectMeta: metav1.ObjectMeta{Name: "web-000-host-r1", Labels: map[string]string{v1alpha1.RequestIDLabel: "r1"}},
		Spec:       v1alpha1.NodeMaintenanceSpec{NodeName: "web-000", Source: v1alpha1.SourceHost},
	}
	if st, _, _, _ := nodeStep(node, []*v1alpha1.NodeMaintenance{record}); st != stepRequested {
		t.Errorf("recorded, its status not written yet: %s, want Requested", st)
	}
	other := record.DeepCopy()
	other.Labels[v1alpha1.RequestIDLabel] = "r2"
	if st, _, _, _ := nodeStep(node, []*v1alpha1.NodeMaintenance{other}); st != step(v1alpha1.PhasePending) {
		t.Errorf("a record of a request the node has not raised: %s, want Pending", st)
	}
}
