package protocol_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
)

func TestPodBlocks(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	started := func(ago time.Duration) *metav1.Time { return &metav1.Time{Time: now.Add(-ago)} }
	batch := labels.SelectorFromSet(labels.Set{"app": "batch"})
	cases := map[string]struct {
		annotations map[string]string
		labels      map[string]string
		phase       corev1.PodPhase
		start       *metav1.Time
		// wantReason is empty when the pod holds nothing; wantWhy a
		// substring of why it does.
		wantReason, wantWhy string
	}{
		"nothing":                         {},
		"kmaint's, with a reason":         {annotations: map[string]string{protocol.DoNotDisrupt: "payroll"}, wantReason: v1alpha1.DoNotDisruptReason, wantWhy: `"payroll"`},
		"kmaint's, empty":                 {annotations: map[string]string{protocol.DoNotDisrupt: ""}, wantReason: v1alpha1.DoNotDisruptReason, wantWhy: "(no reason given)"},
		"kmaint's, false is a reason too": {annotations: map[string]string{protocol.DoNotDisrupt: "false"}, wantReason: v1alpha1.DoNotDisruptReason, wantWhy: `"false"`},
		"kmaint's, huge, quoted short":    {annotations: map[string]string{protocol.DoNotDisrupt: strings.Repeat("é", 50_000)}, wantReason: v1alpha1.DoNotDisruptReason, wantWhy: "(over 256 bytes)"},
		"Karpenter's true":                {annotations: map[string]string{protocol.KarpenterDoNotDisrupt: "true"}, wantReason: v1alpha1.DoNotDisruptReason, wantWhy: "karpenter.sh/do-not-disrupt=true"},
		"Karpenter's false":               {annotations: map[string]string{protocol.KarpenterDoNotDisrupt: "false"}},
		"Karpenter's junk":                {annotations: map[string]string{protocol.KarpenterDoNotDisrupt: "yes"}},
		"Karpenter's duration, running":   {annotations: map[string]string{protocol.KarpenterDoNotDisrupt: "30m"}, start: started(10 * time.Minute), wantReason: v1alpha1.DoNotDisruptReason, wantWhy: "for 30m0s after it started"},
		"Karpenter's duration, over":      {annotations: map[string]string{protocol.KarpenterDoNotDisrupt: "30m"}, start: started(31 * time.Minute)},
		"Karpenter's duration, no start":  {annotations: map[string]string{protocol.KarpenterDoNotDisrupt: "30m"}, wantReason: v1alpha1.DoNotDisruptReason},
		"the selector":                    {labels: map[string]string{"app": "batch"}, wantReason: v1alpha1.BlockingPodReason, wantWhy: "blockingPodSelector (app=batch)"},
		"the selector, another app":       {labels: map[string]string{"app": "web"}},
		"finished pods hold nothing":      {labels: map[string]string{"app": "batch"}, annotations: map[string]string{protocol.DoNotDisrupt: "x"}, phase: corev1.PodSucceeded},
		"failed pods hold nothing":        {annotations: map[string]string{protocol.DoNotDisrupt: "x"}, phase: corev1.PodFailed},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", Labels: tc.labels, Annotations: tc.annotations},
				Status:     corev1.PodStatus{Phase: tc.phase, StartTime: tc.start},
			}
			reason, why := protocol.PodBlocks(pod, batch, now)
			if reason != tc.wantReason || !strings.Contains(why, tc.wantWhy) {
				t.Fatalf("PodBlocks = %q, %q; want %q with %q", reason, why, tc.wantReason, tc.wantWhy)
			}
			if len(why) > 400 {
				t.Fatalf("why is %d bytes long; a value must be quoted short", len(why))
			}
		})
	}
}

func TestNodeOptOut(t *testing.T) {
	cases := map[string]struct {
		annotations map[string]string
		// wantWhy is a substring of the opt-out's message; empty when the
		// node is not opted out.
		wantWhy string
	}{
		"none":                        {},
		"kmaint's":                    {annotations: map[string]string{protocol.DoNotDisrupt: "disk swap"}, wantWhy: `"disk swap"`},
		"kmaint's, false":             {annotations: map[string]string{protocol.DoNotDisrupt: "false"}, wantWhy: "until the annotation is removed"},
		"Karpenter's true":            {annotations: map[string]string{protocol.KarpenterDoNotDisrupt: "true"}, wantWhy: "karpenter.sh/do-not-disrupt=true"},
		"Karpenter's false":           {annotations: map[string]string{protocol.KarpenterDoNotDisrupt: "false"}},
		"kmaint's before Karpenter's": {annotations: map[string]string{protocol.KarpenterDoNotDisrupt: "true", protocol.DoNotDisrupt: "mine"}, wantWhy: `"mine"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := protocol.NodeOptOut(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Annotations: tc.annotations}})
			switch {
			case tc.wantWhy == "" && o != nil:
				t.Fatalf("opted out: %s", o.Message)
			case tc.wantWhy != "" && (o == nil || !strings.Contains(o.Message, tc.wantWhy) || o.Reason != v1alpha1.DoNotDisruptReason):
				t.Fatalf("NodeOptOut = %+v, want %q", o, tc.wantWhy)
			}
		})
	}
}

// A pool's podOptOuts.namespaces are the only namespaces whose pods hold
// their node: a tenant's pod elsewhere, annotated or matching the
// blockingPodSelector, holds nothing.
func TestPodsOptOutCountsOnlyTheNamedNamespaces(t *testing.T) {
	now := time.Date(2026, 12, 5, 6, 0, 0, 0, time.UTC)
	pod := func(ns, name string, labels, annotations map[string]string) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels, Annotations: annotations}}
	}
	sel := labels.SelectorFromSet(labels.Set{"app": "db"})
	pods := []corev1.Pod{
		pod("tenant", "squatter", nil, map[string]string{protocol.DoNotDisrupt: "mine forever"}),
		pod("tenant", "lookalike", map[string]string{"app": "db"}, nil),
	}
	bounds := &v1alpha1.PodOptOuts{Namespaces: []string{"databases"}}
	if o := protocol.PodsOptOut("n", pods, sel, bounds, now); o != nil {
		t.Fatalf("pods outside podOptOuts.namespaces hold the node: %s", o.Message)
	}
	if o := protocol.PodsOptOut("n", pods, sel, nil, now); o == nil {
		t.Fatal("without podOptOuts every namespace's pods hold their node")
	}
	pods = append(pods, pod("databases", "primary", nil, map[string]string{protocol.DoNotDisrupt: "failover first"}))
	o := protocol.PodsOptOut("n", pods, sel, bounds, now)
	if o == nil || !strings.Contains(o.Message, "databases/primary") || strings.Contains(o.Message, "tenant/") {
		t.Fatalf("the named namespace's pod alone holds the node; got %+v", o)
	}
}

// A value others write, cut for the operator's cache, reads as the whole
// one: an opt-out of any size holds the node and is quoted the same, and
// Karpenter's holds it only as "true".
func TestCutForeignReadsAsTheWhole(t *testing.T) {
	values := map[string]string{
		"short":                              "payroll",
		"empty":                              "",
		"just short enough":                  strings.Repeat("x", protocol.MaxForeignValue),
		"huge":                               strings.Repeat("x", 240<<10),
		"huge, in characters of two bytes":   strings.Repeat("é", 120<<10),
		"spaces past the cut, then a reason": strings.Repeat(" ", 300) + "payroll",
		"a reason, then spaces past the cut": "payroll" + strings.Repeat(" ", 300),
		"true":                               "true",
		"true, padded past the cut":          "true" + strings.Repeat(" ", 300),
	}
	for name, v := range values {
		for _, key := range []string{protocol.DoNotDisrupt, protocol.KarpenterDoNotDisrupt} {
			node := func(v string) *corev1.Node {
				return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Annotations: map[string]string{key: v}}}
			}
			whole, cut := protocol.NodeOptOut(node(v)), protocol.NodeOptOut(node(protocol.CutForeign(v)))
			if len(protocol.CutForeign(v)) > protocol.MaxForeignValue || (whole == nil) != (cut == nil) || whole != nil && *whole != *cut {
				t.Errorf("%s, %s: the whole value reads %+v, the cut one %+v", name, key, whole, cut)
			}
		}
	}
}
