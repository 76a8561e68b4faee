package sim

import (
	"context"
	"encoding/json"
	"io"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	kubedrain "k8s.io/kubectl/pkg/drain"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// served is the size of an object's JSON as `kubectl get -o json` shows it:
// without managedFields, which kubectl hides.
func served(t *testing.T, obj client.Object) int {
	t.Helper()
	obj = obj.DeepCopyObject().(client.Object)
	obj.SetManagedFields(nil)
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return len(data)
}

func startRealistic(t *testing.T, pool string, nodes int) *Cluster {
	t.Helper()
	c, err := Start(context.Background(), bed, Config{
		Pools:            []PoolSpec{{Name: pool, Nodes: nodes, MaxUnavailable: intstr.FromInt(1)}},
		Timing:           Timing{Reboot: 200 * time.Millisecond},
		Realistic:        true,
		PodsPerNode:      14,
		AgentPodsPerNode: 6,
		Log:              logr.Discard(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	return c
}

// TestRealisticNodeSurvivesReboot: a realistic Node is the size of a real
// cloud node's, and a simulated reboot changes its boot ID and Ready
// condition and nothing else a kubelet would keep.
func TestRealisticNodeSurvivesReboot(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	c := startRealistic(t, "shape", 1)
	n := c.Nodes()[0]

	before := &corev1.Node{}
	g.Expect(bed.Client.Get(ctx, client.ObjectKey{Name: n.Name()}, before)).To(Succeed())
	size := served(t, before)
	t.Logf("node %s: %d bytes of JSON, %d images, %d labels, %d annotations", n.Name(), size, len(before.Status.Images), len(before.Labels), len(before.Annotations))
	g.Expect(size).To(BeNumerically(">=", 12_000))
	g.Expect(size).To(BeNumerically("<=", 16_000))
	g.Expect(before.Status.Images).To(HaveLen(50))
	g.Expect(before.Status.Addresses).To(HaveLen(5))
	g.Expect(before.Status.Conditions).To(HaveLen(5))
	g.Expect(before.Status.NodeInfo.BootID).To(Equal(n.BootID()))

	oldBoot := n.BootID()
	g.Expect(n.ForceReboot(ctx)).To(Succeed())
	g.Expect(n.BootID()).NotTo(Equal(oldBoot))
	after := &corev1.Node{}
	g.Eventually(func(g Gomega) {
		g.Expect(bed.Client.Get(ctx, client.ObjectKey{Name: n.Name()}, after)).To(Succeed())
		g.Expect(after.Status.NodeInfo.BootID).To(Equal(n.BootID()))
		g.Expect(after.Status.Conditions).To(ContainElement(HaveField("Type", corev1.NodeReady)))
		for _, cond := range after.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				g.Expect(cond.Status).To(Equal(corev1.ConditionTrue))
			}
		}
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	g.Expect(after.Status.Images).To(Equal(before.Status.Images))
	for k, v := range before.Labels {
		g.Expect(after.Labels).To(HaveKeyWithValue(k, v))
	}
	g.Expect(after.Status.Addresses).To(Equal(before.Status.Addresses))
	g.Expect(after.Status.Capacity).To(Equal(before.Status.Capacity))
	g.Expect(after.Spec.ProviderID).To(Equal(before.Spec.ProviderID))
}

// TestRealisticPodsDrainAsOnACloudNode: a realistic node runs its DaemonSets'
// pods and its share of the workload, each pod the size of a real one, and
// kubectl's drain, as the operator runs it, evicts the workload and leaves
// the DaemonSets' pods, whose DaemonSets it finds.
func TestRealisticPodsDrainAsOnACloudNode(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	c := startRealistic(t, "podshape", 1)
	node := c.Nodes()[0].Name()

	var pods corev1.PodList
	g.Expect(bed.Client.List(ctx, &pods, client.MatchingFields{"spec.nodeName": node})).To(Succeed())
	agents, workload := 0, 0
	for i := range pods.Items {
		p := &pods.Items[i]
		g.Expect(p.Status.Phase).To(Equal(corev1.PodRunning))
		size := served(t, p)
		if ref := p.OwnerReferences[0]; ref.Kind == "DaemonSet" {
			agents++
			t.Logf("agent pod %s/%s: %d bytes", p.Namespace, p.Name, size)
			continue
		}
		workload++
		if workload == 1 {
			t.Logf("workload pod %s/%s: %d bytes", p.Namespace, p.Name, size)
		}
		g.Expect(size).To(BeNumerically(">=", 3_000), p.Name)
		g.Expect(size).To(BeNumerically("<=", 5_000), p.Name)
	}
	g.Expect(agents).To(Equal(6))
	g.Expect(workload).To(Equal(14))

	helper := &kubedrain.Helper{Ctx: ctx, Client: kubernetes.NewForConfigOrDie(bed.Config), GracePeriodSeconds: -1,
		IgnoreAllDaemonSets: true, Out: io.Discard, ErrOut: io.Discard}
	list, errs := helper.GetPodsForDeletion(node)
	g.Expect(errs).To(BeEmpty())
	g.Expect(list.Pods()).To(HaveLen(14))
	for _, p := range list.Pods() {
		g.Expect(p.Namespace).To(Equal(realisticNamespace))
	}
	g.Expect(list.Warnings()).To(ContainSubstring("DaemonSet-managed"))
}

// TestStatusRefreshWritesHeartbeats: with StatusRefresh, a node's condition
// heartbeats move on while nothing else happens, as a kubelet's report does.
func TestStatusRefreshWritesHeartbeats(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	c, err := Start(ctx, bed, Config{
		Pools:         []PoolSpec{{Name: "refresh", Nodes: 2, MaxUnavailable: intstr.FromInt(1)}},
		Realistic:     true,
		StatusRefresh: time.Second,
		Log:           logr.Discard(),
	})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(c.Stop)
	name := c.Nodes()[1].Name()
	first := &corev1.Node{}
	g.Expect(bed.Client.Get(ctx, client.ObjectKey{Name: name}, first)).To(Succeed())
	beat := first.Status.Conditions[0].LastHeartbeatTime
	g.Eventually(func(g Gomega) {
		n := &corev1.Node{}
		g.Expect(bed.Client.Get(ctx, client.ObjectKey{Name: name}, n)).To(Succeed())
		g.Expect(n.Status.Conditions[0].LastHeartbeatTime.After(beat.Time)).To(BeTrue())
	}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
}
