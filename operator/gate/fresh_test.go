package gate

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

// What the cache must hold before the gate admits or approves: the pool as
// it is (its identity, spec and Halted condition) and the cluster's
// MaintenanceGate as it is; a status written by the gate itself (a new
// resourceVersion, the same generation) holds nothing back.
func TestTheCacheIsBehindWhenWhatDecidesAdmissionsChanged(t *testing.T) {
	pool := func(uid string, gen int64, halted bool) *v1alpha1.MaintenancePool {
		p := &v1alpha1.MaintenancePool{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: k8stypes.UID("u" + uid), Generation: gen, ResourceVersion: "7"}}
		if halted {
			p.Status.Conditions = []metav1.Condition{{Type: v1alpha1.HaltedCondition, Status: metav1.ConditionTrue}}
		}
		return p
	}
	statusWritten := pool("1", 4, false)
	statusWritten.ResourceVersion = "9"
	statusWritten.Status.MaxUnavailable = 2
	for _, c := range []struct {
		name         string
		cached, live *v1alpha1.MaintenancePool
		behind       bool
	}{
		{"the same", pool("1", 4, false), pool("1", 4, false), false},
		{"only its status written since", pool("1", 4, false), statusWritten, false},
		{"spec changed", pool("1", 4, false), pool("1", 5, false), true},
		{"halted since", pool("1", 4, false), pool("1", 4, true), true},
		{"halt lifted since", pool("1", 4, true), pool("1", 4, false), true},
		{"created anew", pool("1", 4, false), pool("2", 1, false), true},
		{"deleted", pool("1", 4, false), nil, true},
		{"the default pool without an object", &v1alpha1.MaintenancePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, nil, false},
	} {
		if got := poolBehind(c.cached, c.live); (got != "") != c.behind {
			t.Errorf("%s: poolBehind = %q, want behind %t", c.name, got, c.behind)
		}
	}

	gate := func(uid string, gen int64) *v1alpha1.MaintenanceGate {
		return &v1alpha1.MaintenanceGate{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.ClusterGateName, UID: k8stypes.UID("g" + uid), Generation: gen}}
	}
	for _, c := range []struct {
		name         string
		cached, live *v1alpha1.MaintenanceGate
		behind       bool
	}{
		{"none", nil, nil, false},
		{"the same", gate("1", 2), gate("1", 2), false},
		{"paused since", gate("1", 2), gate("1", 3), true},
		{"created since", nil, gate("1", 1), true},
		{"deleted since", gate("1", 2), nil, true},
		{"created anew", gate("1", 2), gate("2", 2), true},
	} {
		if got := gateBehind(c.cached, c.live); (got != "") != c.behind {
			t.Errorf("%s: gateBehind = %q, want behind %t", c.name, got, c.behind)
		}
	}
}
