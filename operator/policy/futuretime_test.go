package policy_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/harness"
)

// TestFutureCompletionDoesNotHoldCooldown: a NodeMaintenance marked
// Succeeded at a time in 2099 (by hand, or by a daemon token before the
// admission policy forbade it) would hold the node's cooldown until 2099.
// The operator does not believe a time that far past its clock: the
// cooldown counts from the record's creation, a Warning event says so, and
// the policy raises its request once that cooldown ends.
func TestFutureCompletionDoesNotHoldCooldown(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	node := harness.CreateNodes(t, bed, "future", "future", 1)[0]

	forged := &v1alpha1.NodeMaintenance{
		ObjectMeta: metav1.ObjectMeta{Name: "future-forged"},
		Spec:       v1alpha1.NodeMaintenanceSpec{NodeName: node, Reason: "forged completion"},
	}
	g.Expect(bed.Client.Create(ctx, forged)).To(Succeed())
	t.Cleanup(func() { _ = bed.Client.Delete(context.Background(), forged) })
	in2099 := metav1.NewTime(time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC))
	forged.Status.Phase = v1alpha1.PhaseSucceeded
	forged.Status.PhaseTimes.Succeeded = &in2099
	g.Expect(bed.Client.Status().Update(ctx, forged)).To(Succeed())
	created := forged.CreationTimestamp.Time

	clk := clocktesting.NewFakeClock(time.Now())
	startOperator(t, "", clk)
	p := newPolicy("future", "future", func(s *v1alpha1.RebootPolicySpec) {
		s.Schedule = &v1alpha1.ScheduleTrigger{Cron: "* * * * *"}
		s.Cooldown = &metav1.Duration{Duration: 24 * time.Hour}
	})
	harness.CreateTemporary(t, bed, p)

	// The schedule fires: the node cools down for 24h from the record's
	// creation, not from 2099.
	clk.SetTime(clk.Now().Add(2 * time.Minute))
	poke(g, "future")
	g.Eventually(func(g Gomega) {
		c := candidate(harness.GetPolicy(g, bed, "future"), node)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.State).To(Equal(v1alpha1.CandidateCooldown))
		g.Expect(c.Until).NotTo(BeNil())
		g.Expect(c.Until.Time).To(BeTemporally("~", created.Add(24*time.Hour), time.Second))
	}, timeout).Should(Succeed())
	g.Eventually(func(g Gomega) []string {
		var list eventsv1.EventList
		g.Expect(bed.Client.List(ctx, &list)).To(Succeed())
		var notes []string
		for _, e := range list.Items {
			if e.Regarding.Name == "future-forged" && e.Type == corev1.EventTypeWarning && e.Reason == v1alpha1.FutureTimeReason {
				notes = append(notes, e.Note)
			}
		}
		return notes
	}, timeout).Should(ContainElement(
		"status.phaseTimes.succeeded (2099-01-01T00:00:00Z) lies more than 5m0s past the operator's clock; cooldowns count from the record's creation (" +
			created.UTC().Format(time.RFC3339) + ") instead"))

	// A day later the cooldown is over and the policy asks for the reboot.
	clk.SetTime(clk.Now().Add(25 * time.Hour))
	poke(g, "future")
	g.Eventually(func(g Gomega) []v1alpha1.NodeMaintenance {
		return harness.PolicyMaintenances(g, bed, "future")[node]
	}, timeout).Should(HaveLen(1))
}
