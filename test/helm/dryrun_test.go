package helm

import (
	"context"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kmaint/kmaint/test/manifests"
)

// allValues turns on every optional object the chart has.
const allValues = `
namespace: {create: true}
prometheus:
  url: http://prometheus-operated.monitoring:9090
  serviceMonitor: {enabled: true}
  podMonitor: {enabled: true}
  prometheusRule: {enabled: true}
alertWebhook:
  tokenSecret: {create: true}
dashboards: {enabled: true}
networkPolicy: {enabled: true}
daemon: {bootIDFile: /run/kmaint/boot_id, hostCommandDir: /opt/kmaint/bin}
pools:
  - name: workers
    spec:
      nodeSelector: {matchLabels: {node-role.kubernetes.io/worker: ""}}
      maxUnavailable: 10%
      windows:
        - {schedule: "0 2 * * *", duration: 4h, timeZone: Europe/Berlin}
      drain: {timeout: 30m}
`

// TestChartAppliesDryRun applies every object the chart renders with all
// its options on, with a server-side dry run, after creating the namespace
// for real. The Prometheus Operator's own CRDs for ServiceMonitor,
// PodMonitor and PrometheusRule (hack/helm-assets.sh takes them from the
// prometheus-operator module) are installed first, so those objects are
// validated against their real schemas too.
func TestChartAppliesDryRun(t *testing.T) {
	ctx := context.Background()
	if _, err := envtest.InstallCRDs(bed.Config, envtest.CRDInstallOptions{
		Paths:              []string{filepath.Join(helmAssets(t), "crds")},
		ErrorIfPathMissing: true,
	}); err != nil {
		t.Fatalf("install the Prometheus Operator CRDs: %v", err)
	}
	objs := template(t, namespace, allValues)
	kinds := map[string]bool{}
	for _, u := range objs {
		kinds[u.GetKind()] = true
		if u.GetKind() == "Namespace" {
			if err := apply(ctx, u); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, k := range []string{"Namespace", "Secret", "MaintenancePool", "ConfigMap", "ServiceMonitor", "PodMonitor", "PrometheusRule", "NetworkPolicy"} {
		if !kinds[k] {
			t.Errorf("no %s rendered with every option on", k)
		}
	}
	for _, u := range objs {
		t.Run(manifests.ID(u), func(t *testing.T) {
			if err := apply(ctx, u, client.DryRunAll); err != nil {
				t.Error(err)
			}
		})
	}
}

// apply server-side applies the object as the chart's objects are applied.
func apply(ctx context.Context, u *unstructured.Unstructured, opts ...client.ApplyOption) error {
	return manifests.Apply(ctx, bed.Client, "kmaint-helm-test", u, opts...)
}
