package helm

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kmaint/kmaint/test/manifests"
)

// helmLabels are the labels the chart puts on every object and kustomize
// does not: Helm's release and chart.
var helmLabels = []string{"helm.sh/chart", "app.kubernetes.io/managed-by", "app.kubernetes.io/instance"}

// onlyInKustomize lists the objects config/default renders and the chart,
// with its default values, does not: the intended differences, each with
// its reason.
var onlyInKustomize = map[string]string{
	"Namespace/kmaint-system": "Helm does not create the release namespace; it is created and labelled beforehand, " +
		"or by --create-namespace with namespace.create=true (values.yaml), and then equals " +
		"config/default's (TestChartNamespace)",
}

// onlyInChart lists the objects the chart renders with its default values
// and config/default does not, with the reason. None: the optional objects
// (pools, dashboards, Prometheus Operator objects, the token Secret) are off
// by default, as config/default leaves them out.
var onlyInChart = map[string]string{}

// normalize removes what may differ between the chart and kustomize without
// changing what is installed: the given labels on the object itself, and
// the tag of each container's image (the chart's appVersion, config/
// default's newTag; TestChartImage checks the chart's).
func normalize(u *unstructured.Unstructured, labels ...string) *unstructured.Unstructured {
	u = u.DeepCopy()
	l := u.GetLabels()
	for _, k := range labels {
		delete(l, k)
	}
	u.SetLabels(l)
	if len(l) == 0 {
		unstructured.RemoveNestedField(u.Object, "metadata", "labels")
	}
	containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
	for _, c := range containers {
		c := c.(map[string]any)
		if img, ok := c["image"].(string); ok && !strings.Contains(img, "@") {
			if i := strings.LastIndex(img, ":"); i > strings.LastIndex(img, "/") {
				c["image"] = img[:i] + ":TAG"
			}
		}
	}
	if containers != nil {
		_ = unstructured.SetNestedSlice(u.Object, containers, "spec", "template", "spec", "containers")
	}
	if u.GetKind() == "ValidatingAdmissionPolicy" {
		normalizeCEL(u.Object)
	}
	return u
}

// normalizeCEL collapses the white space in a ValidatingAdmissionPolicy's
// CEL expressions. An intended difference: kustomize's YAML parser reads a
// folded scalar's line break before a more-indented line as two, Helm's
// (and the YAML spec, example 8.10) as one, so the same expression in
// config/admission and in the chart reaches the API server with one more
// blank line from kustomize. CEL ignores white space.
func normalizeCEL(obj any) {
	switch o := obj.(type) {
	case map[string]any:
		for k, v := range o {
			if s, ok := v.(string); ok && (k == "expression" || k == "messageExpression") {
				o[k] = strings.Join(strings.Fields(s), " ")
				continue
			}
			normalizeCEL(v)
		}
	case []any:
		for _, v := range o {
			normalizeCEL(v)
		}
	}
}

// compare checks that chart and want hold the same objects, except those
// listed in onlyWant and onlyChart, and that each is the same after
// normalize with the given labels.
func compare(t *testing.T, chart, want []*unstructured.Unstructured, onlyChart, onlyWant map[string]string, labels ...string) {
	t.Helper()
	c, w := byID(t, chart), byID(t, want)
	for _, k := range ids(w) {
		if _, ok := c[k]; !ok {
			if _, listed := onlyWant[k]; !listed {
				t.Errorf("%s: rendered by kustomize, missing from the chart", k)
			}
		}
	}
	for _, k := range ids(onlyWant) {
		if _, ok := w[k]; !ok {
			t.Errorf("%s is listed as rendered only by kustomize, which does not render it: update the list", k)
		} else if _, ok := c[k]; ok {
			t.Errorf("%s is listed as rendered only by kustomize, but the chart renders it too: update the list", k)
		}
	}
	for _, k := range ids(c) {
		if _, ok := w[k]; !ok {
			if _, listed := onlyChart[k]; !listed {
				t.Errorf("%s: rendered by the chart, not by kustomize", k)
			}
			continue
		}
		if diff := cmp.Diff(normalize(w[k], labels...).Object, normalize(c[k], labels...).Object); diff != "" {
			t.Errorf("%s differs (-kustomize +chart):\n%s", k, diff)
		}
	}
}

// TestChartMatchesKustomize renders the chart with its default values and
// config/default, and compares them object by object.
func TestChartMatchesKustomize(t *testing.T) {
	compare(t, template(t, namespace, ""), manifests.Kustomize(t, "default"), onlyInChart, onlyInKustomize, helmLabels...)
}

// TestChartNamespace renders the chart with namespace.create: its
// Namespaces, kmaint's and its hooks', are config/default's.
func TestChartNamespace(t *testing.T) {
	var chart, want []*unstructured.Unstructured
	for _, u := range template(t, namespace, "namespace: {create: true}") {
		if u.GetKind() == "Namespace" {
			chart = append(chart, u)
		}
	}
	for _, u := range manifests.Kustomize(t, "default") {
		if u.GetKind() == "Namespace" {
			want = append(want, u)
		}
	}
	if len(chart) != 2 {
		t.Fatalf("namespace.create=true renders %d Namespaces, want 2 (kmaint's and its hooks')", len(chart))
	}
	compare(t, chart, want, nil, nil, helmLabels...)
}

// TestChartPrometheusObjects renders the chart with the Prometheus
// Operator objects on and compares them with config/prometheus.
func TestChartPrometheusObjects(t *testing.T) {
	var chart []*unstructured.Unstructured
	for _, u := range template(t, namespace, `
prometheus:
  serviceMonitor: {enabled: true}
  podMonitor: {enabled: true}
  prometheusRule: {enabled: true}
`) {
		if u.GetAPIVersion() == "monitoring.coreos.com/v1" {
			chart = append(chart, u)
		}
	}
	// config/prometheus is applied on its own, not through config/default,
	// so it lacks config/default's app.kubernetes.io/part-of label, which
	// the chart puts on all its objects alike.
	labels := append([]string{"app.kubernetes.io/part-of"}, helmLabels...)
	compare(t, chart, manifests.Kustomize(t, "prometheus"), nil, nil, labels...)
}
