package badinput

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
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

// userClient returns a client impersonating the user name, whom a
// ClusterRole of its own (made the first time a row asks) grants rules.
// The caller waits for RBAC to enforce the grant: a row's refusal must come
// from admission, not from a binding not yet in force.
func userClient(t *testing.T, name string, rules ...rbacv1.PolicyRule) client.Client {
	t.Helper()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: name}},
	}
	for _, o := range []client.Object{role, binding} {
		if err := client.IgnoreAlreadyExists(bed.Client.Create(context.Background(), o)); err != nil {
			t.Fatal(err)
		}
	}
	cfg := rest.CopyConfig(bed.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: name, Groups: []string{"system:authenticated"}}
	c, err := client.New(cfg, client.Options{Scheme: bed.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
