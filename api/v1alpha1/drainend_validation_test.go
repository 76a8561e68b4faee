package v1alpha1_test

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

// What a pool may say about a drain's deadline, and the largest values the
// API accepts.
func TestDrainTimeoutActionAdmission(t *testing.T) {
	drain := func(d map[string]any) map[string]any {
		return map[string]any{"nodeSelector": selector(), "drain": d}
	}
	retry := func(r map[string]any) map[string]any {
		return drain(map[string]any{"onTimeout": "Retry", "retry": r})
	}
	runAdmissionCases(t, "MaintenancePool", map[string]admissionCase{
		"onTimeout Retry":           {spec: drain(map[string]any{"onTimeout": "Retry"})},
		"onTimeout Abandon":         {spec: drain(map[string]any{"onTimeout": "Abandon"})},
		"onTimeout Force":           {spec: drain(map[string]any{"onTimeout": "Force"})},
		"onTimeout force":           {spec: drain(map[string]any{"onTimeout": "force"}), wantErr: "Unsupported value", wantField: "spec.drain.onTimeout"},
		"largest retry":             {spec: retry(map[string]any{"maxAttempts": 100, "backoff": "24h"})},
		"smallest retry":            {spec: retry(map[string]any{"maxAttempts": 1, "backoff": "1s"})},
		"maxAttempts 101":           {spec: retry(map[string]any{"maxAttempts": 101}), wantErr: "less than or equal to 100", wantField: "spec.drain.retry.maxAttempts"},
		"maxAttempts 0":             {spec: retry(map[string]any{"maxAttempts": 0}), wantErr: "greater than or equal to 1", wantField: "spec.drain.retry.maxAttempts"},
		"maxAttempts past int64":    {spec: retry(map[string]any{"maxAttempts": int64(1) << 62}), wantErr: "less than or equal to 100", wantField: "spec.drain.retry.maxAttempts"},
		"backoff 24h1s":             {spec: retry(map[string]any{"backoff": "24h1s"}), wantErr: "backoff must be a Go duration from 1s to 24h", wantField: "spec.drain.retry.backoff"},
		"backoff 999999h":           {spec: retry(map[string]any{"backoff": "999999h"}), wantErr: "backoff must be a Go duration from 1s to 24h", wantField: "spec.drain.retry.backoff"},
		"backoff 500ms":             {spec: retry(map[string]any{"backoff": "500ms"}), wantErr: "backoff must be a Go duration from 1s to 24h", wantField: "spec.drain.retry.backoff"},
		"backoff bogus":             {spec: retry(map[string]any{"backoff": "soon"}), wantErr: "backoff", wantField: "spec.drain.retry.backoff"},
		"drain timeout a week":      {spec: drain(map[string]any{"timeout": "168h"})},
		"drain timeout past a week": {spec: drain(map[string]any{"timeout": "168h1s"}), wantErr: "timeout must be at most 168h", wantField: "spec.drain.timeout"},
		"drain timeout 2562047h":    {spec: drain(map[string]any{"timeout": "2562047h"}), wantErr: "timeout must be at most 168h", wantField: "spec.drain.timeout"},
	})
}

// The API server fills in Retry, 3 attempts 30m apart, and the gate reads
// the same defaults for the built-in default pool, which has no object.
func TestDrainTimeoutDefaults(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	pool := &v1alpha1.MaintenancePool{
		ObjectMeta: metav1.ObjectMeta{Name: "defaults-drain-end"},
		Spec: v1alpha1.MaintenancePoolSpec{NodeSelector: &v1alpha1.LabelSelector{MatchLabels: map[string]v1alpha1.SelectorValue{"pool": "x"}},
			Drain: v1alpha1.DrainOptions{Retry: &v1alpha1.DrainRetry{}}},
	}
	g.Expect(bed.Client.Create(ctx, pool)).To(Succeed())
	t.Cleanup(func() { _ = bed.Client.Delete(context.Background(), pool) })
	g.Expect(pool.Spec.Drain.OnTimeout).To(Equal(v1alpha1.DrainRetryAction))
	g.Expect(pool.Spec.Drain.Retry.MaxAttempts).To(BeEquivalentTo(3))
	g.Expect(pool.Spec.Drain.Retry.Backoff.Duration).To(Equal(30 * time.Minute))

	attempts, backoff := pool.Spec.Drain.RetryLimits()
	var none v1alpha1.DrainOptions
	noneAttempts, noneBackoff := none.RetryLimits()
	g.Expect(none.TimeoutAction()).To(Equal(pool.Spec.Drain.OnTimeout))
	g.Expect([]any{noneAttempts, noneBackoff}).To(Equal([]any{attempts, backoff}))
}

// Marks are label keys and values, taints NoSchedule or PreferNoSchedule;
// kmaint's own keys, Kubernetes' node taints, NoExecute and a label of the
// pool's own selector are refused with a message that says why.
func TestNodeMarkingAdmission(t *testing.T) {
	marking := func(m map[string]any) map[string]any {
		return map[string]any{"nodeSelector": selector(), "nodeMarking": m}
	}
	during := func(labels map[string]any, taints ...any) map[string]any {
		d := map[string]any{}
		if labels != nil {
			d["labels"] = labels
		}
		if len(taints) > 0 {
			d["taints"] = taints
		}
		return marking(map[string]any{"duringReboot": d})
	}
	taint := func(key, effect string) map[string]any { return map[string]any{"key": key, "effect": effect} }
	many := map[string]any{}
	for i := range 16 {
		many["example.com/m"+strings.Repeat("x", i)] = strings.Repeat("v", 63)
	}
	tooMany := map[string]any{"example.com/one-more": "v"}
	for k, v := range many {
		tooMany[k] = v
	}
	var eightTaints []any
	for i := range 8 {
		eightTaints = append(eightTaints, taint("example.com/t"+strings.Repeat("x", i), "PreferNoSchedule"))
	}
	runAdmissionCases(t, "MaintenancePool", map[string]admissionCase{
		"load balancer label and taint": {spec: during(map[string]any{"node.kubernetes.io/exclude-from-external-load-balancers": "true"},
			taint("example.com/rebooting", "PreferNoSchedule"), taint("example.com/rebooting", "NoSchedule"))},
		"largest marking":        {spec: during(many, eightTaints...)},
		"17 labels":              {spec: during(tooMany), wantErr: "must have at most 16 items", wantField: "spec.nodeMarking.duringReboot.labels"},
		"9 taints":               {spec: during(nil, append(eightTaints, taint("example.com/ninth", "NoSchedule"))...), wantErr: "must have at most 8 items", wantField: "spec.nodeMarking.duringReboot.taints"},
		"after labels":           {spec: marking(map[string]any{"afterReboot": map[string]any{"labels": map[string]any{"example.com/rebooted": "yes"}}})},
		"bad label key":          {spec: during(map[string]any{"-bad": "x"}), wantErr: "every key must be a label key", wantField: "spec.nodeMarking.duringReboot.labels"},
		"bad label value":        {spec: during(map[string]any{"example.com/x": "a b"}), wantErr: "must be a label value"},
		"label value too long":   {spec: during(map[string]any{"example.com/x": strings.Repeat("v", 64)}), wantErr: "Too long"},
		"kmaint label":           {spec: during(map[string]any{"kmaint.io/admitted": "x"}), wantErr: "label keys under kmaint.io are kmaint's own"},
		"kmaint subdomain label": {spec: during(map[string]any{"x.kmaint.io/y": "x"}), wantErr: "label keys under kmaint.io are kmaint's own"},
		"kmaint after label":     {spec: marking(map[string]any{"afterReboot": map[string]any{"labels": map[string]any{"kmaint.io/x": "y"}}}), wantErr: "label keys under kmaint.io are kmaint's own"},
		"NoExecute taint":        {spec: during(nil, taint("example.com/rebooting", "NoExecute")), wantErr: "effect NoExecute is refused: it evicts every pod of the node at once, without respecting PodDisruptionBudgets"},
		"bogus taint effect":     {spec: during(nil, taint("example.com/rebooting", "Sometimes")), wantErr: "effect must be NoSchedule or PreferNoSchedule"},
		"kmaint taint":           {spec: during(nil, taint("kmaint.io/rebooting", "NoSchedule")), wantErr: "taint keys under kmaint.io are kmaint's own"},
		"cordon taint":           {spec: during(nil, taint("node.kubernetes.io/unschedulable", "NoSchedule")), wantErr: "Kubernetes' own"},
		"duplicate taint":        {spec: during(nil, taint("example.com/t", "NoSchedule"), taint("example.com/t", "NoSchedule")), wantErr: "Duplicate value"},
		"label during and after": {spec: marking(map[string]any{"duringReboot": map[string]any{"labels": map[string]any{"example.com/state": "rebooting"}}, "afterReboot": map[string]any{"labels": map[string]any{"example.com/state": "done"}}}), wantErr: "a label key may be in duringReboot or afterReboot, not both"},
	})
}

// A marking stored before the schema refused it is refused by the gate too.
func TestNodeMarkingCheck(t *testing.T) {
	g := NewWithT(t)
	var none *v1alpha1.NodeMarking
	g.Expect(none.Check()).To(Succeed())
	ok := &v1alpha1.NodeMarking{DuringReboot: &v1alpha1.DuringRebootMarks{
		Labels: map[string]v1alpha1.MarkValue{"node.kubernetes.io/exclude-from-external-load-balancers": "true"},
		Taints: []v1alpha1.MarkTaint{{Key: "example.com/rebooting", Effect: "PreferNoSchedule"}},
	}}
	g.Expect(ok.Check()).To(Succeed())
	bad := &v1alpha1.NodeMarking{
		DuringReboot: &v1alpha1.DuringRebootMarks{
			Labels: map[string]v1alpha1.MarkValue{"kmaint.io/x": "y", "a b": "c"},
			Taints: []v1alpha1.MarkTaint{{Key: "example.com/t", Effect: "NoExecute"}, {Key: "node.kubernetes.io/unschedulable", Effect: "NoSchedule"}},
		},
		AfterReboot: &v1alpha1.AfterRebootMarks{Labels: map[string]v1alpha1.MarkValue{"example.com/x": "not a value"}},
	}
	err := bad.Check()
	g.Expect(err).To(HaveOccurred())
	for _, want := range []string{"kmaint.io/x is under kmaint.io", `"a b"`, "NoExecute", "node.kubernetes.io/unschedulable", "afterReboot label example.com/x"} {
		g.Expect(err.Error()).To(ContainSubstring(want))
	}
}
