package cmd_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/cmd/kubectl-kmaint/cmd"
	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/harness"
)

func TestRequestCreatesANodeMaintenance(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	node := harness.CreateNodes(t, bed, "rq", "rq", 1)[0]

	out, err := run(t, "request", node, "--reason", "kernel 6.12.9", "--ignore-windows")
	g.Expect(err).NotTo(HaveOccurred())
	var list v1alpha1.NodeMaintenanceList
	g.Expect(bed.Client.List(ctx, &list, client.MatchingFields{"spec.nodeName": node})).To(Succeed())
	g.Expect(list.Items).To(HaveLen(1))
	nm := list.Items[0]
	g.Expect(nm.Name).To(HavePrefix(node + "-"))
	g.Expect(nm.GenerateName).To(Equal(node + "-"))
	g.Expect(nm.Spec).To(Equal(v1alpha1.NodeMaintenanceSpec{
		NodeName: node, Type: v1alpha1.RebootMaintenance, Reason: "kernel 6.12.9",
		Source: v1alpha1.SourceAPI, IgnoreWindows: true,
	}))
	g.Expect(out).To(ContainSubstring("nodemaintenance/" + nm.Name + " created"))
	g.Expect(out).To(ContainSubstring("kubectl get nodemaintenance " + nm.Name + " -w"))

	// A second request while the first is open would be refused as a
	// duplicate by the operator: the plugin says so instead of creating it.
	_, err = run(t, "request", node, "--reason", "again")
	g.Expect(err).To(MatchError(ContainSubstring("already has an open request, NodeMaintenance " + nm.Name)))
	_, err = run(t, "request", "no-such-node", "--reason", "x")
	g.Expect(err).To(MatchError(`node "no-such-node" not found (kubectl get nodes)`))
	_, err = run(t, "request", node)
	g.Expect(err).To(MatchError(ContainSubstring(`required flag(s) "reason" not set`)))
}

func TestRolloutChangesDesiredConfig(t *testing.T) {
	g := NewWithT(t)
	harness.CreateTemporary(t, bed, gen.Pool("ro", intstr.FromInt32(2)))

	out, err := run(t, "rollout", "ro", "--config", "ubuntu-24.04.2")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(harness.GetPool(g, bed, "ro").Spec.DesiredConfig).To(Equal("ubuntu-24.04.2"))
	g.Expect(out).To(ContainSubstring("maintenancepool/ro desiredConfig: - -> ubuntu-24.04.2"))
	g.Expect(out).To(ContainSubstring("at most 2 unavailable at a time"))

	out, err = run(t, "rollout", "ro", "--config", "ubuntu-24.04.2")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(ContainSubstring("already wants config ubuntu-24.04.2: nothing to do"))

	// Without --config, a restart identity of the moment.
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	var buf bytes.Buffer
	g.Expect(cmd.Rollout(context.Background(), bed.Client, &buf, cmd.RolloutOptions{Pool: "ro", Now: now})).To(Succeed())
	g.Expect(harness.GetPool(g, bed, "ro").Spec.DesiredConfig).To(Equal("restart-20260304-050607"))
	g.Expect(buf.String()).To(ContainSubstring("ubuntu-24.04.2 -> restart-20260304-050607"))
	_, err = run(t, "rollout", "ro")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(harness.GetPool(g, bed, "ro").Spec.DesiredConfig).To(MatchRegexp(`^restart-\d{8}-\d{6}$`))

	_, err = run(t, "rollout", "ro", "--config", "-bad")
	g.Expect(err).To(MatchError(ContainSubstring(`config "-bad" is not a valid desiredConfig`)))
	_, err = run(t, "rollout", "no-such-pool")
	g.Expect(err).To(MatchError(MatchRegexp(`^no MaintenancePool named "no-such-pool"; pools: .*\bro\b`)))
}

func TestPauseAndResume(t *testing.T) {
	g := NewWithT(t)
	harness.CreateTemporary(t, bed, gen.Pool("pz", intstr.FromInt32(1)))

	out, err := run(t, "pause", "pz")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal("maintenancepool/pz paused: no more nodes are admitted; nodes already admitted finish\n"))
	g.Expect(harness.GetPool(g, bed, "pz").Spec.Paused).To(BeTrue())
	out, err = run(t, "pause", "pz")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal("maintenancepool/pz already paused\n"))
	g.Expect(harness.GetPool(g, bed, "pz").Spec.Paused).To(BeTrue())

	out, err = run(t, "resume", "pz")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(HavePrefix("maintenancepool/pz resumed"))
	g.Expect(harness.GetPool(g, bed, "pz").Spec.Paused).To(BeFalse())
	out, err = run(t, "resume", "pz")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal("maintenancepool/pz is neither paused nor halted: nothing to resume\n"))

	_, err = run(t, "pause", "nope")
	g.Expect(err).To(MatchError(HavePrefix(`no MaintenancePool named "nope"`)))
}

func TestStatusOfUnknownPool(t *testing.T) {
	_, err := run(t, "status", "--pool", "nope")
	NewWithT(t).Expect(err).To(MatchError(HavePrefix(`no MaintenancePool named "nope"`)))
	_, err = run(t, "status", "-o", "xml")
	NewWithT(t).Expect(err).To(MatchError(`unknown output format "xml": use wide, json or yaml`))
}

func TestHistoryOfNodeWithout(t *testing.T) {
	g := NewWithT(t)
	node := harness.CreateNodes(t, bed, "hi", "hi", 1)[0]
	out, err := run(t, "history", node)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal("Node hi-0 has no NodeMaintenances: it has not been asked to reboot.\n"))
	_, err = run(t, "history", "gone")
	g.Expect(err).To(MatchError(`node "gone" not found, and no NodeMaintenances name it`))
}

func TestReportWritesHTML(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	node := harness.CreateNodes(t, bed, "rep", "rep", 1)[0]
	harness.CreateTemporary(t, bed, gen.Pool("rep", intstr.FromInt32(1)))
	nm, err := cmd.Request(ctx, bed.Client, &bytes.Buffer{}, cmd.RequestOptions{Node: node, Reason: "report me"})
	g.Expect(err).NotTo(HaveOccurred())

	file := filepath.Join(t.TempDir(), "out.html")
	out, err := run(t, "report", "-f", file)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(HavePrefix("Wrote " + file + ": "))
	page, err := os.ReadFile(file)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(page)).To(HavePrefix("<!DOCTYPE html>"))
	g.Expect(string(page)).To(ContainSubstring(">" + node + "<"))
	g.Expect(string(page)).To(ContainSubstring(nm.Name))
}

func TestCompletion(t *testing.T) {
	g := NewWithT(t)
	for _, shell := range []string{"bash", "zsh", "fish"} {
		out, err := run(t, "completion", shell)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(out).To(ContainSubstring("kubectl-kmaint"), shell)
	}
	harness.CreateNodes(t, bed, "cpl", "cpl", 2)
	harness.CreateTemporary(t, bed, gen.Pool("cpl-pool", intstr.FromInt32(1)))

	out, err := run(t, "__complete", "request", "cpl-")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(strings.Split(out, "\n")).To(HaveExactElements("cpl-0", "cpl-1", ":4", ""))
	out, err = run(t, "__complete", "rollout", "cpl")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(strings.Split(out, "\n")).To(HaveExactElements("cpl-pool", ":4", ""))
	out, err = run(t, "__complete", "status", "--pool", "cpl")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(HavePrefix("cpl-pool\n"))
	out, err = run(t, "__complete", "status", "-o", "")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(HavePrefix("wide\njson\nyaml\n"))
}

func TestVersion(t *testing.T) {
	out, err := run(t, "version")
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	NewWithT(t).Expect(out).To(MatchRegexp(`^kubectl-kmaint: kmaint dev \(\S+, go[0-9.]+\)\n$`))
}

// A cluster without kmaint's API: the client's scheme puts kmaint's kinds
// in a group the bed's API server does not serve, so discovery finds no
// such group, as it would in a cluster without the CRDs.
func TestNotInstalled(t *testing.T) {
	g := NewWithT(t)
	s := runtime.NewScheme()
	gv := schema.GroupVersion{Group: "absent.kmaint.io", Version: "v1alpha1"}
	s.AddKnownTypes(gv, &v1alpha1.MaintenancePool{}, &v1alpha1.MaintenancePoolList{},
		&v1alpha1.NodeMaintenance{}, &v1alpha1.NodeMaintenanceList{})
	c, err := client.New(bed.Config, client.Options{Scheme: s})
	g.Expect(err).NotTo(HaveOccurred())

	err = cmd.Explain(cmd.SetPaused(context.Background(), c, &bytes.Buffer{}, "any", true))
	g.Expect(errors.Is(err, cmd.ErrNotInstalled)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(HavePrefix("kmaint is not installed in this cluster (no kmaint.io API): "))
}
