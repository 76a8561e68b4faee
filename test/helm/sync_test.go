package helm

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kmaint/kmaint/test/manifests"
	"github.com/kmaint/kmaint/test/testbed"
)

// TestChartCopiesInSync checks the files Helm needs inside the chart
// (make helm-files copies them) are byte for byte the repository's: the
// CRDs, the dashboards and the PrometheusRule, and no others.
func TestChartCopiesInSync(t *testing.T) {
	root := testbed.RepoRoot()
	for _, c := range []struct{ chart, repo string }{
		{"crds/*.yaml", "config/crd/bases/*.yaml"},
		{"dashboards/*.json", "dashboards/*.json"},
		{"files/*", "config/prometheus/prometheusrule.yaml"},
	} {
		t.Run(c.chart, func(t *testing.T) {
			repo, chart := files(t, filepath.Join(root, c.repo)), files(t, filepath.Join(chartDir(), c.chart))
			if len(repo) == 0 {
				t.Fatalf("no %s", c.repo)
			}
			if diff := cmp.Diff(ids(repo), ids(chart)); diff != "" {
				t.Fatalf("the chart's %s are not %s (-repo +chart): run make helm-files\n%s", c.chart, c.repo, diff)
			}
			for name, data := range repo {
				if !bytes.Equal(data, chart[name]) {
					t.Errorf("the chart's copy of %s differs: run make helm-files", name)
				}
			}
		})
	}
}

// files reads the files a glob matches, by base name.
func files(t *testing.T, glob string) map[string][]byte {
	t.Helper()
	matches, err := filepath.Glob(glob)
	if err != nil {
		t.Fatal(err)
	}
	m := make(map[string][]byte, len(matches))
	for _, p := range matches {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		m[filepath.Base(p)] = data
	}
	return m
}

// TestChartDashboards renders the dashboards: one ConfigMap per
// dashboards/*.json holding exactly that file, labelled for Grafana's
// sidecar with the label values.yaml names.
func TestChartDashboards(t *testing.T) {
	want := files(t, filepath.Join(testbed.RepoRoot(), "dashboards", "*.json"))
	for name, values := range map[string]struct {
		values      string
		label, val  string
		ns          string
		annotations map[string]string
	}{
		"default label": {"dashboards: {enabled: true}", "grafana_dashboard", "1", namespace, nil},
		"own label and namespace": {
			`dashboards: {enabled: true, label: kmaint_dashboard, labelValue: "on", namespace: monitoring, annotations: {grafana_folder: kmaint}}`,
			"kmaint_dashboard", "on", "monitoring", map[string]string{"grafana_folder": "kmaint"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			got := map[string][]byte{}
			for _, u := range template(t, namespace, values.values) {
				if u.GetKind() != "ConfigMap" {
					continue
				}
				if u.GetNamespace() != values.ns {
					t.Errorf("%s: namespace %q, want %q", manifests.ID(u), u.GetNamespace(), values.ns)
				}
				if v, ok := u.GetLabels()[values.label]; !ok || v != values.val {
					t.Errorf("%s: label %s=%q, want %q", manifests.ID(u), values.label, v, values.val)
				}
				if diff := cmp.Diff(values.annotations, u.GetAnnotations()); diff != "" {
					t.Errorf("%s: annotations (-want +got):\n%s", manifests.ID(u), diff)
				}
				data, _, _ := unstructured.NestedStringMap(u.Object, "data")
				for k, v := range data {
					if u.GetName() != "kmaint-dashboard-"+k[:len(k)-len(filepath.Ext(k))] {
						t.Errorf("%s holds %s", manifests.ID(u), k)
					}
					got[k] = []byte(v)
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("dashboards in ConfigMaps differ from dashboards/*.json (-want +got):\n%s", diff)
			}
		})
	}
	for _, u := range template(t, namespace, "") {
		if u.GetKind() == "ConfigMap" {
			t.Errorf("dashboards are off by default, yet %s is rendered", manifests.ID(u))
		}
	}
}
