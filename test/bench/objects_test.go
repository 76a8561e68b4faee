package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/sim"
)

// The bench's cluster is shaped like a real one, so that the operator's
// memory, its watches and the drains cost what they would:
//   - nodes as an EKS m5.2xlarge worker's (sim.Config.Realistic: 50 images,
//     about 14 KB of JSON each);
//   - 20 pods per node: 6 DaemonSet pods (kube-proxy, CNI, CSI node
//     plugin, node-exporter, log shipper, kmaint's daemon), which drains
//     leave, and 14 workload pods, which they evict. A node may hold 110
//     pods by the kubelet's default (--max-pods) and 58 with the VPC CNI on
//     an m5.2xlarge (29 on an m5.large); clusters of many small services
//     run tens per node, and 20 keeps 5000 nodes' 100,000 pods within
//     what one envtest API server holds;
//   - a year of monthly reboots per node, 12 finished NodeMaintenances,
//     as a cluster that reboots every node monthly keeps when its
//     operator runs with retentionFlags. Every reboot of the rollout then
//     pushes its node's oldest record out, as it would in that cluster;
//   - the monthly schedule that raised that history (sim.HistoryPolicy),
//     which the operator evaluates whenever a request changes phase, and
//     which does not fire during the bench.
const (
	agentPodsPerNode    = 6
	workloadPodsPerNode = 14
	historyMonths       = 12
)

// shape makes the simulated cluster's nodes and pods realistic.
func shape(cfg *sim.Config) {
	cfg.Realistic = true
	cfg.AgentPodsPerNode = agentPodsPerNode
	cfg.PodsPerNode = workloadPodsPerNode
}

// retentionFlags are the operator's flags that keep the seeded year of
// history (sim.HistoryRetention): nothing is pruned when it starts.
func retentionFlags() []string {
	keep := sim.HistoryRetention(historyMonths)
	return []string{fmt.Sprintf("--history-per-node=%d", keep.PerNode), fmt.Sprintf("--history-max-age=%s", keep.MaxAge)}
}

// seedHistory gives every node its year of history and logs how long
// building the cluster took.
func seedHistory(b *testing.B, c *sim.Cluster, clusterStart time.Time) {
	b.Helper()
	built := time.Now()
	n, err := c.SeedHistory(context.Background(), historyMonths, built)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("setup: %d nodes with %d pods each in %s; %d NodeMaintenances of history in %s",
		len(c.Nodes()), agentPodsPerNode+workloadPodsPerNode, built.Sub(clusterStart).Round(time.Millisecond), n, time.Since(built).Round(time.Millisecond))
}

// cleanupObjects deletes the rollout's pods, reboot history and the policy
// that raised it, so the next scenario starts with its own objects only.
// Pods bound to nodes finish deleting by the simulated kubelets
// (harness.Main).
func cleanupObjects(b *testing.B, c *sim.Cluster) {
	ctx := context.Background()
	for _, ns := range c.PodNamespaces() {
		// At once: their nodes are gone with the rollout, and the next
		// scenario should not wait for thousands of graceful deletions.
		deleteAll(b, ctx, "pods in "+ns, &corev1.Pod{}, client.InNamespace(ns), client.GracePeriodSeconds(0))
	}
	deleteAll(b, ctx, "node maintenances", &v1alpha1.NodeMaintenance{})
	deleteAll(b, ctx, "reboot policies", &v1alpha1.RebootPolicy{})
}

// deleteAll deletes every object of obj's kind that opts select. The API
// server deletes a collection one object after another and answers with an
// error after its request timeout (a minute), which the 70,000 workload
// pods of 5000 nodes outlast several times over: what it had not deleted
// by then would stay for the next scenario. So it asks again for as long
// as each attempt leaves fewer objects than the one before.
func deleteAll(b *testing.B, ctx context.Context, what string, obj client.Object, opts ...client.DeleteAllOfOption) {
	b.Helper()
	before := -1
	for {
		err := bed.Client.DeleteAllOf(ctx, obj, opts...)
		if err == nil {
			return
		}
		left, countErr := count(ctx, obj, opts...)
		if countErr != nil {
			b.Errorf("delete %s: %v; counting what is left: %v", what, err, countErr)
			return
		}
		if left == 0 {
			// The failed request finished its work after all.
			b.Logf("delete %s: %v; none left", what, err)
			return
		}
		if before >= 0 && left >= before {
			// The next scenario would run beside what is left.
			b.Errorf("delete %s: %v; %d left, as many as before the last attempt", what, err, left)
			return
		}
		before = left
		b.Logf("delete %s: %v; %d left, asking again", what, err, left)
	}
}

// count counts the objects of obj's kind that opts select, reading only
// their metadata.
func count(ctx context.Context, obj client.Object, opts ...client.DeleteAllOfOption) (int, error) {
	gvk, err := apiutil.GVKForObject(obj, bed.Scheme)
	if err != nil {
		return 0, err
	}
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	del := (&client.DeleteAllOfOptions{}).ApplyOptions(opts)
	if err := bed.Client.List(ctx, list, &del.ListOptions); err != nil {
		return 0, err
	}
	return len(list.Items), nil
}
