package gate_test

import (
	"context"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator"
	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/harness"
)

// aheadClock is the real clock moved ahead by a shift the test sets: the
// operator sees a pod hold grow old without the test waiting for it.
type aheadClock struct {
	mu    sync.Mutex
	shift time.Duration
}

func (c *aheadClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.shift)
}

func (c *aheadClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

func (c *aheadClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.shift += d
}

// A pool bounds what pods can hold (podOptOuts): a tenant's pods outside
// its namespaces hold nothing, however they are annotated or labelled; the
// named namespace's pods hold their node until maxHold, after which one
// pool admits the node (Admit) and the other keeps it held and says so
// (Report, the default).
func TestPodOptOutsAreBoundedByThePool(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	harness.CreateNamespace(t, bed, "dba")
	harness.CreateNamespace(t, bed, "tenant")
	bounded := func(name string, after v1alpha1.PodHoldAction) {
		pool := gen.Pool(name, intstr.FromInt32(1))
		pool.Spec.BlockingPodSelector = &v1alpha1.LabelSelector{MatchLabels: map[string]v1alpha1.SelectorValue{"app": "db"}}
		pool.Spec.PodOptOuts = &v1alpha1.PodOptOuts{
			Namespaces:   []string{"dba"},
			MaxHold:      &metav1.Duration{Duration: time.Hour},
			AfterMaxHold: after,
		}
		createPool(t, pool)
	}
	bounded("hold-admit", v1alpha1.PodHoldAdmit)
	bounded("hold-report", v1alpha1.PodHoldReport)
	admitNodes := createNodes(t, "hold-admit", "hold-admit", 2)
	primary, squatted := admitNodes[0], admitNodes[1]
	reported := createNodes(t, "hold-report", "hold-report", 1)[0]
	pod := func(ns, name, node string, labels, annotations map[string]string) {
		p := gen.Pod(ns, name, node, labels)
		p.Annotations = annotations
		g.Expect(gen.CreatePod(ctx, bed.Client, p)).To(Succeed())
	}
	pod("dba", "primary", primary, nil, map[string]string{protocol.DoNotDisrupt: "failover first"})
	pod("tenant", "squatter", squatted, nil, map[string]string{protocol.DoNotDisrupt: "mine, forever"})
	pod("tenant", "lookalike", squatted, map[string]string{"app": "db"}, nil)
	pod("dba", "replica", reported, map[string]string{"app": "db"}, nil)
	admitDaemons := runDaemons(t, "hold-admit", false)
	reportDaemons := runDaemons(t, "hold-report", false)
	clk := &aheadClock{}
	harness.StartOperatorWith(t, bed, operator.Options{BlockingPodInterval: time.Second, Clock: clk})

	request(t, primary, "hold-primary", time.Now().Add(-time.Minute)) // first in line
	request(t, squatted, "hold-squatted", time.Now())
	request(t, reported, "hold-reported", time.Now())

	// The tenant's pods hold nothing: the node behind the held one reboots.
	g.Eventually(func(g Gomega) { expectRebootedOnce(g, squatted, false) }, timeout).Should(Succeed())
	expectWaiting(g, primary, v1alpha1.DoNotDisruptReason, "pod dba/primary")
	expectWaiting(g, reported, v1alpha1.BlockingPodReason, "pod dba/replica")
	for _, n := range []string{primary, reported} {
		g.Eventually(func(g Gomega) map[string]string { return getNode(g, n).Annotations }, timeout).
			Should(HaveKey(protocol.AdmissionHeld), "node %s held, since when on record", n)
	}
	g.Expect(admitDaemons.Count(primary)).To(BeZero())

	// An hour on, both holds are past maxHold.
	clk.advance(time.Hour + time.Minute)
	g.Eventually(func(g Gomega) { expectRebootedOnce(g, primary, false) }, timeout).Should(Succeed())
	g.Eventually(func(g Gomega) []string { return harness.EventReasons(g, bed, "Node", primary, "Warning") }, timeout).
		Should(ContainElement(v1alpha1.PodOptOutOverriddenReason))

	expectWaiting(g, reported, v1alpha1.BlockingPodReason, "pod dba/replica", "past the pool's podOptOuts.maxHold")
	g.Eventually(func(g Gomega) []string { return harness.EventReasons(g, bed, "Node", reported, "Warning") }, timeout).
		Should(ContainElement(v1alpha1.PodOptOutOverdueReason))
	var held protocol.Held
	_, err := protocol.Decode(getNode(g, reported), protocol.AdmissionHeld, &held)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(held.Overdue).To(BeTrue())
	g.Expect(reportDaemons.Count(reported)).To(BeZero(), "Report keeps the node held")
	g.Expect(getNode(g, reported).Annotations).NotTo(HaveKey(protocol.Admitted))
}
