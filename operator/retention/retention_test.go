package retention_test

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator"
	"github.com/kmaint/kmaint/test/harness"
)

const timeout = 90 * time.Second

// request creates a NodeMaintenance of node, of policy (empty for none).
func request(t *testing.T, name, node, policy string) {
	t.Helper()
	nm := &v1alpha1.NodeMaintenance{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       v1alpha1.NodeMaintenanceSpec{NodeName: node, Reason: "retention test", Policy: policy},
	}
	if policy != "" {
		nm.Labels = map[string]string{v1alpha1.PolicyLabel: policy}
	}
	harness.Create(t, bed, nm)
}

// finish ends a NodeMaintenance in phase at at, as the operator would.
func finish(g Gomega, name string, phase v1alpha1.Phase, at time.Time) {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		nm := &v1alpha1.NodeMaintenance{}
		if err := bed.Client.Get(context.Background(), types.NamespacedName{Name: name}, nm); err != nil {
			return err
		}
		nm.Status.Phase = phase
		nm.Status.PhaseTimes.Set(phase, metav1.NewTime(at))
		return bed.Client.Status().Update(context.Background(), nm)
	})
	g.Expect(err).NotTo(HaveOccurred(), "finish %s", name)
}

// names lists the names of a node's NodeMaintenances.
func names(g Gomega, node string) []string {
	var out []string
	for _, nm := range harness.MaintenancesOf(g, bed, node) {
		out = append(out, nm.Name)
	}
	return out
}

// metric reads a counter or gauge from the operator's metrics endpoint.
func metric(g Gomega, addr, series string) float64 {
	resp, err := http.Get("http://" + addr + "/metrics")
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	g.Expect(err).NotTo(HaveOccurred())
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindSubmatch(body)
	g.Expect(m).NotTo(BeNil(), "%s in the metrics", series)
	v, err := strconv.ParseFloat(string(m[1]), 64)
	g.Expect(err).NotTo(HaveOccurred())
	return v
}

// TestHistoryIsKeptPerNode: with three finished NodeMaintenances kept per
// node, a restarted operator prunes each node's history to its newest three
// and what is still read (the node's last reboot, which cooldowns count
// from; a policy's last request), prunes again as more finish, never prunes
// an open one, and counts what it pruned.
func TestHistoryIsKeptPerNode(t *testing.T) {
	g := NewWithT(t)
	nodes := harness.CreateNodes(t, bed, "kept", "kept", 2)
	node, other := nodes[0], nodes[1]
	now := time.Now()
	// Oldest first: names sort as they were made, for records made in the
	// same second.
	history := []struct {
		name, policy string
		phase        v1alpha1.Phase
	}{
		{"kept-a-rebooted", "", v1alpha1.PhaseSucceeded},
		{"kept-b-policy", "kept-policy", v1alpha1.PhaseFailed},
		{"kept-h1", "", v1alpha1.PhaseFailed},
		{"kept-h2", "", v1alpha1.PhaseFailed},
		{"kept-h3", "", v1alpha1.PhaseFailed},
		{"kept-h4", "", v1alpha1.PhaseFailed},
		{"kept-h5", "", v1alpha1.PhaseFailed},
	}
	for _, h := range history {
		request(t, h.name, node, h.policy)
		finish(g, h.name, h.phase, now)
	}
	for _, name := range []string{"kept-other-1", "kept-other-2"} {
		request(t, name, other, "")
		finish(g, name, v1alpha1.PhaseFailed, now)
	}
	addr := harness.FreeAddr(t)
	harness.StartOperatorWith(t, bed, operator.Options{MetricsAddr: addr, HistoryPerNode: 3})

	g.Eventually(func(g Gomega) {
		g.Expect(names(g, node)).To(ConsistOf("kept-a-rebooted", "kept-b-policy", "kept-h3", "kept-h4", "kept-h5"))
		g.Expect(metric(g, addr, "kmaint_maintenances_pruned_total")).To(BeEquivalentTo(2))
		g.Expect(metric(g, addr, `kmaint_maintenances{state="finished"}`)).To(BeEquivalentTo(7))
	}, timeout).Should(Succeed())
	g.Expect(names(g, other)).To(ConsistOf("kept-other-1", "kept-other-2"), "another node's history is its own")

	// Each finished one pushes the oldest out; an open request is never
	// pruned. (Made after the others finish: made while another is open,
	// it would fail as a duplicate.)
	for _, name := range []string{"kept-h6", "kept-h7"} {
		request(t, name, node, "")
		finish(g, name, v1alpha1.PhaseFailed, time.Now())
	}
	// The last finish alone wakes retention: nothing else happens on the
	// node.
	g.Eventually(func(g Gomega) {
		g.Expect(names(g, node)).To(ConsistOf("kept-a-rebooted", "kept-b-policy", "kept-h5", "kept-h6", "kept-h7"))
		g.Expect(metric(g, addr, "kmaint_maintenances_pruned_total")).To(BeEquivalentTo(4))
	}, timeout).Should(Succeed())
	request(t, "kept-z-open", node, "")
	g.Eventually(func(g Gomega) {
		g.Expect(names(g, node)).To(ConsistOf("kept-a-rebooted", "kept-b-policy", "kept-h5", "kept-h6", "kept-h7", "kept-z-open"))
		g.Expect(metric(g, addr, "kmaint_maintenances_pruned_total")).To(BeEquivalentTo(4))
	}, timeout).Should(Succeed())
}

// TestHistoryAgesOut: with an age limit, finished NodeMaintenances older
// than it go, but for the node's last reboot; a younger one goes when it
// reaches the limit: the operator looks again then, with nothing else to
// wake it.
func TestHistoryAgesOut(t *testing.T) {
	g := NewWithT(t)
	node := harness.CreateNodes(t, bed, "aged", "aged", 1)[0]
	const maxAge = 30 * 24 * time.Hour
	now := time.Now()
	for _, h := range []struct {
		name  string
		phase v1alpha1.Phase
		ago   time.Duration
	}{
		{"aged-rebooted", v1alpha1.PhaseSucceeded, maxAge + 10*24*time.Hour},
		{"aged-old", v1alpha1.PhaseFailed, maxAge + 24*time.Hour},
		{"aged-soon", v1alpha1.PhaseFailed, maxAge - 30*time.Second},
		{"aged-young", v1alpha1.PhaseFailed, time.Hour},
	} {
		request(t, h.name, node, "")
		finish(g, h.name, h.phase, now.Add(-h.ago))
	}
	harness.StartOperatorWith(t, bed, operator.Options{HistoryMaxAge: maxAge})
	g.Eventually(func(g Gomega) {
		g.Expect(names(g, node)).To(ContainElements("aged-rebooted", "aged-young"))
		g.Expect(names(g, node)).NotTo(ContainElement("aged-old"))
	}, timeout).Should(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(names(g, node)).To(ConsistOf("aged-rebooted", "aged-young"))
	}, timeout).Should(Succeed())
}
