package poolnodes_test

import (
	"math"
	"testing"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/poolnodes"
)

// The pool's status only hints at how many members to make room for: a
// forged or stale count never makes the gate or aftercare reserve more
// than the nodes there are, nor panic on a negative one.
func TestCapacityTrustsThePoolsCountOnlyWithinTheNodes(t *testing.T) {
	for name, tc := range map[string]struct {
		counted int32
		nodes   int
		want    int
	}{
		"as counted":                {counted: 1500, nodes: 2000, want: 1500},
		"no status yet":             {counted: 0, nodes: 2000, want: 0},
		"more than the nodes there": {counted: math.MaxInt32, nodes: 3, want: 3},
		"negative":                  {counted: -1, nodes: 3, want: 0},
		"the lowest int32":          {counted: math.MinInt32, nodes: 3, want: 0},
	} {
		t.Run(name, func(t *testing.T) {
			pool := &v1alpha1.MaintenancePool{Status: v1alpha1.MaintenancePoolStatus{Nodes: tc.counted}}
			if got := poolnodes.Capacity(pool, tc.nodes); got != tc.want {
				t.Errorf("Capacity(nodes %d counted, %d there) = %d, want %d", tc.counted, tc.nodes, got, tc.want)
			}
		})
	}
}
