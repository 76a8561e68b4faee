package cmd

import (
	"context"
	"fmt"
	"io"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

// SetClusterPaused pauses (with a reason) or resumes every pool at once
// through the MaintenanceGate named cluster, creating it when it does not
// exist. A gate already so is left alone, but a pause with a new reason
// records the new reason.
func SetClusterPaused(ctx context.Context, c client.Client, w io.Writer, paused bool, reason string) error {
	reason = strings.TrimSpace(reason)
	switch {
	case paused && reason == "":
		return fmt.Errorf("--reason is required with --all: it is shown on every pool and waiting request, to whoever wonders why nothing reboots")
	case paused && len(reason) > v1alpha1.MaxStopReasonLength:
		return fmt.Errorf("--reason is %d bytes long; at most %d", len(reason), v1alpha1.MaxStopReasonLength)
	case !paused && reason != "":
		return fmt.Errorf("--reason goes with pause --all only")
	}
	gate, err := getGate(ctx, c)
	if err != nil {
		return err
	}
	if gate == nil {
		if !paused {
			_, err := fmt.Fprintf(w, "maintenancegate/%s does not exist: no cluster-wide pause to lift\n", v1alpha1.ClusterGateName)
			return err
		}
		gate = &v1alpha1.MaintenanceGate{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.ClusterGateName},
			Spec: v1alpha1.MaintenanceGateSpec{Paused: true, Reason: reason}}
		if err := c.Create(ctx, gate); err != nil {
			return fmt.Errorf("create MaintenanceGate %s: %w", v1alpha1.ClusterGateName, err)
		}
		_, err := fmt.Fprintf(w, "maintenancegate/%s created, paused: %s\n%s\n", gate.Name, reason, pausedEffect)
		return err
	}
	if err := gate.Unreadable(); err != nil {
		return fmt.Errorf("MaintenanceGate %s cannot be read (%v), which stops every pool: fix it with kubectl edit maintenancegate %s, or delete it",
			gate.Name, err, gate.Name)
	}
	if gate.Spec.Paused == paused && (!paused || gate.Spec.Reason == reason) {
		state := map[bool]string{true: "paused: " + reason, false: "not paused"}[paused]
		_, err := fmt.Fprintf(w, "maintenancegate/%s already %s\n", gate.Name, state)
		return err
	}
	patch := fmt.Appendf(nil, `{"spec":{"paused":%t,"reason":%q}}`, paused, reason)
	if !paused {
		// The last reason stays, for whoever asks what the pause was.
		patch = []byte(`{"spec":{"paused":false}}`)
	}
	if err := c.Patch(ctx, gate, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("set paused of MaintenanceGate %s: %w", gate.Name, err)
	}
	if paused {
		_, err = fmt.Fprintf(w, "maintenancegate/%s paused: %s\n%s\n", gate.Name, reason, pausedEffect)
		return err
	}
	_, err = fmt.Fprintf(w, "maintenancegate/%s resumed: every pool admits its waiting requests again, within its own budget, windows and pause\n", gate.Name)
	return err
}

// pausedEffect says what a cluster-wide pause does.
const pausedEffect = "No pool admits a new node, the default pool included; nodes already admitted finish. Lift it with: kubectl kmaint resume --all"

// getGate reads the cluster's MaintenanceGate; nil when there is none, or
// when the cluster's kmaint predates the kind.
func getGate(ctx context.Context, c client.Client) (*v1alpha1.MaintenanceGate, error) {
	gate := &v1alpha1.MaintenanceGate{}
	err := c.Get(ctx, types.NamespacedName{Name: v1alpha1.ClusterGateName}, gate)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case meta.IsNoMatchError(err):
		return nil, fmt.Errorf("this cluster's kmaint has no MaintenanceGate kind (install the CRDs of this plugin's version): %w", err)
	case err != nil:
		return nil, fmt.Errorf("get MaintenanceGate %s: %w", v1alpha1.ClusterGateName, err)
	}
	return gate, nil
}

// clusterLine is the status command's first line while the cluster's
// MaintenanceGate stops admissions; empty when it does not.
func clusterLine(gate *v1alpha1.MaintenanceGate) string {
	stop := v1alpha1.StopOf(gate)
	if stop == nil {
		return ""
	}
	return fmt.Sprintf("CLUSTER PAUSED (%s): %s", stop.Reason, stop.Message)
}
