package operator

import toolscache "k8s.io/client-go/tools/cache"

// NodeTransform is the transform the operator's cache runs on Nodes, for
// the benchmarks of package operator_test.
func NodeTransform() toolscache.TransformFunc { return newSlimmer().node }

// MaintenanceTransform is the transform the operator's cache runs on
// NodeMaintenances, for the benchmarks of package operator_test.
func MaintenanceTransform() toolscache.TransformFunc { return newSlimmer().maintenance }
