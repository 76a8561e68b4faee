package realkmaint

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/cmd/kubectl-kmaint/cmd"
	"github.com/kmaint/kmaint/operator/silences"
	"github.com/kmaint/kmaint/test/amtest"
	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/realcluster"
)

// alerting is the Alertmanager on the host that the operator holds
// silences in, and the webhook it notifies.
type alerting struct {
	am       *amtest.Server
	receiver *amtest.Receiver
}

// rebootAlert is the alert the test fires for a node while kmaint has it
// cordoned, as KubeNodeNotReady would fire.
const rebootAlert = "KmaintRealTestNodeDown"

// aSilencedRebootPagesNoOne reboots two nodes at once, one in a pool with
// silences, one in a pool without, and fires an alert for each node every
// second while kmaint has it cordoned. The unsilenced node's alert reaches
// the webhook; the silenced node's never does (Alertmanager holds it as
// suppressed), and once that node is done its silence is expired and its
// record gone.
func aSilencedRebootPagesNoOne(t *testing.T, c *realcluster.Cluster, kc client.Client, a alerting) {
	g := NewWithT(t)
	ctx := context.Background()
	quiet, loud := c.Nodes()[0], c.Nodes()[2]
	labelNodes(t, kc, "quiet", quiet.Name())
	labelNodes(t, kc, "loud", loud.Name())
	quietPool := gen.Pool("quiet", intstr.FromInt32(1))
	// The silence outlasts the reboot by the settle time: an alert fired
	// just before the node came back has ended by then.
	quietPool.Spec.SettleTime = &metav1.Duration{Duration: 15 * time.Second}
	quietPool.Spec.Silences = &v1alpha1.Silences{Sets: []v1alpha1.SilenceSet{{Name: "node", Matchers: []string{`node="{{ .Node }}"`}}}}
	createPool(t, kc, quietPool)
	createPool(t, kc, gen.Pool("loud", intstr.FromInt32(1)))
	bootsBefore := bootCounts(c)

	firing, stop := fireWhileCordoned(t, kc, a.am, quiet.Name(), loud.Name())
	var requests []*v1alpha1.NodeMaintenance
	for _, n := range []*realcluster.Node{quiet, loud} {
		nm, err := cmd.Request(ctx, kc, &bytes.Buffer{}, cmd.RequestOptions{Node: n.Name(), Reason: "real silence test"})
		g.Expect(err).NotTo(HaveOccurred())
		requests = append(requests, nm)
	}
	// Done: each request Succeeded, and its node settled (the silenced
	// node's settle time over).
	for _, nm := range requests {
		g.Eventually(func(g Gomega) {
			var done v1alpha1.NodeMaintenance
			g.Expect(kc.Get(ctx, client.ObjectKeyFromObject(nm), &done)).To(Succeed())
			g.Expect(done.Status.Phase).NotTo(Equal(v1alpha1.PhaseFailed), "%+v", done.Status.Conditions)
			g.Expect(done.Status.Phase).To(Equal(v1alpha1.PhaseSucceeded))
		}, 3*timeout, time.Second).Should(Succeed())
	}
	for _, n := range []*realcluster.Node{quiet, loud} {
		g.Eventually(func(g Gomega) { settledNode(g, kc, n.Name()) }, timeout, time.Second).Should(Succeed())
	}
	stop()
	expectRebootedOnce(g, c, bootsBefore, quiet, loud)
	g.Expect(firing(quiet.Name())).To(BeNumerically(">", 0), "an alert fired for %s while it was cordoned", quiet.Name())
	g.Expect(firing(loud.Name())).To(BeNumerically(">", 0), "an alert fired for %s while it was cordoned", loud.Name())

	g.Eventually(a.receiver.Notified, timeout, time.Second).Should(ContainElement(HaveKeyWithValue("node", loud.Name())),
		"the node without silences pages")
	g.Consistently(a.receiver.Notified, 10*time.Second, time.Second).ShouldNot(ContainElement(HaveKeyWithValue("node", quiet.Name())),
		"the silenced node pages no one, during its reboot or after")

	api, err := silences.New(a.am.URL(), nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func(g Gomega) {
		g.Expect(readNode(g, kc, quiet.Name()).Silences).To(BeNil(), "the record goes with the silence")
		all, err := api.List(ctx, silences.CreatedBy)
		g.Expect(err).NotTo(HaveOccurred())
		var mine []silences.Silence
		for _, s := range all {
			if len(s.Matchers) == 1 && s.Matchers[0].Value == quiet.Name() {
				mine = append(mine, s)
			}
		}
		g.Expect(mine).To(HaveLen(1), "one silence for the one reboot")
		g.Expect(mine[0].Expired()).To(BeTrue(), "expired once the node is done")
	}, timeout, time.Second).Should(Succeed())
}

// fireWhileCordoned fires rebootAlert for each node every second while
// kmaint has it cordoned, each alert ending four seconds on; firing counts
// what was fired for a node, stop ends it.
func fireWhileCordoned(t *testing.T, kc client.Client, am *amtest.Server, nodes ...string) (firing func(string) int, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	fired := map[string]int{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			for _, name := range nodes {
				var node corev1.Node
				if err := kc.Get(ctx, client.ObjectKey{Name: name}, &node); err != nil {
					continue
				}
				if st, _ := protocol.Read(&node); !st.Cordoned {
					continue
				}
				if err := am.Fire(ctx, map[string]string{"alertname": rebootAlert, "node": name}, time.Now().Add(4*time.Second)); err != nil {
					if ctx.Err() == nil {
						t.Logf("fire %s for %s: %v", rebootAlert, name, err)
					}
					continue
				}
				mu.Lock()
				fired[name]++
				mu.Unlock()
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	stop = func() { cancel(); <-done }
	t.Cleanup(stop)
	return func(name string) int {
		mu.Lock()
		defer mu.Unlock()
		return fired[name]
	}, stop
}
