package install

import (
	"context"
	"slices"
	"strconv"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/test/manifests"
)

// TestNetworkPolicyCoversDefault: config/networkpolicy, the kustomize
// install's NetworkPolicies, applies (a server-side dry run) and holds
// config/default's pods: each selects its pods, opens only ports they name,
// each to named peers, and the daemon, which is on the pod network, serves
// its plain-HTTP metrics on the one port its policy opens.
func TestNetworkPolicyCoversDefault(t *testing.T) {
	ctx := context.Background()
	for _, u := range manifests.Kustomize(t, "namespace") {
		if err := apply(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	pods := map[string]corev1.PodTemplateSpec{}
	for _, u := range manifests.Kustomize(t, "default") {
		switch u.GetKind() {
		case "Deployment":
			var d appsv1.Deployment
			fromUnstructured(t, u, &d)
			pods[d.Name] = d.Spec.Template
		case "DaemonSet":
			var d appsv1.DaemonSet
			fromUnstructured(t, u, &d)
			pods[d.Name] = d.Spec.Template
		}
	}
	covered := map[string]bool{}
	for _, u := range manifests.Kustomize(t, "networkpolicy") {
		if err := apply(ctx, u, client.DryRunAll); err != nil {
			t.Errorf("%s: %v", manifests.ID(u), err)
		}
		var np networkingv1.NetworkPolicy
		fromUnstructured(t, u, &np)
		sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) {
			t.Errorf("%s: policy types %v, want Ingress", np.Name, np.Spec.PolicyTypes)
		}
		for name, pod := range pods {
			if !sel.Matches(labels.Set(pod.Labels)) {
				continue
			}
			covered[name] = true
			for _, rule := range np.Spec.Ingress {
				if len(rule.From) == 0 {
					t.Errorf("%s: a rule open to every peer: %+v", np.Name, rule)
				}
				for _, p := range rule.Ports {
					if !slices.ContainsFunc(pod.Spec.Containers, func(c corev1.Container) bool {
						return slices.ContainsFunc(c.Ports, func(cp corev1.ContainerPort) bool { return cp.Name == p.Port.String() })
					}) {
						t.Errorf("%s opens port %s, which %s's pods do not name", np.Name, p.Port.String(), name)
					}
				}
			}
		}
	}
	for _, name := range []string{"kmaint-operator", "kmaint-daemon"} {
		if !covered[name] {
			t.Errorf("no NetworkPolicy selects %s's pods", name)
		}
	}

	daemon := pods["kmaint-daemon"].Spec
	if daemon.HostNetwork {
		t.Error("the daemon uses the host's network: no NetworkPolicy keeps its metrics")
	}
	for _, c := range daemon.Containers {
		if c.Name != "daemon" {
			continue
		}
		i := slices.IndexFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == "metrics" })
		if i < 0 {
			t.Fatalf("the daemon container has no port named metrics: %v", c.Ports)
		}
		if want := "--metrics-bind-address=:" + strconv.Itoa(int(c.Ports[i].ContainerPort)); !slices.Contains(c.Args, want) {
			t.Errorf("the daemon's metrics are not served on its port named metrics (%s): args %q", want, c.Args)
		}
	}
}
