package policy_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator"
	"github.com/kmaint/kmaint/test/harness"
)

// poke makes the policy reconcile now, as the passing of fake time cannot.
func poke(g Gomega, name string) {
	p := harness.GetPolicy(g, bed, name)
	patch := client.MergeFrom(p.DeepCopy())
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations["test.kmaint.io/poke"] = fmt.Sprint(time.Now().UnixNano())
	g.Expect(bed.Client.Patch(context.Background(), p, patch)).To(Succeed())
}

// A schedule fires at its time in its zone for every selected node; fires
// missed while the operator was down collapse into one.
func TestScheduleFiresOnceForEveryNode(t *testing.T) {
	g := NewWithT(t)
	berlin, err := time.LoadLocation("Europe/Berlin")
	g.Expect(err).NotTo(HaveOccurred())
	nodes := harness.CreateNodes(t, bed, "sched", "sched", 3)
	clk := clocktesting.NewFakeClock(time.Now())
	stop := startOperator(t, "", clk)
	p := newPolicy("sched", "sched", func(s *v1alpha1.RebootPolicySpec) {
		s.Schedule = &v1alpha1.ScheduleTrigger{Cron: "0 3 * * *", TimeZone: "Europe/Berlin"}
	})
	p.Spec.MaxConcurrentRequests = &intstr.IntOrString{Type: intstr.String, StrVal: "100%"}
	harness.CreateTemporary(t, bed, p)

	g.Eventually(func(g Gomega) {
		g.Expect(condition(g, "sched", v1alpha1.ReadyCondition).Status).To(Equal(metav1.ConditionTrue))
	}, timeout).Should(Succeed())
	g.Expect(harness.PolicyMaintenances(g, bed, "sched")).To(BeEmpty(), "no fire between the policy's creation and now")

	// The next 03:00 in Berlin comes.
	now := clk.Now().In(berlin)
	fire := time.Date(now.Year(), now.Month(), now.Day(), 3, 0, 0, 0, berlin)
	if !fire.After(now) {
		fire = time.Date(now.Year(), now.Month(), now.Day()+1, 3, 0, 0, 0, berlin)
	}
	clk.SetTime(fire.Add(time.Minute))
	poke(g, "sched")
	g.Eventually(func(g Gomega) {
		reqs := harness.PolicyMaintenances(g, bed, "sched")
		g.Expect(reqs).To(HaveLen(3))
		for _, n := range nodes {
			g.Expect(reqs[n]).To(HaveLen(1))
			g.Expect(reqs[n][0].Spec.Source).To(Equal(v1alpha1.SourceSchedule))
			g.Expect(reqs[n][0].Spec.Reason).To(ContainSubstring(`schedule "0 3 * * *" (Europe/Berlin) fired at ` + fire.UTC().Format(time.RFC3339)))
		}
		g.Expect(lastScheduleTime(g, "sched")).To(BeTemporally("==", fire))
	}, timeout).Should(Succeed())

	// The operator is down for three fires; a person clears the requests.
	stop()
	var list v1alpha1.NodeMaintenanceList
	g.Expect(bed.Client.List(context.Background(), &list, client.MatchingLabels{v1alpha1.PolicyLabel: "sched"})).To(Succeed())
	for i := range list.Items {
		g.Expect(bed.Client.Delete(context.Background(), &list.Items[i])).To(Succeed())
	}
	g.Eventually(func(g Gomega) { g.Expect(harness.PolicyMaintenances(g, bed, "sched")).To(BeEmpty()) }, timeout).Should(Succeed())
	latest := fire.AddDate(0, 0, 3)
	clk.SetTime(latest.Add(2 * time.Hour))
	startOperator(t, "", clk)
	g.Eventually(func(g Gomega) {
		reqs := harness.PolicyMaintenances(g, bed, "sched")
		g.Expect(reqs).To(HaveLen(3))
		for _, n := range nodes {
			g.Expect(reqs[n]).To(HaveLen(1), "three missed fires raise one request per node, not three")
			g.Expect(reqs[n][0].Spec.Reason).To(ContainSubstring("fired at " + latest.UTC().Format(time.RFC3339)))
		}
		g.Expect(lastScheduleTime(g, "sched")).To(BeTemporally("==", latest))
	}, timeout).Should(Succeed())
	g.Consistently(func(g Gomega) {
		n := 0
		for _, reqs := range harness.PolicyMaintenances(g, bed, "sched") {
			n += len(reqs)
		}
		g.Expect(n).To(Equal(3))
	}, 2*time.Second, 500*time.Millisecond).Should(Succeed())
}

// A policy the operator cannot use says what is wrong and raises nothing.
func TestInvalidScheduleIsReported(t *testing.T) {
	g := NewWithT(t)
	harness.CreateNodes(t, bed, "badcron", "badcron", 1)
	startOperator(t, "", nil)
	harness.CreateTemporary(t, bed, newPolicy("badcron", "badcron", func(s *v1alpha1.RebootPolicySpec) {
		s.Schedule = &v1alpha1.ScheduleTrigger{Cron: "0 3 * * *", TimeZone: "Mars/Olympus"}
	}))
	harness.CreateTemporary(t, bed, newPolicy("badcron2", "badcron", func(s *v1alpha1.RebootPolicySpec) {
		s.Schedule = &v1alpha1.ScheduleTrigger{Cron: "every night"}
	}))
	g.Eventually(func(g Gomega) {
		c := condition(g, "badcron", v1alpha1.ReadyCondition)
		g.Expect(c.Reason).To(Equal("InvalidSpec"))
		g.Expect(c.Message).To(ContainSubstring(`spec.schedule: timeZone "Mars/Olympus" is not a known IANA time zone`))
		c = condition(g, "badcron2", v1alpha1.ReadyCondition)
		g.Expect(c.Reason).To(Equal("InvalidSpec"))
		g.Expect(strings.Contains(c.Message, `"every night" is not a five-field cron expression`)).To(BeTrue(), c.Message)
	}, timeout).Should(Succeed())
	// The event recorder sends asynchronously: the event may follow the
	// condition.
	g.Eventually(func(g Gomega) []string {
		return harness.EventReasons(g, bed, "RebootPolicy", "badcron", "")
	}, timeout).Should(ContainElement("InvalidSpec"))
	g.Expect(harness.PolicyMaintenances(g, bed, "badcron")).To(BeEmpty())
	g.Expect(harness.PolicyMaintenances(g, bed, "badcron2")).To(BeEmpty())
}

// lastScheduleTime is the policy's last fire acted on, which must be
// recorded: a request is made before the status that records its fire, so
// a poll may see the one without the other.
func lastScheduleTime(g Gomega, policy string) time.Time {
	last := harness.GetPolicy(g, bed, policy).Status.LastScheduleTime
	g.Expect(last).NotTo(BeNil(), "policy %s's fire is recorded", policy)
	return last.Time
}

// A node labelled for a schedule while the operator's Node watch delivers
// nothing (as after the API server was away, until the informer's backoff
// ends) is not left out of the fire: the fire waits, unspent, and says why,
// until the cache has the node; then it asks for the node.
func TestAScheduleFireWaitsForTheCacheToHoldTheSelectedNodes(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	node := harness.CreateNodes(t, bed, "stalesched", "stalesched", 1)[0]
	clk := clocktesting.NewFakeClock(time.Now())
	nodeWatches := harness.StartOperatorStalling(t, bed, "/nodes", operator.Options{Clock: clk})
	// A policy seen evaluated says the operator's cache is up.
	harness.CreateTemporary(t, bed, newPolicy("stalewatch", "stalesched", func(s *v1alpha1.RebootPolicySpec) {
		s.Schedule = &v1alpha1.ScheduleTrigger{Cron: "0 3 1 1 *", TimeZone: "UTC"}
	}))
	g.Eventually(func(g Gomega) {
		g.Expect(harness.GetPolicy(g, bed, "stalewatch").Status.ObservedGeneration).NotTo(BeZero())
	}, timeout).Should(Succeed())

	nodeWatches.Stall()
	var n corev1.Node
	g.Expect(bed.Client.Get(ctx, client.ObjectKey{Name: node}, &n)).To(Succeed())
	base := n.DeepCopy()
	n.Labels["stale-tag"] = "yes"
	g.Expect(bed.Client.Patch(ctx, &n, client.MergeFrom(base))).To(Succeed())
	p := newPolicy("stalesched", "stalesched", func(s *v1alpha1.RebootPolicySpec) {
		s.Schedule = &v1alpha1.ScheduleTrigger{Cron: "0 3 * * *", TimeZone: "UTC"}
	})
	p.Spec.NodeSelector.MatchLabels = map[string]string{"stale-tag": "yes"}
	harness.CreateTemporary(t, bed, p)
	now := clk.Now().UTC()
	fire := time.Date(now.Year(), now.Month(), now.Day(), 3, 0, 0, 0, time.UTC)
	if !fire.After(now) {
		fire = fire.AddDate(0, 0, 1)
	}
	clk.SetTime(fire.Add(time.Minute))
	poke(g, "stalesched")
	g.Eventually(func(g Gomega) {
		c := condition(g, "stalesched", v1alpha1.ReadyCondition)
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Message).To(ContainSubstring("waits: the operator's cache of Nodes is behind the API server (selected there and not in the cache: [" + node + "]"))
		if last := harness.GetPolicy(g, bed, "stalesched").Status.LastScheduleTime; last != nil {
			g.Expect(last.Time).To(BeTemporally("<", fire), "the fire is not spent")
		}
	}, timeout).Should(Succeed())
	g.Expect(harness.PolicyMaintenances(g, bed, "stalesched")).To(BeEmpty())

	nodeWatches.Release()
	g.Eventually(func(g Gomega) {
		g.Expect(harness.PolicyMaintenances(g, bed, "stalesched")).To(HaveKey(node))
		g.Expect(lastScheduleTime(g, "stalesched")).To(BeTemporally("==", fire))
	}, timeout).Should(Succeed())
}
