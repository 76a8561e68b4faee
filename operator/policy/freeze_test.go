package policy_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/harness"
)

// A policy's freeze does not stop it: its schedule fires and its requests
// are raised (the gate holds them); the policy says it is frozen. A freeze
// it cannot read says so, with a Warning, and changes nothing else.
func TestPolicyFreezeIsToldAndRequestsAreStillRaised(t *testing.T) {
	g := NewWithT(t)
	harness.CreateNodes(t, bed, "pfz", "pfz", 2)
	now := time.Now().UTC()
	clk := clocktesting.NewFakeClock(now)
	startOperator(t, "", clk)
	p := newPolicy("pfz", "pfz", func(s *v1alpha1.RebootPolicySpec) {
		s.Schedule = &v1alpha1.ScheduleTrigger{Cron: "0 3 * * *"}
		s.Freezes = []v1alpha1.FreezePeriod{{Name: "quiet", Reason: "year-end", Start: &metav1.Time{Time: now.Add(-time.Hour)}, End: &metav1.Time{Time: now.Add(30 * 24 * time.Hour)}}}
	})
	p.Spec.MaxConcurrentRequests = &intstr.IntOrString{Type: intstr.String, StrVal: "100%"}
	harness.CreateTemporary(t, bed, p)
	bad := newPolicy("pfz-bad", "pfz-none", func(s *v1alpha1.RebootPolicySpec) {
		s.Schedule = &v1alpha1.ScheduleTrigger{Cron: "0 3 * * *"}
		s.Freezes = []v1alpha1.FreezePeriod{{Name: "mars", Schedule: "0 0 * * 5", Duration: &metav1.Duration{Duration: time.Hour}, TimeZone: "Mars/Olympus"}}
	})
	harness.CreateTemporary(t, bed, bad)

	g.Eventually(func(g Gomega) {
		c := condition(g, "pfz", v1alpha1.FrozenCondition)
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(c.Reason).To(Equal(v1alpha1.FrozenReason))
		g.Expect(c.Message).To(ContainSubstring("RebootPolicy pfz's freeze quiet (year-end) until"))
		g.Expect(condition(g, "pfz", v1alpha1.ReadyCondition).Status).To(Equal(metav1.ConditionTrue))

		c = condition(g, "pfz-bad", v1alpha1.FrozenCondition)
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(c.Reason).To(Equal(v1alpha1.InvalidFreezeReason))
		g.Expect(c.Message).To(ContainSubstring("Mars/Olympus"))
		g.Expect(condition(g, "pfz-bad", v1alpha1.ReadyCondition).Status).To(Equal(metav1.ConditionTrue))
		g.Expect(harness.EventReasons(g, bed, "RebootPolicy", "pfz-bad", "Warning")).To(ContainElement(v1alpha1.InvalidFreezeReason))
	}, timeout).Should(Succeed())

	// The schedule fires during the freeze: the requests are raised.
	fire := time.Date(now.Year(), now.Month(), now.Day(), 3, 0, 0, 0, time.UTC)
	if !fire.After(now) {
		fire = fire.AddDate(0, 0, 1)
	}
	clk.SetTime(fire.Add(time.Minute))
	poke(g, "pfz")
	g.Eventually(func(g Gomega) {
		g.Expect(harness.PolicyMaintenances(g, bed, "pfz")).To(HaveLen(2))
	}, timeout).Should(Succeed())
	g.Expect(condition(g, "pfz", v1alpha1.FrozenCondition).Status).To(Equal(metav1.ConditionTrue))
}

// The Frozen condition follows the clock: it turns True when a freeze
// starts and False when it ends, though nothing else happens to the policy
// (its monthly schedule evaluates it once a month).
func TestPolicyFrozenConditionFollowsTheClock(t *testing.T) {
	g := NewWithT(t)
	harness.CreateNodes(t, bed, "pfc", "pfc", 1)
	now := time.Now().UTC().Truncate(time.Second)
	clk := clocktesting.NewFakeClock(now)
	startOperator(t, "", clk)
	start, end := now.Add(2*time.Second), now.Add(4*time.Second)
	harness.CreateTemporary(t, bed, newPolicy("pfc", "pfc", func(s *v1alpha1.RebootPolicySpec) {
		s.Schedule = &v1alpha1.ScheduleTrigger{Cron: "0 3 1 * *"}
		s.Freezes = []v1alpha1.FreezePeriod{{Name: "change-freeze", Start: &metav1.Time{Time: start}, End: &metav1.Time{Time: end}}}
	}))
	frozen := func(reason string) {
		t.Helper()
		g.Eventually(func(g Gomega) {
			g.Expect(condition(g, "pfc", v1alpha1.FrozenCondition).Reason).To(Equal(reason))
		}, timeout).Should(Succeed())
	}
	frozen(v1alpha1.NotFrozenReason)

	clk.SetTime(start.Add(time.Second))
	frozen(v1alpha1.FrozenReason)
	g.Expect(condition(g, "pfc", v1alpha1.FrozenCondition).Message).To(ContainSubstring("change-freeze"))

	clk.SetTime(end.Add(time.Second))
	frozen(v1alpha1.NotFrozenReason)
}
