package gate

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

// ReadBehind is the gate's read past its cache before it admits or
// approves (readBehind), through reader, for package gate_test's
// BenchmarkGateLiveRead.
func ReadBehind(ctx context.Context, reader client.Reader, pool *v1alpha1.MaintenancePool, gate *v1alpha1.MaintenanceGate) string {
	return (&Reconciler{apiReader: reader}).readBehind(ctx, pool, gate)
}
