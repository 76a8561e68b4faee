package daemon_test

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/daemon"
	"github.com/kmaint/kmaint/test/harness"
)

// On a node that is itself a container, the daemon's /proc boot ID is the
// host kernel's; told the node's with --boot-id-file, it recognises the
// requests journald stamps with the node's boot, reboots for one once, and
// takes the next boot's ID from the same file.
func TestBootIDFileOnAContainerNode(t *testing.T) {
	g := NewWithT(t)
	n := startNode(t, "container-node", harness.NodeOptions{ContainerNode: true})
	host, err := daemon.ReadBootID(daemon.DefaultBootIDPath)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(n.BootID()).NotTo(Equal(host), "the node must have a boot ID other than the host kernel's")

	requestReboot(t, n, "kernel 6.12 installed")
	g.Eventually(func(g Gomega) {
		r := requested(g, "container-node")
		g.Expect(r.BootID).To(Equal(n.BootID()))
		g.Expect(r.Requests).To(ConsistOf(HaveField("Reason", "kernel 6.12 installed")))
	}, timeout).Should(Succeed())

	first := n.BootID()
	approve(g, "container-node", first)
	g.Eventually(n.Reboots, timeout).Should(Equal(1))
	g.Eventually(func(g Gomega) {
		node := getNode(g, "container-node")
		g.Expect(node.Annotations).NotTo(HaveKey(protocol.RebootRequested))
		st := state(g, "container-node")
		g.Expect(st.BootID).To(Equal(n.BootID()))
		g.Expect(st.Phase).To(Equal(protocol.DaemonIdle))
	}, timeout).Should(Succeed())
	g.Expect(n.BootID()).NotTo(Equal(first))
	log, err := os.ReadFile(harness.NodeLog(n.Dir()))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(log)).NotTo(ContainSubstring("holds no entry of the daemon's boot ID"))
}

// Without --boot-id-file on such a node, the daemon reads the host kernel's
// boot ID, which the node's journal has never seen, and says so.
func TestWrongBootIDIsReported(t *testing.T) {
	g := NewWithT(t)
	n := harness.StartNode(t, bed, "container-node-no-flag", harness.NodeOptions{ContainerNode: true, WithoutBootIDFile: true})
	g.Eventually(func() (string, error) {
		b, err := os.ReadFile(harness.NodeLog(n.Dir()))
		return string(b), err
	}, timeout).Should(ContainSubstring("holds no entry of the daemon's boot ID"))
}

func TestReadBootID(t *testing.T) {
	dir := t.TempDir()
	for name, c := range map[string]struct {
		// content is the file's; nil means no file.
		content []byte
		// want is the boot ID read; empty when an error is wanted.
		want string
		// wantErr is a substring of the error.
		wantErr string
	}{
		"the kernel's form":     {content: []byte("6b0c1d0a-4f3e-4c1e-9a53-0e8f2b7d9c11\n"), want: "6b0c1d0a-4f3e-4c1e-9a53-0e8f2b7d9c11"},
		"the journal's form":    {content: []byte("6B0C1D0A4F3E4C1E9A530E8F2B7D9C11"), want: "6b0c1d0a-4f3e-4c1e-9a53-0e8f2b7d9c11"},
		"no file":               {wantErr: "no such file"},
		"an empty file":         {content: []byte("\n"), wantErr: "is empty"},
		"a host name":           {content: []byte("node-1\n"), wantErr: `holds "node-1", not a boot ID`},
		"32 characters not hex": {content: []byte("zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz"), wantErr: "not a boot ID"},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			path := filepath.Join(dir, name)
			if c.content != nil {
				g.Expect(os.WriteFile(path, c.content, 0o644)).To(Succeed())
			}
			got, err := daemon.ReadBootID(path)
			if c.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(c.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(c.want))
		})
	}
}
