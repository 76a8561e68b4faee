package helm

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/kmaint/kmaint/test/testbed"
)

// realClusterValues is the real-cluster test bed's values file.
func realClusterValues(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(chartDir(), "ci", "realcluster-values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestChartRealClusterValues: the test bed's values render, run the image
// hack/image-tar.sh names without pulling it, give the daemon the node's
// boot ID file, leave out the Prometheus Operator's objects, and say why
// for each value.
func TestChartRealClusterValues(t *testing.T) {
	values := realClusterValues(t)
	r := render(t, namespace, values)

	script, err := os.ReadFile(filepath.Join(testbed.RepoRoot(), "hack", "image-tar.sh"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`IMAGE_NAME="\$\{IMAGE_NAME:-(\S+)\}"`).FindSubmatch(script)
	if m == nil {
		t.Fatal("hack/image-tar.sh names no IMAGE_NAME")
	}
	for _, spec := range []corev1.PodSpec{r.operator().Spec.Template.Spec, r.daemon().Spec.Template.Spec} {
		for _, ctr := range append(spec.Containers, spec.InitContainers...) {
			if ctr.Image != string(m[1]) || ctr.ImagePullPolicy != corev1.PullNever {
				t.Errorf("container %s: image %q pull policy %q, want %s and Never", ctr.Name, ctr.Image, ctr.ImagePullPolicy, m[1])
			}
		}
	}
	if args := r.daemon().Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--boot-id-file=/run/kmaint/boot_id") {
		t.Errorf("daemon args %q lack --boot-id-file", args)
	}
	for id, u := range r.objs {
		if strings.HasPrefix(u.GetAPIVersion(), "monitoring.coreos.com/") {
			t.Errorf("%s rendered: the test bed has no Prometheus Operator", id)
		}
	}

	// Every value is explained: a comment right above each key.
	lines := strings.Split(values, "\n")
	for i, line := range lines {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") || !strings.Contains(trimmed, ":") {
			continue
		}
		if strings.HasSuffix(trimmed, ":") {
			continue // a map of values, each explained itself
		}
		if i == 0 || !strings.HasPrefix(strings.TrimSpace(lines[i-1]), "#") {
			t.Errorf("value %q has no comment saying why the test bed needs it", trimmed)
		}
	}
}
