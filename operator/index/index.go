package index

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/operator/api/v1alpha1"
)

// The fields NodeMaintenances are indexed by.
const (
	// NodeName is spec.nodeName.
	NodeName = "spec.nodeName"
	// Policy is spec.policy; requests no policy raised are not indexed.
	Policy = "spec.policy"
	// State is one of Open, Finished and Unreadable.
	State = "kmaint.io/state"
)

// The values of State.
const (
	// Open: not Succeeded or Failed yet.
	Open = "open"
	// Finished: Succeeded or Failed.
	Finished = "finished"
	// Unreadable: the stored object does not fit the Go type, so its node,
	// policy and phase are unknown (see v1alpha1.NodeMaintenance.Unreadable).
	// It is in no node's or policy's index.
	Unreadable = "unreadable"
)

// Setup registers the indexes with the manager's cache. It is called once
// per manager, before the controllers that use them start.
func Setup(ctx context.Context, indexer client.FieldIndexer) error {
	fields := map[string]func(*v1alpha1.NodeMaintenance) []string{
		NodeName: func(nm *v1alpha1.NodeMaintenance) []string { return []string{nm.Spec.NodeName} },
		Policy: func(nm *v1alpha1.NodeMaintenance) []string {
			if nm.Spec.Policy == "" {
				return nil
			}
			return []string{nm.Spec.Policy}
		},
		State: func(nm *v1alpha1.NodeMaintenance) []string { return []string{StateOf(nm)} },
	}
	for field, values := range fields {
		err := indexer.IndexField(ctx, &v1alpha1.NodeMaintenance{}, field, func(o client.Object) []string {
			nm, ok := o.(*v1alpha1.NodeMaintenance)
			if !ok {
				return nil
			}
			if field != State && nm.Unreadable() != nil {
				return nil
			}
			return values(nm)
		})
		if err != nil {
			return fmt.Errorf("index maintenances by %s: %w", field, err)
		}
	}
	return nil
}

// StateOf is a NodeMaintenance's value of State.
func StateOf(nm *v1alpha1.NodeMaintenance) string {
	switch {
	case nm.Unreadable() != nil:
		return Unreadable
	case nm.Status.Phase.Done():
		return Finished
	}
	return Open
}
