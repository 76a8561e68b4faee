package cmd_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/harness"
)

// --ignore-freezes sets spec.ignoreFreezes alone: it does not ignore
// windows, and --ignore-windows does not ignore freezes.
func TestRequestIgnoreFreezes(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	nodes := harness.CreateNodes(t, bed, "rqf", "rqf", 2)
	specOf := func(node string) v1alpha1.NodeMaintenanceSpec {
		var list v1alpha1.NodeMaintenanceList
		g.Expect(bed.Client.List(ctx, &list, client.MatchingFields{"spec.nodeName": node})).To(Succeed())
		g.Expect(list.Items).To(HaveLen(1))
		return list.Items[0].Spec
	}

	_, err := run(t, "request", nodes[0], "--reason", "CVE-2026-1234", "--ignore-freezes")
	g.Expect(err).NotTo(HaveOccurred())
	s := specOf(nodes[0])
	g.Expect(s.IgnoreFreezes).To(BeTrue())
	g.Expect(s.IgnoreWindows).To(BeFalse())

	_, err = run(t, "request", nodes[1], "--reason", "firmware", "--ignore-windows")
	g.Expect(err).NotTo(HaveOccurred())
	s = specOf(nodes[1])
	g.Expect(s.IgnoreFreezes).To(BeFalse())
	g.Expect(s.IgnoreWindows).To(BeTrue())

	out, err := run(t, "request", "--help")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(ContainSubstring("--ignore-freezes"))
	g.Expect(out).To(ContainSubstring("--ignore-windows does not pass a freeze period"))
}
