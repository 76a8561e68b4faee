package badinput

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/manifests"
)

// The surfaces of the rows below: writes by identities that may make
// them, of values that need a right they lack.
const (
	requesterSurface     = "NodeMaintenance/requester"
	operatorTokenSurface = "Secret/operator token"
)

// requesterName may ask for reboots, create and edit NodeMaintenances, as
// a cluster grants people, and was granted no override.
const requesterName = "matrix-requester"

// requester is a client of requesterName, whose role it makes the first
// time and waits for RBAC to enforce.
func requester(t *testing.T) client.Client {
	t.Helper()
	c := userClient(t, requesterName,
		rbacv1.PolicyRule{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"nodemaintenances"}, Verbs: []string{"create", "update", "patch", "get", "list"}},
		// The plugin reads the node it is asked to reboot.
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get"}})
	NewWithT(t).Eventually(func() error {
		return c.Create(context.Background(), object("NodeMaintenance", "matrix-requester-probe", nmSpec()), client.DryRunAll)
	}).WithTimeout(30*time.Second).Should(Succeed(), "RBAC lets %s create NodeMaintenances", requesterName)
	return c
}

// operatorClient acts with a token of the operator's service account: what
// a thief of it can do.
func operatorClient(t *testing.T) client.Client {
	t.Helper()
	tr, err := kubernetes.NewForConfigOrDie(bed.Config).CoreV1().ServiceAccounts(manifests.Namespace).CreateToken(context.Background(), "kmaint-operator",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return manifests.TokenClient(t, bed, tr.Status.Token)
}

func rightsRows() []row {
	// A requester's NodeMaintenance, made with the requester's client and
	// deleted when the row ends.
	create := func(t *testing.T, name string, spec map[string]any) (*unstructured.Unstructured, error) {
		u := object("NodeMaintenance", rowName("nodemaintenance", name), spec)
		if err := requester(t).Create(context.Background(), u); err != nil {
			return nil, err
		}
		t.Cleanup(func() { _ = bed.Client.Delete(context.Background(), u) })
		return u, nil
	}
	override := func(name, says string, spec map[string]any) row {
		return row{surface: requesterSurface, name: name, want: refusedNaming(says),
			send: func(t *testing.T, _ *env) (shown, error) {
				_, err := create(t, name, spec)
				return nil, err
			}}
	}
	added := func(name, says, field string) row {
		return row{surface: requesterSurface, name: name, want: refusedNaming(says),
			send: func(t *testing.T, _ *env) (shown, error) {
				u, err := create(t, name, nmSpec("nodeName", openNodes[2]))
				if err != nil {
					t.Fatalf("the request to change: %v", err)
				}
				patch, err := json.Marshal(map[string]any{"spec": map[string]any{field: true}})
				if err != nil {
					t.Fatal(err)
				}
				return nil, requester(t).Patch(context.Background(), u, client.RawPatch(types.MergePatchType, patch))
			}}
	}
	const windows, freezes = "maintenanceoverrides.kmaint.io named ignoreWindows", "maintenanceoverrides.kmaint.io named ignoreFreezes"

	created := func(name, says string, obj client.Object) row {
		return row{surface: operatorTokenSurface, name: name, want: refusedNaming(says),
			send: func(t *testing.T, _ *env) (shown, error) {
				return nil, operatorClient(t).Create(context.Background(), obj, client.DryRunAll)
			}}
	}
	secret := func(name string, typ corev1.SecretType, annotations map[string]string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: manifests.Namespace, Name: name, Annotations: annotations}, Type: typ}
	}
	const onlyItsSecret = "the operator creates one Secret, its alert webhook certificate"
	saToken := map[string]string{corev1.ServiceAccountNameKey: "kmaint-operator"}

	// The plugin, run by the requester: the refusal names the flag and
	// the right.
	plugin := func(name, says string, args ...string) row {
		return row{surface: pluginSurface, name: name, want: refusedNaming(says),
			send: func(t *testing.T, e *env) (shown, error) {
				requester(t)
				kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
				if err := bed.WriteKubeconfig(kubeconfig, requesterName); err != nil {
					t.Fatal(err)
				}
				return nil, kubectlKmaint(&env{kubeconfig: kubeconfig}, args...)
			}}
	}

	return []row{
		plugin("request --ignore-freezes without the right", "--ignore-freezes needs the right to use maintenanceoverrides.kmaint.io named ignoreFreezes",
			"request", openNodes[1], "--reason", "bad-input matrix", "--ignore-freezes"),
		override("ignoreWindows without the right", windows, nmSpec("ignoreWindows", true)),
		override("ignoreFreezes without the right", freezes, nmSpec("ignoreFreezes", true)),
		override("both overrides without the right", "maintenanceoverrides.kmaint.io named ignore", nmSpec("ignoreWindows", true, "ignoreFreezes", true)),
		added("ignoreWindows added to a waiting request", windows, "ignoreWindows"),
		added("ignoreFreezes added to a waiting request", freezes, "ignoreFreezes"),
		created("a service account token Secret", onlyItsSecret, secret("kmaint-operator-token", corev1.SecretTypeServiceAccountToken, saToken)),
		created("a token Secret under the certificate's name", onlyItsSecret, secret("kmaint-alert-webhook-tls", corev1.SecretTypeServiceAccountToken, saToken)),
		created("an Opaque Secret of another name", onlyItsSecret, secret("planted", corev1.SecretTypeOpaque, nil)),
		created("a ConfigMap of another name", "the operator creates one ConfigMap, its alert webhook CA",
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: manifests.Namespace, Name: "planted"}}),
	}
}
