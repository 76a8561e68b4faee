package badinput

import (
	"context"
	"fmt"
	"hash/fnv"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kmaint/kmaint/test/harness"
	"github.com/kmaint/kmaint/test/testbed"
)

// object builds a kmaint object as kubectl would send it from YAML, so that
// a row can hold values the Go types cannot.
func object(kind, name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetGroupVersionKind(testbed.GVK(kind))
	u.SetName(name)
	return u
}

// rowName turns a row's name into a valid object name, unique per row.
func rowName(prefix, name string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteRune('-')
		}
	}
	h := fnv.New32a()
	h.Write([]byte(name))
	s := strings.Trim(prefix+"-"+b.String(), "-")
	if len(s) > 50 {
		s = strings.TrimRight(s[:50], "-")
	}
	return fmt.Sprintf("%s-%08x", s, h.Sum32())
}

// createRow creates a kmaint object for a row and deletes it when the row
// ends, so that rows do not see each other's objects.
func createRow(t *testing.T, kind, name string, spec map[string]any) (*unstructured.Unstructured, error) {
	u := object(kind, rowName(strings.ToLower(kind), name), spec)
	if err := bed.Client.Create(context.Background(), u); err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = bed.Client.Delete(context.Background(), u) })
	return u, nil
}

// refusedSpec is a row that creates an object of kind with spec, which the
// API server must refuse naming field.
func refusedSpec(surface, name, kind, field string, spec map[string]any) row {
	return row{
		surface: surface,
		name:    name,
		send: func(t *testing.T, _ *env) (shown, error) {
			_, err := createRow(t, kind, name, spec)
			return nil, err
		},
		want: refusedNaming(field),
	}
}

// poolConditions shows the reasons of a pool's conditions and events.
func poolConditions(name string) shown {
	return func(g Gomega) []string {
		p := harness.GetPool(g, bed, name)
		return append(conditionReasons(p.Status.Conditions), harness.EventReasons(g, bed, "MaintenancePool", name, "")...)
	}
}

// policyConditions shows the reasons of a policy's conditions and events.
func policyConditions(name string) shown {
	return func(g Gomega) []string {
		p := harness.GetPolicy(g, bed, name)
		return append(conditionReasons(p.Status.Conditions), harness.EventReasons(g, bed, "RebootPolicy", name, "")...)
	}
}

// maintenanceConditions shows the reasons of a NodeMaintenance's conditions
// and events.
func maintenanceConditions(name string) shown {
	return func(g Gomega) []string {
		nm := harness.GetMaintenance(g, bed, name)
		return append(conditionReasons(nm.Status.Conditions), harness.EventReasons(g, bed, "NodeMaintenance", name, "")...)
	}
}

// with returns base with kv set on a copy; a nil value deletes the key.
func with(base map[string]any, kv ...any) map[string]any {
	out := make(map[string]any, len(base)+len(kv)/2)
	for k, v := range base {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == nil {
			delete(out, kv[i].(string))
			continue
		}
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}
