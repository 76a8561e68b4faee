package realkmaint

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/daemon/journal"
	"github.com/kmaint/kmaint/test/realcluster"
)

// forgedRequestID is the id of a request journaled by an ordinary user in
// kmaint's own format: everything right but the writer.
const forgedRequestID = "0f0f0f0f-forged-by-kmaint-user"

// requestFromTheHost asks for a reboot on a node as a person logged in on
// it would: `kmaint-daemon request-reboot` as root, through systemd-run, with
// the command the chart put on the host. Before it, the same command as an
// ordinary user is refused, and that user forges an entry in kmaint's
// format with logger(1), which the daemon reads and ignores. The node
// reboots once, through the gate, and the reboot ends in a NodeMaintenance
// that says so. After it, the node's persistent journal still holds the
// earlier boot's request, and the daemon of the new boot, having read it
// back, does not ask again.
func requestFromTheHost(t *testing.T, c *realcluster.Cluster, kc client.Client) {
	g := NewWithT(t)
	ctx := context.Background()
	target := c.Nodes()[0]
	bootsBefore := bootCounts(c)
	before, err := target.BootID(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	cs, err := kubernetes.NewForConfig(c.RestConfig())
	g.Expect(err).NotTo(HaveOccurred())

	// An ordinary user is told no, and nothing is written.
	out, err := target.Exec(ctx, "systemd-run", "--uid=kmaint-user", "--wait", "--pipe", "--quiet", "--collect",
		HostCommand, "request-reboot", "asked by an ordinary user")
	g.Expect(err).To(HaveOccurred(), "request-reboot as kmaint-user: %s", out)
	g.Expect(string(out)).To(ContainSubstring("request-reboot must run as root"))

	// The same user journals kmaint's fields directly: journald stamps the
	// entry with the user's uid, which no writer can set.
	forged := strings.Join([]string{
		"MESSAGE=kmaint: reboot requested: forged",
		"MESSAGE_ID=" + journal.RequestMessageID,
		"KMAINT_REQUEST_ID=" + forgedRequestID,
		"KMAINT_SOURCE=" + string(v1alpha1.SourceHost),
		"KMAINT_REASON=forged by an ordinary user",
		fmt.Sprintf("KMAINT_TIME=%d", time.Now().UnixMicro()),
	}, "\n") + "\n"
	out, err = target.ExecWith(ctx, realcluster.ExecOptions{User: "kmaint-user", Stdin: strings.NewReader(forged)}, "logger", "--journald")
	g.Expect(err).NotTo(HaveOccurred(), "logger --journald as kmaint-user: %s", out)
	// logger returns once journald has the entry on its socket, not once
	// it is in the journal's files.
	g.Eventually(func(g Gomega) {
		out, err := target.Exec(ctx, "journalctl", "--boot", "--output=json", "KMAINT_REQUEST_ID="+forgedRequestID)
		g.Expect(err).NotTo(HaveOccurred(), "%s", out)
		g.Expect(journalFields(g, out)).To(ContainElement(HaveKeyWithValue("_UID", "1000")), "the forged entry is in the journal, written by uid 1000")
	}, timeout, time.Second).Should(Succeed())

	out, err = target.Exec(ctx, "systemd-run", "--wait", "--pipe", "--quiet", "--collect",
		HostCommand, "request-reboot", "kernel update installed on the host")
	g.Expect(err).NotTo(HaveOccurred(), "request-reboot as root: %s", out)
	m := regexp.MustCompile(`request ([0-9a-f-]{36})`).FindStringSubmatch(string(out))
	g.Expect(m).NotTo(BeNil(), "request-reboot printed no request id: %s", out)
	id := m[1]
	began := time.Now()

	// The daemon reads the journal in order: once it raised root's request,
	// it has read the forged one before it, and ignored it.
	g.Eventually(func(g Gomega) {
		var node corev1.Node
		g.Expect(kc.Get(ctx, client.ObjectKey{Name: target.Name()}, &node)).To(Succeed())
		g.Expect(node.Annotations[protocol.RebootRequested]).To(ContainSubstring(id), "root's request raised")
		g.Expect(node.Annotations[protocol.RebootRequested]).NotTo(ContainSubstring(forgedRequestID), "the forged request raised")
	}, timeout, time.Second).Should(Succeed())
	// journald takes _COMM from /proc when it receives the entry, so a
	// writer that has exited by then has none: the uid says who it was.
	g.Expect(daemonLog(g, cs, target.Name())).To(MatchRegexp(`Ignoring a journal entry.*not root.*"uid":"1000"`),
		"the daemon says why it ignored the forged entry")

	var done v1alpha1.NodeMaintenance
	g.Eventually(func(g Gomega) {
		var nms v1alpha1.NodeMaintenanceList
		g.Expect(kc.List(ctx, &nms, client.MatchingLabels{v1alpha1.RequestIDLabel: id})).To(Succeed())
		g.Expect(nms.Items).To(HaveLen(1), "one NodeMaintenance records request %s", id)
		done = nms.Items[0]
		g.Expect(done.Status.Phase).NotTo(Equal(v1alpha1.PhaseFailed), "%+v", done.Status.Conditions)
		g.Expect(done.Status.Phase).To(Equal(v1alpha1.PhaseSucceeded))
	}, 2*timeout, time.Second).Should(Succeed())
	t.Logf("%s rebooted for root's request on the host in %s", target.Name(), time.Since(began).Round(time.Second))
	g.Expect(done.Spec.NodeName).To(Equal(target.Name()))
	g.Expect(done.Spec.Source).To(Equal(v1alpha1.SourceHost))
	after, err := target.BootID(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(after).NotTo(Equal(before))
	g.Expect(done.Status.BootIDBefore).To(Equal(before))
	g.Expect(done.Status.BootIDAfter).To(Equal(after))

	// The earlier boot's entries are on disk, and the daemon of the new boot
	// read them (it reports no state before it has read the journal up to
	// now) and raised nothing: the request belonged to the boot it ended.
	out, err = target.Exec(ctx, "journalctl", "--boot=-1", "--output=json", "MESSAGE_ID="+journal.RequestMessageID)
	g.Expect(err).NotTo(HaveOccurred(), "%s", out)
	g.Expect(journalFields(g, out)).To(ContainElement(And(
		HaveKeyWithValue("KMAINT_REQUEST_ID", id), HaveKeyWithValue("_BOOT_ID", strings.ReplaceAll(before, "-", "")), HaveKeyWithValue("_UID", "0"))),
		"the persistent journal keeps root's request in the boot before")
	g.Eventually(func(g Gomega) {
		var node corev1.Node
		g.Expect(kc.Get(ctx, client.ObjectKey{Name: target.Name()}, &node)).To(Succeed())
		var state protocol.DaemonState
		found, err := protocol.Decode(&node, protocol.State, &state)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(found).To(BeTrue())
		g.Expect(state.BootID).To(Equal(after), "the daemon of the new boot reports")
		g.Expect(state.VolatileJournal).To(BeFalse(), "the daemon found the earlier boots in the journal")
		g.Expect(node.Spec.Unschedulable).To(BeFalse(), "uncordoned")
		expectNoProtocolAnnotation(g, &node)
	}, timeout, time.Second).Should(Succeed())
	expectRebootedOnce(g, c, bootsBefore, target)
}

// journalFields decodes journalctl --output=json: one object per line.
// Fields journald could not show as text are arrays; kmaint's are text.
func journalFields(g Gomega, out []byte) []map[string]string {
	var entries []map[string]string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if line == "" {
			continue
		}
		var raw map[string]any
		g.Expect(json.Unmarshal([]byte(line), &raw)).To(Succeed(), "journalctl line %q", line)
		e := map[string]string{}
		for k, v := range raw {
			if s, ok := v.(string); ok {
				e[k] = s
			}
		}
		entries = append(entries, e)
	}
	return entries
}

// daemonLog is the log of the daemon on node, as `kubectl logs` shows it.
func daemonLog(g Gomega, cs kubernetes.Interface, node string) string {
	ctx := context.Background()
	pods, err := cs.CoreV1().Pods(Namespace).List(ctx, metav1.ListOptions{
		LabelSelector: "app.kubernetes.io/name=kmaint-daemon",
		FieldSelector: "spec.nodeName=" + node,
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pods.Items).To(HaveLen(1), "daemon pods on %s", node)
	r, err := cs.CoreV1().Pods(Namespace).GetLogs(pods.Items[0].Name, &corev1.PodLogOptions{Container: "daemon"}).Stream(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	defer r.Close()
	b, err := io.ReadAll(r)
	g.Expect(err).NotTo(HaveOccurred())
	return string(b)
}
