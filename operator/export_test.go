package operator

import toolscache "k8s.io/client-go/tools/cache"

// NodeTransform and MaintenanceTransform are the transforms the operator's
// cache runs, for the benchmarks of package operator_test.
func NodeTransform() toolscache.TransformFunc { return newSlimmer().node }

// MaintenanceTransform: see NodeTransform.
func MaintenanceTransform() toolscache.TransformFunc { return newSlimmer().maintenance }
