package helm

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

// TestHelmInstall installs the chart for real the way values.yaml says for
// a namespace the chart labels (create it, then install with
// --take-ownership and namespace.create=true), with a generated webhook
// token and a pool; upgrades it and checks the token stays; uninstalls it
// and checks the CRDs stay.
func TestHelmInstall(t *testing.T) {
	ctx := context.Background()
	const ns = "kmaint-helm"
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := bed.WriteKubeconfig(kubeconfig, "helm-admin", "system:masters"); err != nil {
		t.Fatal(err)
	}
	release := []string{"kmaint", chartDir(), "--kubeconfig", kubeconfig, "--namespace", ns,
		"--set", "namespace.create=true", "--set", "alertWebhook.tokenSecret.create=true",
		// A hooks namespace of its own: the test API server never finishes
		// deleting a namespace, and the uninstall deletes this one.
		"--set", "hooks.namespace=" + ns + "-hooks",
		"--set", "pools[0].name=helm-test", "--set", "pools[0].spec.maxUnavailable=2",
		"--set", "pools[0].spec.nodeSelector.matchLabels.pool=helm-test"}

	if err := bed.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	helm(t, append([]string{"install", "--take-ownership"}, release...)...)

	var n corev1.Namespace
	if err := bed.Client.Get(ctx, client.ObjectKey{Name: ns}, &n); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"pod-security.kubernetes.io/enforce": "privileged", "app.kubernetes.io/managed-by": "Helm"} {
		if n.Labels[k] != v {
			t.Errorf("namespace %s: label %s=%q, want %q (labels %v)", ns, k, n.Labels[k], v, n.Labels)
		}
	}
	// The hooks' namespace says its pod security outright.
	if err := bed.Client.Get(ctx, client.ObjectKey{Name: ns + "-hooks"}, &n); err != nil {
		t.Fatal(err)
	}
	if n.Labels["pod-security.kubernetes.io/enforce"] != "privileged" {
		t.Errorf("hooks namespace %s: labels %v, want pod-security.kubernetes.io/enforce=privileged", n.Name, n.Labels)
	}
	token := func() []byte {
		t.Helper()
		var s corev1.Secret
		if err := bed.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "kmaint-alert-webhook"}, &s); err != nil {
			t.Fatal(err)
		}
		return s.Data["token"]
	}
	first := token()
	if len(first) < 32 {
		t.Fatalf("generated token has %d bytes", len(first))
	}
	var pool v1alpha1.MaintenancePool
	if err := bed.Client.Get(ctx, client.ObjectKey{Name: "helm-test"}, &pool); err != nil {
		t.Fatal(err)
	}

	helm(t, append([]string{"upgrade"}, append(release, "--set", "operator.replicas=3")...)...)
	if again := token(); !bytes.Equal(first, again) {
		t.Error("helm upgrade replaced the generated webhook token; Alertmanager's copy would no longer work")
	}
	var d appsv1.Deployment
	if err := bed.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "kmaint-operator"}, &d); err != nil {
		t.Fatal(err)
	}
	if *d.Spec.Replicas != 3 {
		t.Errorf("after upgrade: %d replicas, want 3", *d.Spec.Replicas)
	}

	helm(t, "uninstall", "kmaint", "--kubeconfig", kubeconfig, "--namespace", ns)
	if err := bed.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "kmaint-operator"}, &d); !apierrors.IsNotFound(err) {
		t.Errorf("after uninstall, get the operator Deployment: %v, want not found", err)
	}
	// Helm installs crds/ once and never deletes them, so an uninstall
	// keeps every MaintenancePool, RebootPolicy and NodeMaintenance.
	for _, name := range []string{"maintenancepools.kmaint.io", "rebootpolicies.kmaint.io", "nodemaintenances.kmaint.io"} {
		crd := &unstructured.Unstructured{}
		crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
		if err := bed.Client.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
			t.Errorf("CRD %s after uninstall: %v", name, err)
		}
	}
}
