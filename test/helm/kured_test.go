package helm

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/test/manifests"
	"github.com/kmaint/kmaint/test/testbed"
)

// kuredGuide is "Coming from kured", the migration guide beside the chart,
// relative to the repository's root.
const kuredGuide = "config/helm/kmaint/kured.md"

// kuredValuesMarker precedes, in the kured guide's "A kured values file,
// translated", the values a kured user's chart values translate into.
const kuredValuesMarker = "<!-- kured-values-translated -->"

// guideBlock returns the fenced block that follows marker in the kured
// guide, without its fences.
func guideBlock(t *testing.T, marker string) string {
	t.Helper()
	guide, err := os.ReadFile(filepath.Join(testbed.RepoRoot(), kuredGuide))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(guide), marker+"\n```yaml\n")
	if !ok {
		t.Fatalf("%s has no yaml block after %s", kuredGuide, marker)
	}
	block, _, ok := strings.Cut(rest, "\n```")
	if !ok {
		t.Fatalf("the yaml block after %s in %s does not end", marker, kuredGuide)
	}
	return block
}

// podArgs joins the commands and arguments of every container of a pod.
func podArgs(spec corev1.PodSpec) string {
	var all []string
	for _, c := range append(spec.InitContainers, spec.Containers...) {
		all = append(all, c.Command...)
		all = append(all, c.Args...)
	}
	return strings.Join(all, " ")
}

// TestKuredValuesTranslationApplies renders the chart with the values the
// migration guide gives a kured user and has the API server accept every
// object (server-side dry run, the namespace created for real), so that
// the guide never shows a field the API refuses or the chart ignores.
func TestKuredValuesTranslationApplies(t *testing.T) {
	ctx := context.Background()
	values := guideBlock(t, kuredValuesMarker)
	objs := template(t, namespace, "namespace: {create: true}\n"+values)

	pools := 0
	for _, u := range objs {
		if u.GetKind() == "Namespace" {
			if err := apply(ctx, u); err != nil {
				t.Fatal(err)
			}
		}
		if u.GetKind() == "MaintenancePool" {
			pools++
		}
	}
	if pools != 1 {
		t.Errorf("rendered %d MaintenancePools from the guide's values, want its one pool", pools)
	}
	r := render(t, namespace, values)
	if args := podArgs(r.daemon().Spec.Template.Spec); !strings.Contains(args, "--zap-encoder=json") || !strings.Contains(args, "--sentinel-interval=10m") {
		t.Errorf("daemon pod args %q do not carry the guide's log format and sentinel interval", args)
	}
	if args := podArgs(r.operator().Spec.Template.Spec); !strings.Contains(args, "--notify-urls-file") {
		t.Errorf("operator args %q do not turn notifications on", args)
	}
	for _, u := range objs {
		t.Run(manifests.ID(u), func(t *testing.T) {
			if err := apply(ctx, u, client.DryRunAll); err != nil {
				t.Error(err)
			}
		})
	}
}
