package helm

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kmaint/kmaint/test/manifests"
)

// TestChartNetworkPolicies renders the chart with networkPolicy on and
// compares its NetworkPolicies with config/networkpolicy, the kustomize
// install's: the daemons' plain-HTTP metrics are kept from the cluster
// alike whichever way kmaint is installed.
func TestChartNetworkPolicies(t *testing.T) {
	var chart []*unstructured.Unstructured
	for _, u := range template(t, namespace, "networkPolicy: {enabled: true}") {
		if u.GetKind() == "NetworkPolicy" {
			chart = append(chart, u)
		}
	}
	if len(chart) != 2 {
		t.Fatalf("networkPolicy.enabled renders %d NetworkPolicies, want 2 (the operator's and the daemons')", len(chart))
	}
	// Applied on its own, as config/prometheus is: no part-of label.
	labels := append([]string{"app.kubernetes.io/part-of"}, helmLabels...)
	compare(t, chart, manifests.Kustomize(t, "networkpolicy"), nil, nil, labels...)
}

// TestChartNetworkPolicyPeersRequired: an empty list of peers fails the
// render, naming the value. A NetworkPolicy rule without peers lets every
// peer in, the opposite of what it seems to say.
func TestChartNetworkPolicyPeersRequired(t *testing.T) {
	for value, values := range map[string]string{
		"networkPolicy.metricsFrom": "networkPolicy: {enabled: true, metricsFrom: []}",
		"networkPolicy.alertsFrom":  "networkPolicy: {enabled: true, alertsFrom: []}",
	} {
		f := filepath.Join(t.TempDir(), "values.yaml")
		if err := os.WriteFile(f, []byte(values), 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(filepath.Join(helmAssets(t), "helm"), "template", "kmaint", chartDir(), "--namespace", namespace, "--values", f).CombinedOutput()
		if want := value + " is empty: a NetworkPolicy rule with no peers lets every peer in"; err == nil || !strings.Contains(string(out), want) {
			t.Errorf("helm template with %s: %v\n%s", values, err, out)
		}
	}
	// Without the webhook there is no rule for it to leave open.
	template(t, namespace, "networkPolicy: {enabled: true, alertsFrom: []}\nalertWebhook: {enabled: false}")
}

// TestChartDaemonMetricsBehindThePolicy: whatever the daemon's values, its
// pods are on the pod network, where a NetworkPolicy applies (one on the
// host's network is out of its reach), and the daemon serves its metrics
// on the port the policy opens, named metrics, and on no other.
func TestChartDaemonMetricsBehindThePolicy(t *testing.T) {
	for name, values := range map[string]string{
		"defaults":         "",
		"sentinel file":    "daemon: {sentinel: {file: /var/run/reboot-required}}",
		"sentinel command": "daemon: {sentinel: {command: [needs-restarting, -r]}}",
		"host command":     "daemon: {hostCommandDir: /opt/kmaint/bin, bootIDFile: /run/kmaint/boot_id}",
	} {
		t.Run(name, func(t *testing.T) {
			spec := render(t, namespace, values).daemon().Spec.Template.Spec
			if spec.HostNetwork {
				t.Error("the daemon uses the host's network: no NetworkPolicy keeps its metrics")
			}
			for _, c := range spec.Containers {
				if c.Name != "daemon" {
					continue
				}
				metrics := slices.IndexFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == "metrics" })
				if metrics < 0 {
					t.Fatalf("the daemon container has no port named metrics: %v", c.Ports)
				}
				if want := "--metrics-bind-address=:" + strconv.Itoa(int(c.Ports[metrics].ContainerPort)); !slices.Contains(c.Args, want) {
					t.Errorf("the daemon's metrics are not served on its port named metrics (%s): args %q", want, c.Args)
				}
			}
		})
	}
}
