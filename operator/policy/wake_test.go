package policy

import (
	"encoding/json"
	"testing"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/kmaint/kmaint/operator/api/v1alpha1"
)

// A policy with no candidates is woken by its own requests and by records
// that cannot be read, not by other sources' requests; one with
// candidates, or not known to have none, is woken by any.
func TestWakes(t *testing.T) {
	own := &v1alpha1.NodeMaintenance{Spec: v1alpha1.NodeMaintenanceSpec{NodeName: "n", Policy: "p"}}
	other := &v1alpha1.NodeMaintenance{Spec: v1alpha1.NodeMaintenanceSpec{NodeName: "n", Policy: "q"}}
	api := &v1alpha1.NodeMaintenance{Spec: v1alpha1.NodeMaintenanceSpec{NodeName: "n", Source: v1alpha1.SourceAPI}}
	unreadable := &v1alpha1.NodeMaintenance{}
	if err := json.Unmarshal([]byte(`{"metadata":{"name":"x"},"spec":{"nodeName":5}}`), unreadable); err != nil || unreadable.Unreadable() == nil {
		t.Fatalf("want a record that cannot be read, got err %v, unreadable %v", err, unreadable.Unreadable())
	}
	for _, tc := range []struct {
		name  string
		nm    *v1alpha1.NodeMaintenance
		quiet bool
		want  bool
	}{
		{"own request of a quiet policy", own, true, true},
		{"another policy's request, quiet", other, true, false},
		{"an API request, quiet", api, true, false},
		{"a record that cannot be read, quiet", unreadable, true, true},
		{"another policy's request, with candidates", other, false, true},
		{"an API request, with candidates", api, false, true},
	} {
		if got := wakes(tc.nm, "p", tc.quiet); got != tc.want {
			t.Errorf("%s: wakes = %v, want %v", tc.name, got, tc.want)
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

func TestQuietPolicies(t *testing.T) {
	q := &quietPolicies{}
	if q.has("p") {
		t.Error("a policy never evaluated is quiet")
	}
	q.set("p", true)
	if !q.has("p") || q.has("q") {
		t.Error("set(p, true) did not make p alone quiet")
	}
	q.forget("p")
	if q.has("p") {
		t.Error("a forgotten policy is still quiet")
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
