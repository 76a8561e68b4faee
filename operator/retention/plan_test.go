package retention_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/retention"
	"github.com/kmaint/kmaint/test/gen"
)

var now = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

const day = 24 * time.Hour

// record is a NodeMaintenance of node n1 created ago before now, finished
// (in phase) an hour later; phase "" leaves it open.
func record(name string, ago time.Duration, phase v1alpha1.Phase, opts ...func(*v1alpha1.NodeMaintenance)) v1alpha1.NodeMaintenance {
	nm := v1alpha1.NodeMaintenance{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), CreationTimestamp: metav1.NewTime(now.Add(-ago))},
		Spec:       v1alpha1.NodeMaintenanceSpec{NodeName: "n1", Reason: "test", Source: v1alpha1.SourceAPI},
		Status:     v1alpha1.NodeMaintenanceStatus{Phase: phase},
	}
	if phase == "" {
		nm.Status.Phase = v1alpha1.PhaseRequested
	}
	if phase.Done() {
		nm.Status.PhaseTimes.Set(phase, metav1.NewTime(now.Add(-ago+time.Hour)))
	}
	for _, o := range opts {
		o(&nm)
	}
	return nm
}

// raisedInBoot makes a record of a host request raised in boot.
func raisedInBoot(boot string) func(*v1alpha1.NodeMaintenance) {
	return func(nm *v1alpha1.NodeMaintenance) {
		nm.Spec.Source = v1alpha1.SourceHost
		nm.Labels = map[string]string{v1alpha1.BootIDLabel: v1alpha1.LabelValue(boot)}
	}
}

func ofPolicy(p string) func(*v1alpha1.NodeMaintenance) {
	return func(nm *v1alpha1.NodeMaintenance) { nm.Spec.Policy = p }
}

// failedEvery returns n Failed records, the newest ago old, a day apart.
func failedEvery(prefix string, n int, ago time.Duration) []v1alpha1.NodeMaintenance {
	var out []v1alpha1.NodeMaintenance
	for i := range n {
		out = append(out, record(fmt.Sprintf("%s-%02d", prefix, i), ago+time.Duration(i)*day, v1alpha1.PhaseFailed))
	}
	return out
}

// unreadable is a NodeMaintenance stored with a body the Go type cannot
// hold, as read back.
func unreadable(t *testing.T, name string) v1alpha1.NodeMaintenance {
	var nm v1alpha1.NodeMaintenance
	body := `{"metadata":{"name":"` + name + `","creationTimestamp":"2020-01-01T00:00:00Z"},"spec":{"nodeName":"n1"},"status":{"phase":"Failed","phaseTimes":{"failed":7}}}`
	if err := json.Unmarshal([]byte(body), &nm); err != nil || nm.Unreadable() == nil {
		t.Fatalf("want an unreadable NodeMaintenance, got %v, %v", err, nm.Unreadable())
	}
	return nm
}

func TestPlan(t *testing.T) {
	node, _ := protocol.Read(gen.Node("n1"))
	carrying, _ := protocol.Read(gen.Node("n1", gen.RequestedIDs("boot-0", v1alpha1.SourceAPI, now, "uid-carried")))
	keep := retention.Retention{PerNode: 3, MaxAge: 30 * day}
	cases := map[string]struct {
		items []v1alpha1.NodeMaintenance
		// node is nil for a node that is gone.
		node *protocol.NodeState
		keep retention.Retention

		// wantPruned are the names deleted, in any order.
		wantPruned []string
		// wantNext is when to look again; zero for never.
		wantNext time.Time
	}{
		"nothing to keep track of": {items: failedEvery("f", 10, day), node: &node, keep: retention.Retention{}},
		"beyond the count, the oldest go": {
			items: failedEvery("f", 5, day), node: &node, keep: retention.Retention{PerNode: 3},
			wantPruned: []string{"f-03", "f-04"},
		},
		"open requests are never pruned and do not count": {
			items: append(failedEvery("f", 4, day), record("open-old", 60*day, ""), record("open-new", 0, "")), node: &node, keep: retention.Retention{PerNode: 3},
			wantPruned: []string{"f-03"},
		},
		"past the age, even within the count; the next to age out is when to look again": {
			items: append(failedEvery("f", 2, 10*day), record("old", 31*day, v1alpha1.PhaseFailed)), node: &node, keep: keep,
			wantPruned: []string{"old"},
			wantNext:   now.Add(-10 * day).Add(time.Hour).Add(30 * day).Add(-day),
		},
		"the node's last reboot stays, whatever its age or rank: cooldowns count from it": {
			items: append(failedEvery("f", 4, day), record("rebooted", 40*day, v1alpha1.PhaseSucceeded), record("rebooted-before", 50*day, v1alpha1.PhaseSucceeded)),
			node:  &node, keep: keep,
			wantPruned: []string{"f-03", "rebooted-before"},
			wantNext:   now.Add(-3 * day).Add(time.Hour).Add(30 * day),
		},
		"a reboot stamped in the future does not push the real last reboot out": {
			items: append(failedEvery("f", 4, day),
				record("forged", 50*day, v1alpha1.PhaseSucceeded, func(nm *v1alpha1.NodeMaintenance) {
					nm.Status.PhaseTimes.Succeeded = &metav1.Time{Time: now.Add(70 * 365 * day)}
				}),
				record("rebooted", 40*day, v1alpha1.PhaseSucceeded)),
			node: &node, keep: retention.Retention{PerNode: 3},
			wantPruned: []string{"f-03"},
		},
		"each policy's latest request and latest reboot stay": {
			items: append(failedEvery("f", 4, day),
				record("p-failed", 40*day, v1alpha1.PhaseFailed, ofPolicy("p")),
				record("p-rebooted", 45*day, v1alpha1.PhaseSucceeded, ofPolicy("p")),
				record("p-older", 50*day, v1alpha1.PhaseSucceeded, ofPolicy("p")),
				record("q-failed", 60*day, v1alpha1.PhaseFailed, ofPolicy("q")),
			),
			node: &node, keep: keep,
			wantPruned: []string{"f-03", "p-older"},
			wantNext:   now.Add(-3 * day).Add(time.Hour).Add(30 * day),
		},
		"a record whose request the node still carries stays": {
			items: append(failedEvery("f", 3, day), record("carried", 40*day, v1alpha1.PhaseFailed)),
			node:  &carrying, keep: keep,
			wantNext: now.Add(-3 * day).Add(time.Hour).Add(30 * day),
		},
		"a record that cannot be read is never pruned: whether it finished cannot be told": {
			items: append(failedEvery("f", 3, day), unreadable(t, "bad")), node: &node, keep: retention.Retention{PerNode: 1},
			wantPruned: []string{"f-01", "f-02"},
		},
		"records raised on the node in its current boot stay: the cap per boot counts them": {
			items: append(failedEvery("f", 3, day),
				record("this-boot", 40*day, v1alpha1.PhaseFailed, raisedInBoot("boot-0")),
				record("last-boot", 41*day, v1alpha1.PhaseFailed, raisedInBoot("boot-old"))),
			node: &node, keep: keep,
			wantPruned: []string{"last-boot"},
			wantNext:   now.Add(-3 * day).Add(time.Hour).Add(30 * day),
		},
		"a node that is gone keeps nothing past count and age": {
			items:      append(failedEvery("f", 4, day), record("rebooted", 40*day, v1alpha1.PhaseSucceeded), record("p-failed", 40*day, v1alpha1.PhaseFailed, ofPolicy("p"))),
			keep:       keep,
			wantPruned: []string{"f-03", "rebooted", "p-failed"},
			wantNext:   now.Add(-3 * day).Add(time.Hour).Add(30 * day),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			prune, next := retention.Plan(tc.items, tc.node, tc.keep, now)
			var names []string
			for _, nm := range prune {
				names = append(names, nm.Name)
			}
			g.Expect(names).To(ConsistOf(tc.wantPruned))
			g.Expect(next).To(Equal(tc.wantNext))
		})
	}
}
