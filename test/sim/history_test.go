package sim

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/retention"
	"github.com/kmaint/kmaint/policies"
)

// TestSeededHistoryIsKept: a year of monthly reboots seeded on every node
// is finished history the operator's retention keeps whole when it runs
// with HistoryRetention, and would cut with its defaults; the latest reboot
// ends in the node's current boot.
func TestSeededHistoryIsKept(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	c, err := Start(ctx, bed, Config{
		Pools: []PoolSpec{{Name: "history", Nodes: 3, MaxUnavailable: intstr.FromInt(1)}},
		Log:   logr.Discard(),
	})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(c.Stop)
	now := time.Now()
	created, err := c.SeedHistory(ctx, 12, now)
	t.Cleanup(func() {
		_ = bed.Client.Delete(context.Background(), &v1alpha1.RebootPolicy{ObjectMeta: metav1.ObjectMeta{Name: HistoryPolicy}})
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(created).To(Equal(36))
	var policy v1alpha1.RebootPolicy
	g.Expect(bed.Client.Get(ctx, client.ObjectKey{Name: HistoryPolicy}, &policy)).To(Succeed(), "the history comes with the policy that raised it")
	g.Expect(policy.Spec.Schedule).NotTo(BeNil())
	g.Expect(policy.Spec.NodeSelector).To(BeNil(), "over every node")

	for _, n := range c.Nodes() {
		var list v1alpha1.NodeMaintenanceList
		g.Expect(bed.Client.List(ctx, &list)).To(Succeed())
		var items []v1alpha1.NodeMaintenance
		for _, nm := range list.Items {
			if nm.Spec.NodeName == n.Name() {
				items = append(items, nm)
			}
		}
		g.Expect(items).To(HaveLen(12))
		oldest, latest, latestAfter := now, time.Time{}, ""
		for i := range items {
			nm := &items[i]
			g.Expect(nm.Status.Phase).To(Equal(v1alpha1.PhaseSucceeded))
			g.Expect(nm.RequestID()).To(Equal(string(nm.UID)))
			done := retention.FinishedAt(nm)
			if done.Before(oldest) {
				oldest = done
			}
			if done.After(latest) {
				latest, latestAfter = done, nm.Status.BootIDAfter
			}
		}
		g.Expect(now.Sub(oldest)).To(BeNumerically(">", 360*24*time.Hour), "a year of history")
		g.Expect(now.Sub(latest)).To(BeNumerically("<", 32*24*time.Hour), "last month's reboot")
		g.Expect(latestAfter).To(Equal(n.BootID()), "the last reboot ended in the node's current boot")
		if n == c.Nodes()[0] {
			t.Logf("one NodeMaintenance: %d bytes of JSON", served(t, &items[0]))
		}

		node := &corev1.Node{}
		g.Expect(bed.Client.Get(ctx, client.ObjectKey{Name: n.Name()}, node)).To(Succeed())
		state, _ := protocol.Read(node)
		prune, _ := retention.Plan(items, &state, HistoryRetention(12), now.Add(time.Hour))
		g.Expect(prune).To(BeEmpty(), "the retention the bench runs with keeps the seeded year")
		prune, _ = retention.Plan(items, &state, retention.Retention{PerNode: 10, MaxAge: 2160 * time.Hour}, now)
		g.Expect(len(prune)).To(BeNumerically(">=", 8), "the operator's defaults keep 90 days")
	}
}

// TestHistoryScheduleNeverFiresSoon: the seeded history's policy is a real
// schedule the operator evaluates, but one that does not fire for the next
// twelve days, whatever the day a bench starts on: a fire would raise a
// request for every node in the middle of the bench's own rollout.
func TestHistoryScheduleNeverFiresSoon(t *testing.T) {
	g := NewWithT(t)
	for _, day := range []string{"2026-01-30T23:59:00Z", "2026-02-28T12:00:00Z", "2028-02-29T00:00:00Z", "2026-12-31T23:59:59Z", "2026-12-02T08:00:00Z", "2027-03-17T00:00:00Z"} {
		now, err := time.Parse(time.RFC3339, day)
		g.Expect(err).NotTo(HaveOccurred())
		s, err := policies.ParseSchedule(&v1alpha1.ScheduleTrigger{Cron: HistorySchedule(now), TimeZone: "UTC"})
		g.Expect(err).NotTo(HaveOccurred(), day)
		fire, next := s.Due(now, now)
		g.Expect(fire.IsZero()).To(BeTrue(), day)
		g.Expect(next.Sub(now)).To(BeNumerically(">=", 12*24*time.Hour), "%s: %s fires next at %s", day, HistorySchedule(now), next)
	}
}
