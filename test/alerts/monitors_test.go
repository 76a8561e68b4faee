package alerts_test

import (
	"slices"
	"testing"
)

// monitor is the part of a ServiceMonitor or PodMonitor the test checks.
type monitor struct {
	APIVersion string     `json:"apiVersion"`
	Kind       string     `json:"kind"`
	Metadata   objectMeta `json:"metadata"`
	Spec       struct {
		JobLabel          string `json:"jobLabel"`
		NamespaceSelector struct {
			MatchNames []string `json:"matchNames"`
		} `json:"namespaceSelector"`
		Selector struct {
			MatchLabels map[string]string `json:"matchLabels"`
		} `json:"selector"`
		Endpoints           []endpoint `json:"endpoints"`
		PodMetricsEndpoints []endpoint `json:"podMetricsEndpoints"`
	} `json:"spec"`
}

type endpoint struct {
	Port            string `json:"port"`
	Path            string `json:"path"`
	Interval        string `json:"interval"`
	HonorLabels     bool   `json:"honorLabels"`
	Scheme          string `json:"scheme"`
	BearerTokenFile string `json:"bearerTokenFile"`
	TLSConfig       struct {
		InsecureSkipVerify bool `json:"insecureSkipVerify"`
	} `json:"tlsConfig"`
}

// TestMonitors: the ServiceMonitor and PodMonitor select the operator's and
// the daemons' metrics ports in kmaint-system, set the job labels the
// alerts match, and the daemons' node label wins (honorLabels); the
// kustomization installs them and the PrometheusRule, and not the plain
// rule files, which are no Kubernetes objects.
func TestMonitors(t *testing.T) {
	tests := map[string]struct {
		file, kind, app string
		daemon          bool // a PodMonitor of the daemons, which needs honorLabels
	}{
		"operator": {file: dir + "/servicemonitor.yaml", kind: "ServiceMonitor", app: "kmaint-operator"},
		"daemon":   {file: dir + "/podmonitor.yaml", kind: "PodMonitor", app: "kmaint-daemon", daemon: true},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			var m monitor
			decodeFile(t, tt.file, &m)
			if m.APIVersion != "monitoring.coreos.com/v1" || m.Kind != tt.kind {
				t.Errorf("%s %s, want monitoring.coreos.com/v1 %s", m.APIVersion, m.Kind, tt.kind)
			}
			if m.Metadata.Namespace != "kmaint-system" || !slices.Equal(m.Spec.NamespaceSelector.MatchNames, []string{"kmaint-system"}) {
				t.Errorf("namespace %q, namespaceSelector %v: want kmaint-system", m.Metadata.Namespace, m.Spec.NamespaceSelector.MatchNames)
			}
			if got := m.Spec.Selector.MatchLabels["app.kubernetes.io/name"]; got != tt.app {
				t.Errorf("selects app.kubernetes.io/name=%q, want %q", got, tt.app)
			}
			if m.Spec.JobLabel != "app.kubernetes.io/name" {
				t.Errorf("jobLabel %q: the alerts match job=%q, the selected objects' app.kubernetes.io/name", m.Spec.JobLabel, tt.app)
			}
			eps := m.Spec.Endpoints
			if tt.daemon {
				eps = m.Spec.PodMetricsEndpoints
			}
			if len(eps) != 1 || eps[0].Port != "metrics" {
				t.Fatalf("endpoints %+v, want one on port metrics", eps)
			}
			if tt.daemon && !eps[0].HonorLabels {
				t.Error("the daemons' endpoint lacks honorLabels: a node target label would push the daemon's node label aside")
			}
			// The operator serves its metrics over HTTPS to callers with a
			// token the API server allows (--metrics-secure): Prometheus
			// sends its own, and accepts the certificate the operator made.
			if !tt.daemon && (eps[0].Scheme != "https" || eps[0].BearerTokenFile == "" || !eps[0].TLSConfig.InsecureSkipVerify) {
				t.Errorf("the operator's endpoint %+v: want https with Prometheus's token", eps[0])
			}
		})
	}

	var k struct {
		APIVersion string   `json:"apiVersion"`
		Kind       string   `json:"kind"`
		Resources  []string `json:"resources"`
	}
	decodeFile(t, dir+"/kustomization.yaml", &k)
	want := []string{"prometheusrule.yaml", "servicemonitor.yaml", "podmonitor.yaml"}
	if !slices.Equal(k.Resources, want) {
		t.Errorf("kustomization resources %v, want %v", k.Resources, want)
	}
}
