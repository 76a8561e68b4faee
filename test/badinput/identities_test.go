package badinput

import (
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/test/manifests"
)

func installIdentities(t *testing.T) {
	manifests.InstallIdentities(t, bed, "kmaint-badinput-test")
}

// daemonClient acts as the daemon of node, with a token bound to a pod on
// it: what a thief of that token can do.
func daemonClient(t *testing.T, node string) client.Client {
	return manifests.TokenClient(t, bed, manifests.PodToken(t, bed, manifests.DaemonPod(t, bed, node)))
}

// writeKubeconfig writes a cluster admin's kubeconfig for the plugin.
func writeKubeconfig(t *testing.T) string {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := bed.WriteKubeconfig(path, "matrix-admin", "system:masters"); err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(path, 0o600)
	return path
}
