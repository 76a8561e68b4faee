package maintenance_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/harness"
)

// forgedRequests writes a reboot-requested annotation for the node's boot
// with these host request ids, as a stolen daemon token can.
func forgedRequests(g Gomega, node string, ids ...string) {
	n := harness.GetNode(g, bed, node)
	reqs := make([]protocol.Request, 0, len(ids))
	for _, id := range ids {
		reqs = append(reqs, gen.Req(id, v1alpha1.SourceHost, time.Now()))
	}
	value := protocol.Encode(protocol.Requested{BootID: protocol.BootID(n), Requests: reqs})
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, protocol.RebootRequested, value)
	g.Expect(bed.Client.Patch(context.Background(), n, client.RawPatch(types.MergePatchType, []byte(patch)))).To(Succeed())
}

func ids(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%03d", prefix, i)
	}
	return out
}

// nodeWarnings returns the notes of the Warning events with this reason
// about the node.
func nodeWarnings(g Gomega, node, reason string) []string {
	var list eventsv1.EventList
	g.Expect(bed.Client.List(context.Background(), &list)).To(Succeed())
	var notes []string
	for _, e := range list.Items {
		if e.Regarding.Kind == "Node" && e.Regarding.Name == node && e.Type == corev1.EventTypeWarning && e.Reason == reason {
			notes = append(notes, e.Note)
		}
	}
	return notes
}

// TestForgedRequestFloodIsCapped: a node whose reboot-requested names 400
// invented host request ids (a stolen daemon token once made the operator
// create 400 NodeMaintenances in 8 s, again on every write) gets
// MaxRecordedPerBoot records in its boot and one Warning event that counts
// the rest, however often the ids are rewritten.
func TestForgedRequestFloodIsCapped(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	pool := gen.Pool("flood", intstr.FromInt32(1))
	pool.Spec.Paused = true // nothing is admitted: only the records are looked at
	g.Expect(bed.Client.Create(ctx, pool)).To(Succeed())
	node := harness.CreateNodes(t, bed, "flood", "flood", 1)[0]
	harness.StartOperator(t, bed)

	forgedRequests(g, node, ids("forged", 400)...)
	records := func(g Gomega) int { return len(harness.MaintenancesOf(g, bed, node)) }
	g.Eventually(records, timeout).Should(Equal(v1alpha1.MaxRecordedPerBoot))
	g.Eventually(func(g Gomega) []string { return nodeWarnings(g, node, v1alpha1.RequestsNotRecordedReason) }, timeout).Should(ConsistOf(
		fmt.Sprintf("node %s raised 400 reboot requests in boot boot-0; kmaint records at most %d per node and boot: %d recorded, %d not. "+
			"They ask for no further reboot; this many requests suggest that the node's daemon identity is misused",
			node, v1alpha1.MaxRecordedPerBoot, v1alpha1.MaxRecordedPerBoot, 400-v1alpha1.MaxRecordedPerBoot)))

	// The same daemon rewrites its ids, again and again: no more records.
	for round := range 5 {
		forgedRequests(g, node, ids(fmt.Sprintf("again%d", round), 400)...)
	}
	g.Consistently(records, 3*time.Second, 200*time.Millisecond).Should(Equal(v1alpha1.MaxRecordedPerBoot))
	for _, nm := range harness.MaintenancesOf(g, bed, node) {
		g.Expect(nm.Spec.Source).To(Equal(v1alpha1.SourceHost))
		g.Expect(nm.Labels).To(HaveKeyWithValue(v1alpha1.BootIDLabel, "boot-0"))
		g.Expect(nm.Status.RequestID).To(HavePrefix("forged-"), "the first ids of the boot are the ones recorded")
	}
	g.Expect(nodeWarnings(g, node, v1alpha1.RequestsNotRecordedReason)).To(HaveLen(1), "one event for the flood, not one per write")

	// A new boot has a share of its own.
	g.Expect(gen.SetBoot(ctx, bed.Client, node, "boot-1", true)).To(Succeed())
	forgedRequests(g, node, ids("boot1", 20)...)
	g.Eventually(records, timeout).Should(Equal(2 * v1alpha1.MaxRecordedPerBoot))
	g.Eventually(func(g Gomega) []string { return nodeWarnings(g, node, v1alpha1.RequestsNotRecordedReason) }, timeout).Should(ContainElement(
		ContainSubstring(fmt.Sprintf("raised 20 reboot requests in boot boot-1; kmaint records at most %d per node and boot: %d recorded, 4 not",
			v1alpha1.MaxRecordedPerBoot, v1alpha1.MaxRecordedPerBoot))))
}

// TestUnusableRequestIDsAreNotRecorded: ids kmaint cannot record (too long
// for status.requestID, or with spaces or control characters) are left out
// and counted in the event; the node's good request is recorded.
func TestUnusableRequestIDsAreNotRecorded(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	pool := gen.Pool("badids", intstr.FromInt32(1))
	pool.Spec.Paused = true
	g.Expect(bed.Client.Create(ctx, pool)).To(Succeed())
	node := harness.CreateNodes(t, bed, "badids", "badids", 1)[0]
	harness.StartOperator(t, bed)

	forgedRequests(g, node, "good-1", strings.Repeat("x", v1alpha1.MaxRequestIDLength+1), "with space", "new\nline", "")
	g.Eventually(func(g Gomega) []string {
		var got []string
		for _, nm := range harness.MaintenancesOf(g, bed, node) {
			got = append(got, nm.Status.RequestID)
		}
		return got
	}, timeout).Should(ConsistOf("good-1"))
	g.Eventually(func(g Gomega) []string { return nodeWarnings(g, node, v1alpha1.RequestsNotRecordedReason) }, timeout).Should(ConsistOf(
		And(ContainSubstring("raised 5 reboot requests in boot boot-0"), ContainSubstring("1 recorded, 4 not (4 for an id that cannot be recorded, e.g. the request id is 129 bytes long; at most 128 are allowed)"))))
}
