package policy

import (
	"encoding/json"
	"testing"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

// A policy's own requests and records that cannot be read wake it
// whatever its candidates.
func TestAlwaysWakes(t *testing.T) {
	own := &v1alpha1.NodeMaintenance{Spec: v1alpha1.NodeMaintenanceSpec{NodeName: "n", Policy: "p"}}
	other := &v1alpha1.NodeMaintenance{Spec: v1alpha1.NodeMaintenanceSpec{NodeName: "n", Policy: "q"}}
	api := &v1alpha1.NodeMaintenance{Spec: v1alpha1.NodeMaintenanceSpec{NodeName: "n", Source: v1alpha1.SourceAPI}}
	unreadable := &v1alpha1.NodeMaintenance{}
	if err := json.Unmarshal([]byte(`{"metadata":{"name":"x"},"spec":{"nodeName":5}}`), unreadable); err != nil || unreadable.Unreadable() == nil {
		t.Fatalf("want a record that cannot be read, got err %v, unreadable %v", err, unreadable.Unreadable())
	}
	finished := own.DeepCopy()
	finished.Status.Phase = v1alpha1.PhaseSucceeded
	for _, tc := range []struct {
		name string
		nm   *v1alpha1.NodeMaintenance
		want bool
	}{
		{"own request", own, true},
		{"own request, finished", finished, true},
		{"another policy's request", other, false},
		{"an API request", api, false},
		{"a record that cannot be read", unreadable, true},
	} {
		if got := alwaysWakes(tc.nm, "p"); got != tc.want {
			t.Errorf("%s: alwaysWakes = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A record fixed so that it reads again wakes the policies (every one, as
// its unreadable old self maps to all), though its phase is the same.
func TestPhaseChangedPassesReadability(t *testing.T) {
	readable := &v1alpha1.NodeMaintenance{Spec: v1alpha1.NodeMaintenanceSpec{NodeName: "n"}}
	unreadable := &v1alpha1.NodeMaintenance{}
	if err := json.Unmarshal([]byte(`{"metadata":{"name":"x"},"spec":{"ignoreWindows":"yes"}}`), unreadable); err != nil || unreadable.Unreadable() == nil {
		t.Fatalf("want a record that cannot be read, got err %v, unreadable %v", err, unreadable.Unreadable())
	}
	p := phaseChanged()
	if !p.Update(event.UpdateEvent{ObjectOld: unreadable, ObjectNew: readable}) || !p.Update(event.UpdateEvent{ObjectOld: readable, ObjectNew: unreadable}) {
		t.Error("a record that becomes readable or unreadable does not pass")
	}
	if p.Update(event.UpdateEvent{ObjectOld: readable, ObjectNew: readable.DeepCopy()}) {
		t.Error("a status write that changes no phase passes")
	}
}

// Another source's change wakes a policy never evaluated, and one with
// candidates; not one whose evaluation found none. While the policy
// evaluates, the change is noted and reported when the evaluation ends.
func TestPolicyWakes(t *testing.T) {
	w := &policyWakes{}
	if !w.notify("p") {
		t.Error("a policy never evaluated is not woken")
	}
	w.start("p")
	if w.notify("q") != true {
		t.Error("the evaluation of p changed q")
	}
	if w.finish("p", true) {
		t.Error("an evaluation no change came in during reports one")
	}
	if w.notify("p") {
		t.Error("a policy whose evaluation found no candidates is woken")
	}

	w.start("p")
	if w.notify("p") || w.notify("p") {
		t.Error("a policy being evaluated is woken; the change should be noted")
	}
	if !w.finish("p", false) {
		t.Error("the change that came in during the evaluation is lost")
	}
	if !w.notify("p") {
		t.Error("a policy with candidates is not woken")
	}
	w.start("p")
	if w.finish("p", false) {
		t.Error("a change noted by an earlier evaluation is reported again")
	}

	w.start("p")
	w.notify("p")
	w.forget("p")
	if !w.notify("p") {
		t.Error("a forgotten policy is not woken")
	}
}

func TestWakeAt(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		res   time.Duration
		times []time.Time
		want  time.Duration
	}{
		{"no times", time.Hour, nil, time.Hour},
		{"zero and past times change nothing", time.Hour, []time.Time{{}, now.Add(-time.Minute), now}, time.Hour},
		{"a sooner time wins", time.Hour, []time.Time{now.Add(2 * time.Hour), now.Add(10 * time.Minute)}, 10 * time.Minute},
		{"a later time does not", time.Minute, []time.Time{now.Add(time.Hour)}, time.Minute},
		{"no requeue before", 0, []time.Time{now.Add(time.Hour)}, time.Hour},
		{"at least a second", 0, []time.Time{now.Add(time.Millisecond)}, time.Second},
	} {
		if got := wakeAt(ctrl.Result{RequeueAfter: tc.res}, now, tc.times...).RequeueAfter; got != tc.want {
			t.Errorf("%s: RequeueAfter = %v, want %v", tc.name, got, tc.want)
		}
	}
}
