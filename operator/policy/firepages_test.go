package policy_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/harness"
)

// A schedule's fire reads the selected nodes' names from the API server
// in pages, since their metadata is as large as anyone who may patch
// Nodes made it (a padded cluster of 2000 Nodes took the operator past
// 1.5 GiB in one list; BenchmarkPaddedNodes): over more nodes than a
// page holds, the fire finds the cache agrees with every page, and is
// spent.
func TestAScheduleFireReadsEveryPageOfItsNodes(t *testing.T) {
	g := NewWithT(t)
	harness.CreateNodes(t, bed, "pagedsched", "pagedsched", 230)
	clk := clocktesting.NewFakeClock(time.Now())
	startOperator(t, "", clk)
	harness.CreateTemporary(t, bed, newPolicy("pagedsched", "pagedsched", func(s *v1alpha1.RebootPolicySpec) {
		s.Schedule = &v1alpha1.ScheduleTrigger{Cron: "0 3 * * *", TimeZone: "UTC"}
		s.DryRun = true
	}))
	g.Eventually(func(g Gomega) {
		g.Expect(condition(g, "pagedsched", v1alpha1.ReadyCondition).Status).To(Equal(metav1.ConditionTrue))
	}, timeout).Should(Succeed())

	now := clk.Now().UTC()
	fire := time.Date(now.Year(), now.Month(), now.Day(), 3, 0, 0, 0, time.UTC)
	if !fire.After(now) {
		fire = fire.AddDate(0, 0, 1)
	}
	clk.SetTime(fire.Add(time.Minute))
	poke(g, "pagedsched")
	g.Eventually(func(g Gomega) {
		g.Expect(lastScheduleTime(g, "pagedsched")).To(BeTemporally("==", fire))
		g.Expect(condition(g, "pagedsched", v1alpha1.ReadyCondition).Status).To(Equal(metav1.ConditionTrue))
	}, timeout).Should(Succeed())
}
