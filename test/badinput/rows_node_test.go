package badinput

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/harness"
)

// The rows below act with the daemon token of ownNode, as a thief of it
// would.
const annotationSurface = "Node/daemon token"

var (
	ownNode   = pausedNodes[0]
	otherNode = pausedNodes[1]
)

// What the daemon's admission policy says when it refuses.
const (
	onlyAnnotations = "may change only the annotations"
	noFields        = "may not change a Node's labels"
	onlyOwnNode     = "may only update its own Node"
	onlyOwnNMs      = "may only update the status of NodeMaintenances for its node"
	onlyTheOperator = "written only by the kmaint operator"
	forbidden       = "forbidden"
)

func annotate(key, value string) string {
	v := "null"
	if value != "" {
		v = fmt.Sprintf("%q", value)
	}
	return fmt.Sprintf(`{"metadata":{"annotations":{%q:%s}}}`, key, v)
}

// patchNode merge-patches a node with the stolen token.
func patchNode(e *env, node, patch string) error {
	return e.daemons[ownNode].Patch(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}},
		client.RawPatch(types.MergePatchType, []byte(patch)))
}

// ownMaintenance creates a NodeMaintenance for the daemon's node, for rows
// that write its status, and deletes it when the row ends.
func ownMaintenance(t *testing.T, node string) *v1alpha1.NodeMaintenance {
	nm := &v1alpha1.NodeMaintenance{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "matrix-daemon-"},
		Spec:       v1alpha1.NodeMaintenanceSpec{NodeName: node, Reason: "bad-input matrix"},
	}
	if err := bed.Client.Create(context.Background(), nm); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bed.Client.Delete(context.Background(), nm) })
	return nm
}

func patchStatus(e *env, nm *v1alpha1.NodeMaintenance, patch string) error {
	return e.daemons[ownNode].Status().Patch(context.Background(), nm.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(patch)))
}

// restoreAnnotations puts back the kmaint annotations of node as they were,
// when the row ends: the next row starts from a clean node.
func restoreAnnotations(t *testing.T, node string) {
	g := NewWithT(t)
	before := harness.GetNode(g, bed, node).DeepCopy()
	t.Cleanup(func() {
		n := harness.GetNode(g, bed, node)
		base := n.DeepCopy()
		for _, k := range []string{protocol.RebootRequested, protocol.State, protocol.CurrentConfig} {
			if v, ok := before.Annotations[k]; ok {
				n.Annotations[k] = v
			} else {
				delete(n.Annotations, k)
			}
		}
		g.Expect(bed.Client.Patch(context.Background(), n, client.MergeFrom(base))).To(Succeed())
	})
}

// nodeShown lists the reasons a person sees about a node: the Degraded
// condition of its pool and the node's events.
func nodeShown(pool, node string) shown {
	return func(g Gomega) []string {
		p := harness.GetPool(g, bed, pool)
		return append(conditionReasons(p.Status.Conditions), harness.EventReasons(g, bed, "Node", node, "")...)
	}
}

func annotationRows() []row {
	refuse := func(name, says string, send func(t *testing.T, e *env) error) row {
		return row{surface: annotationSurface, name: name, want: refusedNaming(says),
			send: func(t *testing.T, e *env) (shown, error) { return nil, send(t, e) }}
	}
	own := func(name, says, patch string) row {
		return refuse(name, says, func(t *testing.T, e *env) error {
			restoreAnnotations(t, ownNode)
			return patchNode(e, ownNode, patch)
		})
	}
	requested := protocol.Encode(protocol.Requested{BootID: "boot-0", Requests: []protocol.Request{
		{ID: "r1", Source: v1alpha1.SourceHost, Reason: "forged", Time: time.Now()},
	}})
	// The operator's annotations are refused by the daemon's policy and by
	// kmaint-operator-annotations; the API server names either.
	operators := func(name, patch string) row {
		r := own(name, onlyAnnotations, patch)
		r.want.or = onlyTheOperator
		return r
	}
	rows := []row{
		operators("approve its own reboot", annotate(protocol.RebootApproved, "boot-0")),
		operators("admit itself", annotate(protocol.Admitted, `{"bootID":"boot-0","requests":["r1"]}`)),
		operators("mark itself cordoned by kmaint", annotate(protocol.Cordoned, "true")),
		operators("write a drain failure", annotate(protocol.DrainFailed, `{"bootID":"boot-0"}`)),
		operators("set its desired config", annotate(protocol.DesiredConfig, "v9")),
		own("another annotation", onlyAnnotations, annotate("example.com/x", "y")),
		own("a label", noFields, `{"metadata":{"labels":{"`+poolLabel+`":"open"}}}`),
		own("leave its pool by label", noFields, `{"metadata":{"labels":{"`+poolLabel+`":null}}}`),
		own("a taint", noFields, `{"spec":{"taints":[{"key":"example.com/x","effect":"NoSchedule"}]}}`),
		own("uncordon or cordon", noFields, `{"spec":{"unschedulable":true}}`),
		own("a finalizer", noFields, `{"metadata":{"finalizers":["example.com/x"]}}`),
		own("an annotation of 300 KB", "metadata.annotations", annotate(protocol.State, strings.Repeat("x", 300<<10))),
		refuse("another node's request", onlyOwnNode, func(t *testing.T, e *env) error {
			return patchNode(e, otherNode, annotate(protocol.RebootRequested, requested))
		}),
		refuse("another node's state", onlyOwnNode, func(t *testing.T, e *env) error {
			return patchNode(e, otherNode, annotate(protocol.State, `{"phase":"idle"}`))
		}),
		refuse("another node's NodeMaintenance status", onlyOwnNMs, func(t *testing.T, e *env) error {
			return patchStatus(e, ownMaintenance(t, otherNode), `{"status":{"journaledBootID":"boot-0"}}`)
		}),
		refuse("its NodeMaintenance's message of 1 MiB", "status.message", func(t *testing.T, e *env) error {
			return patchStatus(e, ownMaintenance(t, ownNode), fmt.Sprintf(`{"status":{"message":%q}}`, strings.Repeat("m", 1<<20-8192)))
		}),
		refuse("its NodeMaintenance Succeeded in 2099", "status", func(t *testing.T, e *env) error {
			return patchStatus(e, ownMaintenance(t, ownNode), `{"status":{"phase":"Succeeded","phaseTimes":{"succeeded":"2099-01-01T00:00:00Z"}}}`)
		}),
		refuse("its NodeMaintenance's conditions", "may write only status.journaledBootID", func(t *testing.T, e *env) error {
			return patchStatus(e, ownMaintenance(t, ownNode),
				`{"status":{"conditions":[{"type":"Succeeded","status":"True","reason":"Rebooted","message":"forged","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}`)
		}),
		refuse("its NodeMaintenance journaled again in another boot", "cannot be changed afterwards", func(t *testing.T, e *env) error {
			nm := ownMaintenance(t, ownNode)
			if err := patchStatus(e, nm, `{"status":{"journaledBootID":"boot-0"}}`); err != nil {
				t.Fatalf("the daemon's first write of its own field: %v", err)
			}
			return patchStatus(e, nm, `{"status":{"journaledBootID":"boot-forged"}}`)
		}),
		refuse("its NodeMaintenance's spec", forbidden, func(t *testing.T, e *env) error {
			nm := ownMaintenance(t, ownNode)
			return e.daemons[ownNode].Patch(context.Background(), nm.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(`{"spec":{"ignoreWindows":true}}`)))
		}),
		refuse("create a NodeMaintenance", forbidden, func(t *testing.T, e *env) error {
			return e.daemons[ownNode].Create(context.Background(), &v1alpha1.NodeMaintenance{
				ObjectMeta: metav1.ObjectMeta{GenerateName: "by-the-daemon-"},
				Spec:       v1alpha1.NodeMaintenanceSpec{NodeName: ownNode, Reason: "forged"},
			})
		}),
		refuse("delete a NodeMaintenance", forbidden, func(t *testing.T, e *env) error {
			return e.daemons[ownNode].Delete(context.Background(), ownMaintenance(t, ownNode))
		}),
		refuse("resume its paused pool", forbidden, func(t *testing.T, e *env) error {
			return e.daemons[ownNode].Patch(context.Background(), &v1alpha1.MaintenancePool{ObjectMeta: metav1.ObjectMeta{Name: pausedPool}},
				client.RawPatch(types.MergePatchType, []byte(`{"spec":{"paused":false}}`)))
		}),
		refuse("delete a Node", forbidden, func(t *testing.T, e *env) error {
			return e.daemons[ownNode].Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: otherNode}})
		}),
		refuse("read the webhook token", forbidden, func(t *testing.T, e *env) error {
			return e.daemons[ownNode].Get(context.Background(), client.ObjectKey{Namespace: "kmaint-system", Name: "kmaint-alert-webhook"}, &corev1.Secret{})
		}),
		refuse("update its Node's status", forbidden, func(t *testing.T, e *env) error {
			n := &corev1.Node{}
			if err := bed.Client.Get(context.Background(), client.ObjectKey{Name: ownNode}, n); err != nil {
				t.Fatal(err)
			}
			n.Status.NodeInfo.BootID = "boot-forged"
			return e.daemons[ownNode].Status().Update(context.Background(), n)
		}),
		refuse("an event in kube-system", "kube-system", func(t *testing.T, e *env) error {
			return e.daemons[ownNode].Create(context.Background(), forgedEvent("kube-system", otherNode))
		}),
		refuse("an event about another node", otherNode, func(t *testing.T, e *env) error {
			return e.daemons[ownNode].Create(context.Background(), forgedEvent("default", otherNode))
		}),
		refuse("an operator's event about its own node", "may only report the reasons", func(t *testing.T, e *env) error {
			return e.daemons[ownNode].Create(context.Background(), forgedEvent("default", ownNode))
		}),
	}

	contain := func(name, reason string, kv ...string) row {
		return row{
			surface: annotationSurface,
			name:    name,
			send: func(t *testing.T, e *env) (shown, error) {
				restoreAnnotations(t, ownNode)
				for i := 0; i+1 < len(kv); i += 2 {
					if err := patchNode(e, ownNode, annotate(kv[i], kv[i+1])); err != nil {
						return nil, err
					}
				}
				return nodeShown(pausedPool, ownNode), nil
			},
			want: containedAs(reason),
		}
	}
	manyIDs := make([]protocol.Request, 400)
	for i := range manyIDs {
		manyIDs[i] = protocol.Request{ID: fmt.Sprintf("forged-%03d", i), Source: v1alpha1.SourceHost, Reason: "flood", Time: time.Now()}
	}
	rows = append(rows,
		contain("request that is not JSON", v1alpha1.MalformedAnnotationReason, protocol.RebootRequested, "garbage"),
		contain("request of the wrong shape", v1alpha1.MalformedAnnotationReason, protocol.RebootRequested, `{"bootID":7,"requests":"all"}`),
		contain("state that is not JSON", v1alpha1.MalformedAnnotationReason, protocol.State, "{"),
		contain("400 forged request ids", v1alpha1.RequestsNotRecordedReason, protocol.RebootRequested,
			protocol.Encode(protocol.Requested{BootID: "boot-0", Requests: manyIDs})),
		contain("a request dated 1970, to go first", v1alpha1.RequestTimeBoundedReason, protocol.RebootRequested,
			protocol.Encode(protocol.Requested{BootID: "boot-0", Requests: []protocol.Request{
				{ID: "dated-1970", Source: v1alpha1.SourceHost, Reason: "first in line", Time: time.Unix(0, 0).UTC()}}})),
		contain("a request dated next year", v1alpha1.RequestTimeBoundedReason, protocol.RebootRequested,
			protocol.Encode(protocol.Requested{BootID: "boot-0", Requests: []protocol.Request{
				{ID: "dated-next-year", Source: v1alpha1.SourceHost, Reason: "from the future", Time: time.Now().AddDate(1, 0, 0)}}})),
		row{
			surface: annotationSurface,
			name:    "another node's NodeMaintenance as its own request, for its settings",
			send: func(t *testing.T, e *env) (shown, error) {
				restoreAnnotations(t, ownNode)
				witness := harness.GetMaintenance(NewWithT(t), bed, witnessNM)
				borrowed := protocol.Requested{BootID: "boot-0", Requests: []protocol.Request{
					{ID: witness.RequestID(), Source: v1alpha1.SourceAPI, Reason: "borrowed", Time: time.Now()}}}
				return nodeShown(pausedPool, ownNode), patchNode(e, ownNode, annotate(protocol.RebootRequested, protocol.Encode(borrowed)))
			},
			want: containedAs(v1alpha1.ForeignRequestReason),
		},
	)
	return rows
}

// forgedEvent is an event claiming kmaint approved node's reboot.
func forgedEvent(namespace, node string) *eventsv1.Event {
	return &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Namespace: namespace, GenerateName: "forged-"},
		EventTime:           metav1.NewMicroTime(time.Now()),
		ReportingController: "kmaint.io/daemon",
		ReportingInstance:   "kmaint-daemon-" + node,
		Action:              "Approve",
		Reason:              "RebootApproved",
		Regarding:           corev1.ObjectReference{Kind: "Node", Name: node, APIVersion: "v1"},
		Type:                corev1.EventTypeNormal,
		Note:                "forged",
	}
}
