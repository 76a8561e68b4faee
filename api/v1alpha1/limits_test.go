package v1alpha1_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/kmaint/kmaint/test/testbed"
)

// unboundedOnPurpose lists the schema paths left without a size bound, with
// the reason. Everything else a client can write is bounded, so that no
// object (written by a person, or by a daemon's stolen token) can be large
// enough to hurt the operator that caches every one of them.
var unboundedOnPurpose = map[string]string{
	// metav1.LabelSelector's schema comes with the type; the pool's and the
	// policy's selectors are validated where they are declared.
	".spec.nodeSelector": "metav1.LabelSelector, validated with the selector",
	// metav1.Condition's schema comes with the type too; only the operator
	// writes conditions (the daemon may not: config/admission).
	".status.conditions[].lastTransitionTime": "metav1.Condition's, written by the operator only",
}

// TestEveryFieldIsBounded walks the CRDs as installed and fails on any
// string without maxLength (or an enum), list without maxItems or map
// without maxProperties: a field added later without a bound fails here.
func TestEveryFieldIsBounded(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(testbed.RepoRoot(), "config", "crd", "bases", "*.yaml"))
	if err != nil || len(files) != 4 {
		t.Fatalf("want the four CRDs, got %v (%v)", files, err)
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(raw, crd); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, v := range crd.Spec.Versions {
			root := v.Schema.OpenAPIV3Schema
			for _, part := range []string{"spec", "status"} {
				s, ok := root.Properties[part]
				if !ok {
					continue
				}
				for _, problem := range unbounded(&s, "."+part) {
					t.Errorf("%s %s: %s", crd.Spec.Names.Kind, v.Name, problem)
				}
			}
		}
	}
}

// unbounded returns the paths under s that have no size bound.
func unbounded(s *apiextensionsv1.JSONSchemaProps, path string) []string {
	if _, ok := unboundedOnPurpose[path]; ok {
		return nil
	}
	var out []string
	switch {
	case s.XIntOrString:
		// An integer, or a string bounded by the field's CEL rules'
		// pattern: both maxUnavailable and maxConcurrentRequests match
		// '^(100|[1-9]?[0-9])%$'.
	case s.Type == "string" && s.MaxLength == nil && len(s.Enum) == 0:
		out = append(out, path+": a string without maxLength")
	case s.Type == "array":
		if s.MaxItems == nil {
			out = append(out, path+": a list without maxItems")
		}
		if s.Items != nil && s.Items.Schema != nil {
			out = append(out, unbounded(s.Items.Schema, path+"[]")...)
		}
	case s.Type == "object":
		if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
			if s.MaxProperties == nil {
				out = append(out, path+": a map without maxProperties")
			}
			if len(s.XValidations) == 0 {
				out = append(out, path+": a map whose keys and values no rule bounds")
			}
		}
		names := make([]string, 0, len(s.Properties))
		for name := range s.Properties {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			p := s.Properties[name]
			out = append(out, unbounded(&p, path+"."+name)...)
		}
	}
	return out
}

// TestOversizedValuesRefused writes values past each kind of bound to the
// real API server: a daemon's stolen token once wrote a 1 MiB
// status.message, and a date-time is a string too (a 64 KiB fraction of a
// second was accepted before it had a bound).
func TestOversizedValuesRefused(t *testing.T) {
	ctx := context.Background()
	cases := map[string]struct {
		// kind and spec make the object; status, when set, is written to
		// its status subresource after it is created.
		kind   string
		spec   map[string]any
		status map[string]any
		// wantField is the field the refusal must name.
		wantField string
	}{
		"NodeMaintenance status.message of 1 MiB": {
			kind: "NodeMaintenance", spec: map[string]any{"nodeName": "n1", "reason": "r"},
			status:    map[string]any{"message": strings.Repeat("m", 1<<20)},
			wantField: "status.message",
		},
		"NodeMaintenance status.journaledTime with a 64 KiB fraction": {
			kind: "NodeMaintenance", spec: map[string]any{"nodeName": "n1", "reason": "r"},
			status:    map[string]any{"journaledTime": "2024-01-01T00:00:00." + strings.Repeat("0", 1<<16) + "Z"},
			wantField: "status.journaledTime",
		},
		"NodeMaintenance status.journaledBootID of 4 KiB": {
			kind: "NodeMaintenance", spec: map[string]any{"nodeName": "n1", "reason": "r"},
			status:    map[string]any{"journaledBootID": strings.Repeat("b", 4096)},
			wantField: "status.journaledBootID",
		},
		"NodeMaintenance status.requestID of 4 KiB": {
			kind: "NodeMaintenance", spec: map[string]any{"nodeName": "n1", "reason": "r"},
			status:    map[string]any{"requestID": strings.Repeat("i", 4096)},
			wantField: "status.requestID",
		},
		"NodeMaintenance 17 conditions": {
			kind: "NodeMaintenance", spec: map[string]any{"nodeName": "n1", "reason": "r"},
			status:    map[string]any{"conditions": conditions(17)},
			wantField: "status.conditions",
		},
		"MaintenancePool drain timeout of 1 KiB": {
			kind:      "MaintenancePool",
			spec:      map[string]any{"nodeSelector": selector(), "drain": map[string]any{"timeout": strings.Repeat("1", 1021) + "h"}},
			wantField: "spec.drain.timeout",
		},
		"RebootPolicy threshold of 1 KiB": {
			kind:      "RebootPolicy",
			spec:      map[string]any{"prometheus": map[string]any{"query": "q", "threshold": strings.Repeat("9", 1024)}},
			wantField: "spec.prometheus.threshold",
		},
		"RebootPolicy 33 alert matchers": {
			kind:      "RebootPolicy",
			spec:      map[string]any{"alert": map[string]any{"alertName": "A", "matchers": matchers(33, 1)}},
			wantField: "spec.alert.matchers",
		},
		"RebootPolicy alert matcher value of 2 KiB": {
			kind:      "RebootPolicy",
			spec:      map[string]any{"alert": map[string]any{"alertName": "A", "matchers": matchers(1, 2048)}},
			wantField: "spec.alert.matchers",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			obj := object(tc.kind, objectName("limits", name), tc.spec)
			err := bed.Client.Create(ctx, obj)
			if tc.status != nil {
				g.Expect(err).NotTo(HaveOccurred())
				t.Cleanup(func() { _ = bed.Client.Delete(context.Background(), obj) })
				g.Expect(unstructured.SetNestedMap(obj.Object, tc.status, "status")).To(Succeed())
				err = bed.Client.Status().Update(ctx, obj)
			} else if err == nil {
				_ = bed.Client.Delete(ctx, obj)
			}
			g.Expect(err).To(HaveOccurred(), "the API server accepted an oversized value")
			g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want an Invalid error, got %v", err)
			g.Expect(err.Error()).To(ContainSubstring(tc.wantField))
		})
	}
}

func conditions(n int) []any {
	var out []any
	for i := range n {
		out = append(out, map[string]any{
			"type": fmt.Sprintf("C%d", i), "status": "True", "reason": "R", "message": "",
			"lastTransitionTime": "2024-01-01T00:00:00Z",
		})
	}
	return out
}

func matchers(n, valueLength int) map[string]any {
	out := map[string]any{}
	for i := range n {
		out[fmt.Sprintf("label%d", i)] = strings.Repeat("v", valueLength)
	}
	return out
}
