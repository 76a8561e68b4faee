package install

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator"
	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/sim"
)

// person returns a client for a user who may create, update and read
// NodeMaintenances, as a cluster's operators would be given.
func person(t *testing.T, name string) client.Client {
	t.Helper()
	return userWith(t, name, rbacv1.PolicyRule{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"nodemaintenances"},
		Verbs: []string{"create", "update", "patch", "get", "list"}})
}

// TestPeopleCannotSetKmaintsSources: a NodeMaintenance with a source kmaint
// sets itself (host, config, metric, schedule, alert), naming a policy, or
// carrying kmaint's labels, is refused at the door with a message naming
// the field; kmaint's operator may create them, and people may still label
// its records.
func TestPeopleCannotSetKmaintsSources(t *testing.T) {
	ctx := context.Background()
	installIdentities(t)
	jane := person(t, "jane")
	const policy = "kmaint-request-sources"
	nm := func(name string, change func(*v1alpha1.NodeMaintenance)) *v1alpha1.NodeMaintenance {
		o := &v1alpha1.NodeMaintenance{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       v1alpha1.NodeMaintenanceSpec{NodeName: "sources-a", Reason: "kernel update"},
		}
		if change != nil {
			change(o)
		}
		return o
	}
	waitForPolicy(t, policy, func() error {
		return jane.Create(ctx, nm(fmt.Sprintf("probe-%d", time.Now().UnixNano()), func(o *v1alpha1.NodeMaintenance) { o.Spec.Source = v1alpha1.SourceHost }))
	})

	for _, source := range []v1alpha1.Source{v1alpha1.SourceHost, v1alpha1.SourceConfig, v1alpha1.SourceMetric, v1alpha1.SourceSchedule, v1alpha1.SourceAlert, v1alpha1.SourceCondition, v1alpha1.SourceSentinel} {
		err := jane.Create(ctx, nm("by-jane-"+string(source), func(o *v1alpha1.NodeMaintenance) { o.Spec.Source = source }))
		expectRefusedBy(t, policy, "source "+string(source), err,
			"spec.source: "+string(source)+" is set by kmaint itself (host, sentinel and config requests are recorded from the node, "+
				"metric, schedule, alert and condition requests are raised by RebootPolicies); people and clients create NodeMaintenances "+
				"with source api, the default: leave spec.source out")
	}
	expectRefusedBy(t, policy, "admin with source host", bed.Client.Create(ctx, nm("by-admin-host", func(o *v1alpha1.NodeMaintenance) { o.Spec.Source = v1alpha1.SourceHost })),
		"spec.source: host is set by kmaint itself")
	expectRefusedBy(t, policy, "spec.policy", jane.Create(ctx, nm("by-jane-policy", func(o *v1alpha1.NodeMaintenance) { o.Spec.Policy = "monthly" })),
		"spec.policy is set by kmaint on the requests a RebootPolicy raises; leave it out")
	for _, label := range []string{v1alpha1.RequestIDLabel, v1alpha1.BootIDLabel, v1alpha1.PolicyLabel} {
		err := jane.Create(ctx, nm("by-jane-label-"+strings.TrimPrefix(label, "kmaint.io/"), func(o *v1alpha1.NodeMaintenance) { o.Labels = map[string]string{label: "x"} }))
		expectRefusedBy(t, policy, "label "+label, err, "metadata.labels: kmaint.io/request-id, kmaint.io/boot-id and kmaint.io/policy are set by kmaint")
	}

	// What people do is allowed.
	mine := nm("by-jane", func(o *v1alpha1.NodeMaintenance) { o.Labels = map[string]string{"team": "infra"} })
	if err := jane.Create(ctx, mine); err != nil {
		t.Fatalf("source api, the default: %v", err)
	}
	if mine.Spec.Source != v1alpha1.SourceAPI {
		t.Errorf("source defaulted to %q", mine.Spec.Source)
	}
	expectRefusedBy(t, policy, "a label of kmaint added later", jane.Patch(ctx, mine, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"kmaint.io/request-id":"x"}}}`))),
		"metadata.labels: kmaint.io/request-id")

	// kmaint's operator records a host request; a person may label it.
	op := clientWithToken(t, operatorToken(t))
	record := nm("sources-a-host-1", func(o *v1alpha1.NodeMaintenance) {
		o.Spec.Source = v1alpha1.SourceHost
		o.Labels = map[string]string{v1alpha1.RequestIDLabel: "1", v1alpha1.BootIDLabel: "boot-0"}
	})
	if err := op.Create(ctx, record); err != nil {
		t.Fatalf("the operator's record of a host request: %v", err)
	}
	if err := jane.Patch(ctx, record, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"team":"infra"}}}`))); err != nil {
		t.Errorf("a person labelling kmaint's record: %v", err)
	}
}

// TestForgedRequestFloodWithDaemonToken: the daemon's token of one node
// writes 400 invented request ids on its Node, which the admission policy
// allows (they are its annotation); the operator, running as its own
// service account with the shipped RBAC and policies, records
// MaxRecordedPerBoot of them and says so in a Warning event on the Node.
func TestForgedRequestFloodWithDaemonToken(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	installIdentities(t)
	node := "flood-a"
	pool := gen.Pool("flood", intstr.FromInt32(1))
	pool.Spec.NodeSelector = &v1alpha1.LabelSelector{MatchLabels: map[string]v1alpha1.SelectorValue{"pool": "flood"}}
	pool.Spec.Paused = true // nothing is admitted: only the records are looked at
	g.Expect(bed.Client.Create(ctx, pool)).To(Succeed())
	g.Expect(gen.CreateNode(ctx, bed.Client, gen.Node(node, gen.Labels("pool", "flood")))).To(Succeed())
	daemon := clientWithToken(t, daemonOf(t, node))

	op, err := sim.StartOperator(ctx, daemonConfig(operatorToken(t)), operator.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		if err := op.Stop(); err != nil {
			t.Errorf("operator: %v", err)
		}
	})

	reqs := make([]protocol.Request, 400)
	for i := range reqs {
		reqs[i] = gen.Req(fmt.Sprintf("forged-%03d", i), v1alpha1.SourceHost, time.Now())
	}
	value := protocol.Encode(protocol.Requested{BootID: "boot-0", Requests: reqs})
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, protocol.RebootRequested, value)
	g.Eventually(func() error {
		return daemon.Patch(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, client.RawPatch(types.MergePatchType, []byte(patch)))
	}).WithTimeout(30 * time.Second).Should(Succeed())

	records := func(g Gomega) int {
		var list v1alpha1.NodeMaintenanceList
		g.Expect(bed.Client.List(ctx, &list)).To(Succeed())
		n := 0
		for _, nm := range list.Items {
			if nm.Spec.NodeName == node {
				n++
			}
		}
		return n
	}
	g.Eventually(records).WithTimeout(30 * time.Second).Should(Equal(v1alpha1.MaxRecordedPerBoot))
	g.Consistently(records).WithTimeout(3 * time.Second).Should(Equal(v1alpha1.MaxRecordedPerBoot))
	g.Eventually(func(g Gomega) []string {
		var evs eventsv1.EventList
		g.Expect(bed.Client.List(ctx, &evs, client.InNamespace("default"))).To(Succeed())
		var notes []string
		for _, e := range evs.Items {
			if e.Regarding.Name == node && e.Type == corev1.EventTypeWarning && e.Reason == v1alpha1.RequestsNotRecordedReason {
				notes = append(notes, e.Note)
			}
		}
		return notes
	}).WithTimeout(30 * time.Second).Should(ConsistOf(ContainSubstring(fmt.Sprintf("raised 400 reboot requests in boot boot-0; kmaint records at most %d per node and boot: %d recorded, %d not",
		v1alpha1.MaxRecordedPerBoot, v1alpha1.MaxRecordedPerBoot, 400-v1alpha1.MaxRecordedPerBoot))))
}
