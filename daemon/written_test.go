package daemon

import (
	"testing"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/daemon/journal"
	"github.com/kmaint/kmaint/test/gen"
)

// A sync that runs between the daemon's write and the journal follower
// reading it back sees the write. Without that, the daemon asked logind
// for a second reboot in the same boot (seen in the simulated cluster as a
// node rebooting twice for one approval), or journaled a request twice.
func TestWrittenEntriesCountUntilReadBack(t *testing.T) {
	g := NewWithT(t)
	m, err := newMetrics(prometheus.NewRegistry(), "n1", planNow)
	g.Expect(err).NotTo(HaveOccurred())
	a := &agent{journal: journal.NewMemory(func() string { return planBoot }), bootID: planBoot, metrics: m}
	approved := gen.Approved(planBoot)

	// The follower has returned the request; the node is approved.
	a.onEntry(planRequest("a", v1alpha1.SourceHost, planBoot, planAgo(0)))
	entries, _ := a.snapshot()
	first := decide(planFacts(facts{entries: entries}, approved))
	g.Expect(first.reboot).NotTo(BeNil(), "the first sync reboots")

	// It journals that it reboots; the next sync comes before the follower
	// returns that entry.
	g.Expect(a.append(*first.reboot)).To(Succeed())
	entries, _ = a.snapshot()
	g.Expect(entries).To(HaveLen(2))
	g.Expect(entries[1].BootID).To(Equal(planBoot), "stamped as the journal stamps it")
	second := decide(planFacts(facts{entries: entries}, approved))
	g.Expect(second.reboot).To(BeNil(), "no second reboot in the same boot")

	// Read back, the entry counts once.
	read := *first.reboot
	read.BootID = planBoot
	a.onEntry(read)
	entries, _ = a.snapshot()
	g.Expect(entries).To(HaveLen(2))
}
