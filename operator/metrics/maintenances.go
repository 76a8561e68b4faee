package metrics

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/index"
)

// maintenanceCounts are the cached NodeMaintenances by state, and the open
// ones by the policy that raised them.
type maintenanceCounts struct {
	open, finished, unreadable int
	openByPolicy               map[string]int
}

// countMaintenances counts the NodeMaintenances without copying the
// finished ones. The open and unreadable ones are listed by the state index
// (they are few); the finished ones, most of a year's history, are
// counted where they are kept (history.History), since a list would copy
// each into the list only to count it.
func (s *State) countMaintenances(ctx context.Context) (maintenanceCounts, error) {
	c := maintenanceCounts{openByPolicy: map[string]int{}}
	var open, unreadable v1alpha1.NodeMaintenanceList
	for _, l := range []struct {
		list  *v1alpha1.NodeMaintenanceList
		value string
	}{{&open, index.Open}, {&unreadable, index.Unreadable}} {
		if err := s.Reader.List(ctx, l.list, client.MatchingFields{index.State: l.value}, client.UnsafeDisableDeepCopy); err != nil {
			return c, fmt.Errorf("list %s node maintenances: %w", l.value, err)
		}
	}
	for i := range open.Items {
		if p := open.Items[i].Spec.Policy; p != "" {
			c.openByPolicy[p]++
		}
	}
	c.open, c.unreadable = len(open.Items), len(unreadable.Items)
	c.finished = s.Finished()
	return c, nil
}
