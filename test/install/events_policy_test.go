package install

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/test/gen"
)

// TestOnlyKmaintWritesItsEvents installs kmaint's admission policies for
// real: a user who may create events in default (many may) cannot write
// one reported as a kmaint controller, through either events API, nor
// rewrite one of the operator's; the notifier, which sends chat messages
// from those events, would have sent hers. Her own controller's events,
// the operator's and the daemon's stay theirs.
func TestOnlyKmaintWritesItsEvents(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	installIdentities(t)
	const policy = "kmaint-events"
	node := "events-policy"
	g.Expect(gen.CreateNode(ctx, bed.Client, gen.Node(node))).To(Succeed())
	regarding := corev1.ObjectReference{Kind: "Node", APIVersion: "v1", Name: node}
	event := func(controller, reason string) *eventsv1.Event {
		return &eventsv1.Event{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("events-policy-%d", time.Now().UnixNano())},
			EventTime:  metav1.NewMicroTime(time.Now()), Type: corev1.EventTypeWarning,
			Reason: reason, Action: "Reboot", Note: "<!channel> see https://example.com", Regarding: regarding,
			ReportingController: controller, ReportingInstance: controller + "-0",
		}
	}
	eve := userWith(t, "eve", rbacv1.PolicyRule{APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"get", "create", "update", "patch"}})
	refused := func(what string, err error) {
		t.Helper()
		expectRefusedBy(t, policy, what, err, "written only by kmaint")
	}
	waitForPolicy(t, policy, func() error { return eve.Create(ctx, event("kmaint-gate", "RolloutStarted")) })

	refused("a gate's event", eve.Create(ctx, event("kmaint-gate", "PoolHalted")))
	refused("aftercare's event", eve.Create(ctx, event("kmaint-aftercare", "NodeNotBack")))
	refused("a daemon's event", eve.Create(ctx, event("kmaint-daemon", "RebootLoop")))
	core := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("events-policy-core-%d", time.Now().UnixNano())},
		InvolvedObject: regarding, Reason: "PoolHalted", Message: "forged", Type: corev1.EventTypeWarning,
		Action: "Halt", EventTime: metav1.NewMicroTime(time.Now()), ReportingController: "kmaint-aftercare", ReportingInstance: "x",
	}
	refused("an event of the core API", eve.Create(ctx, core))

	// The operator's own event, which she may not rewrite nor take over.
	operator := clientWithToken(t, operatorToken(t))
	own := event("kmaint-gate", "RolloutFinished")
	g.Expect(operator.Create(ctx, own)).To(Succeed(), "the operator writes its events")
	series := []byte(`{"series":{"count":50,"lastObservedTime":"` + time.Now().UTC().Format("2006-01-02T15:04:05.000000Z") + `"}}`)
	refused("the operator's event repeated 50 times", eve.Patch(ctx, own.DeepCopy(), client.RawPatch(types.MergePatchType, series)))
	taken := own.DeepCopy()
	taken.ReportingController = "eve-controller"
	taken.ReportingInstance = "eve-controller-0"
	err := eve.Update(ctx, taken)
	g.Expect(err).To(HaveOccurred(), "the operator's event taken over")

	// Hers, and the daemon's own.
	g.Expect(eve.Create(ctx, event("eve-controller", "Deployed"))).To(Succeed())
	daemon := clientWithToken(t, daemonOf(t, node))
	g.Expect(daemon.Create(ctx, event("kmaint-daemon", "Rebooting"))).To(Succeed(), "the daemon writes its events")
	var stored eventsv1.Event
	g.Expect(bed.Client.Get(ctx, client.ObjectKeyFromObject(own), &stored)).To(Succeed())
	g.Expect(stored.Note).To(Equal(own.Note))
}
