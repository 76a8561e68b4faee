package cmd_test

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

func getGate(g Gomega) *v1alpha1.MaintenanceGate {
	mg := &v1alpha1.MaintenanceGate{}
	g.Expect(bed.Client.Get(context.Background(), client.ObjectKey{Name: v1alpha1.ClusterGateName}, mg)).To(Succeed())
	return mg
}

func TestPauseAllAndResumeAll(t *testing.T) {
	g := NewWithT(t)
	t.Cleanup(func() {
		_ = bed.Client.DeleteAllOf(context.Background(), &v1alpha1.MaintenanceGate{})
	})

	// Careless uses are refused before anything is written.
	_, err := run(t, "pause", "--all")
	g.Expect(err).To(MatchError(ContainSubstring("--reason is required with --all")))
	_, err = run(t, "pause", "--all", "--reason", "   ")
	g.Expect(err).To(MatchError(ContainSubstring("--reason is required with --all")))
	_, err = run(t, "pause", "--all", "--reason", strings.Repeat("x", 2000))
	g.Expect(err).To(MatchError(ContainSubstring("at most 1024")))
	_, err = run(t, "pause", "--all", "some-pool", "--reason", "x")
	g.Expect(err).To(MatchError(ContainSubstring("give no pool name with it")))
	_, err = run(t, "pause", "some-pool", "--reason", "x")
	g.Expect(err).To(MatchError(ContainSubstring("--reason goes with --all only")))
	out, err := run(t, "resume", "--all")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(ContainSubstring("does not exist: no cluster-wide pause to lift"))

	out, err = run(t, "pause", "--all", "--reason", "incident 4711")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(HavePrefix("maintenancegate/cluster created, paused: incident 4711\n"))
	g.Expect(out).To(ContainSubstring("kubectl kmaint resume --all"))
	g.Expect(getGate(g).Spec).To(Equal(v1alpha1.MaintenanceGateSpec{Paused: true, Reason: "incident 4711"}))
	out, err = run(t, "pause", "--all", "--reason", "incident 4711")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal("maintenancegate/cluster already paused: incident 4711\n"))
	out, err = run(t, "pause", "--all", "--reason", "incident 4712")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(HavePrefix("maintenancegate/cluster paused: incident 4712\n"))

	out, err = run(t, "status")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(HavePrefix("CLUSTER PAUSED (ClusterPaused): every pool is paused by MaintenanceGate cluster: incident 4712"))

	out, err = run(t, "resume", "--all")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(HavePrefix("maintenancegate/cluster resumed"))
	g.Expect(getGate(g).Spec).To(Equal(v1alpha1.MaintenanceGateSpec{Paused: false, Reason: "incident 4712"}), "the last reason stays")
	out, err = run(t, "status")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).NotTo(ContainSubstring("CLUSTER PAUSED"))
	out, err = run(t, "resume", "--all")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal("maintenancegate/cluster already not paused\n"))
}
