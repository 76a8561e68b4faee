package e2e_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/harness"
	"github.com/kmaint/kmaint/test/sim"
)

// TestSentinelOnAWholePoolRollsThroughTheGate is an unattended upgrade on
// every node of a pool at once, as kured users know it: the reboot sentinel
// appears on all four, and kmaint reboots them one at a time (the pool's
// maxUnavailable), each once, with PodDisruptionBudgets held, while the
// operator is restarted; the sentinels are still there after the reboots,
// and each is held as a reboot loop rather than rebooting its node again.
func TestSentinelOnAWholePoolRollsThroughTheGate(t *testing.T) {
	harness.RequireRoot(t)
	logStateOnFailure(t)
	g := NewWithT(t)
	ctx := context.Background()
	const pool = "apt"
	dir := t.TempDir()
	name := func(i int) string { return fmt.Sprintf("%s-%03d", pool, i) }
	files := map[string]string{}
	for i := range 4 {
		files[name(i)] = filepath.Join(dir, name(i), "reboot-required")
		g.Expect(os.MkdirAll(filepath.Dir(files[name(i)]), 0o755)).To(Succeed())
	}
	c, err := sim.Start(ctx, bed, sim.Config{
		Pools:         []sim.PoolSpec{{Name: pool, Nodes: 4, MaxUnavailable: intstr.FromInt32(1)}},
		Journal:       sim.Journald,
		Timing:        sim.Timing{Reboot: time.Second, Jitter: 500 * time.Millisecond, DaemonRebootTimeout: 10 * time.Second},
		PodsPerNode:   2,
		SentinelFiles: files,
	})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(c.Stop)
	harness.WatchBudget(t, bed, pool).FailAbove(1)
	g.Expect(c.StartOperator()).To(Succeed())

	for _, f := range files {
		g.Expect(os.WriteFile(f+".pkgs", []byte("linux-image-6.1.0-18-amd64\n"), 0o644)).To(Succeed())
		g.Expect(os.WriteFile(f, []byte("*** System restart required ***\n"), 0o644)).To(Succeed())
	}
	// The operator is restarted while the rollout goes on.
	g.Eventually(func(g Gomega) int {
		done := 0
		for i := range 4 {
			done += c.Node(name(i)).Reboots()
		}
		return done
	}, timeout).Should(BeNumerically(">=", 1))
	g.Expect(c.StopOperator()).To(Succeed())
	g.Expect(c.StartOperator()).To(Succeed())

	// Every node: one sentinel request, Succeeded, and after it the loop
	// held in its new boot, with no request on the node.
	for i := range 4 {
		n := c.Node(name(i))
		g.Eventually(func(g Gomega) {
			node := getNode(g, name(i))
			var st protocol.DaemonState
			_, err := protocol.Decode(node, protocol.State, &st)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(st.BootID).To(Equal(n.BootID()))
			g.Expect(st.Sentinel).NotTo(BeNil())
			g.Expect(st.Sentinel.State).To(Equal(protocol.SentinelRebootLoop))
			g.Expect(node.Annotations).NotTo(HaveKey(protocol.RebootRequested))
			harness.ExpectSettled(g, bed, name(i), false)
			// The node settles before the maintenance controller,
			// reconciling on that change, writes the record's end.
			var sentinel []v1alpha1.NodeMaintenance
			for _, nm := range harness.MaintenancesOf(g, bed, name(i)) {
				if nm.Spec.Source == v1alpha1.SourceSentinel {
					sentinel = append(sentinel, nm)
				}
			}
			g.Expect(sentinel).To(HaveLen(1))
			g.Expect(sentinel[0].Status.Phase).To(Equal(v1alpha1.PhaseSucceeded))
			g.Expect(sentinel[0].Spec.Reason).To(ContainSubstring("packages linux-image-6.1.0-18-amd64"))
		}, timeout).Should(Succeed(), name(i))
		g.Expect(n.Reboots()).To(Equal(1), name(i))
	}
	g.Expect(harness.GetPool(g, bed, pool).Status.Degraded).To(BeEquivalentTo(0))
}
