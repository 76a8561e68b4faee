package operator_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/kmaint/kmaint/api/scheme"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator"
	"github.com/kmaint/kmaint/operator/index"
)

// BenchmarkCachedOpenMaintenance reports what one open NodeMaintenance
// costs the operator's cache, in heap bytes held: a host's request waiting
// for its pool's budget, as every node of a pool rolled at once has one,
// served as JSON (a custom resource) and decoded as the informer does,
// transformed and stored under the cache's indexes. "stripped" drops only
// managed fields, "slim" is what the operator runs on NodeMaintenances.
func BenchmarkCachedOpenMaintenance(b *testing.B) {
	const records = 5000
	s, err := scheme.New()
	if err != nil {
		b.Fatal(err)
	}
	decoder := serializer.NewCodecFactory(s).UniversalDeserializer()
	now := time.Now().UTC().Truncate(time.Second)
	raws := make([][]byte, 0, records)
	for i := range records {
		raw, err := json.Marshal(waitingMaintenance(i, now))
		if err != nil {
			b.Fatal(err)
		}
		raws = append(raws, raw)
	}
	indexers := toolscache.Indexers{}
	for field, values := range index.Fields() {
		indexers[field] = func(obj any) ([]string, error) { return values(obj.(*v1alpha1.NodeMaintenance)), nil }
	}
	newStore := func() toolscache.Store { return toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, indexers) }
	reportHeld(b, raws, decoder, newStore, operator.MaintenanceTransform(), "heap-B/record")
}

// waitingMaintenance is the i-th node's request, raised on the host and
// recorded by the operator, waiting in its pool's queue.
func waitingMaintenance(i int, now time.Time) *v1alpha1.NodeMaintenance {
	node := fmt.Sprintf("ip-10-%d-%d-%d.ec2.internal", i/62500, i/250%250, i%250)
	boot, id := uuid.NewString(), uuid.NewString()
	at := func(d time.Duration) *metav1.Time { t := metav1.NewTime(now.Add(d)); return &t }
	message := "waiting: pool pool-3 has 25 of 25 nodes unavailable (maxUnavailable 25)"
	return &v1alpha1.NodeMaintenance{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "NodeMaintenance"},
		ObjectMeta: metav1.ObjectMeta{
			Name:              v1alpha1.ObjectName(node, "host", id[:8]),
			UID:               types.UID(uuid.NewString()),
			ResourceVersion:   fmt.Sprint(1_000_000 + i),
			Generation:        1,
			CreationTimestamp: *at(0),
			Labels:            map[string]string{v1alpha1.BootIDLabel: boot, v1alpha1.RequestIDLabel: id},
			ManagedFields: []metav1.ManagedFieldsEntry{
				{Manager: "kmaint-operator", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "kmaint.io/v1alpha1", Time: at(0), FieldsType: "FieldsV1",
					FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:labels":{".":{},"f:kmaint.io/boot-id":{},"f:kmaint.io/request-id":{}}},"f:spec":{".":{},"f:nodeName":{},"f:reason":{},"f:source":{},"f:type":{}}}`)}},
				{Manager: "kmaint-operator", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "kmaint.io/v1alpha1", Time: at(time.Second), FieldsType: "FieldsV1", Subresource: "status",
					FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{".":{},"f:bootIDBefore":{},"f:conditions":{".":{},"k:{\"type\":\"Succeeded\"}":{".":{},"f:lastTransitionTime":{},"f:message":{},"f:reason":{},"f:status":{},"f:type":{}},"k:{\"type\":\"Waiting\"}":{".":{},"f:lastTransitionTime":{},"f:message":{},"f:reason":{},"f:status":{},"f:type":{}}},"f:journaledBootID":{},"f:journaledTime":{},"f:message":{},"f:phase":{},"f:phaseTimes":{".":{},"f:pending":{},"f:requested":{}}}}`)}},
			},
		},
		Spec: v1alpha1.NodeMaintenanceSpec{
			NodeName: node, Type: v1alpha1.RebootMaintenance, Source: v1alpha1.SourceHost,
			Reason: "kernel update: reboot-required by unattended-upgrades",
		},
		Status: v1alpha1.NodeMaintenanceStatus{
			Phase: v1alpha1.PhaseRequested, BootIDBefore: boot, JournaledBootID: boot, JournaledTime: at(-time.Second),
			PhaseTimes: v1alpha1.PhaseTimes{Pending: at(0), Requested: at(time.Second)},
			Message:    message,
			Conditions: []metav1.Condition{
				{Type: v1alpha1.SucceededCondition, Status: metav1.ConditionUnknown, Reason: string(v1alpha1.PhaseRequested), Message: message, LastTransitionTime: *at(time.Second)},
				{Type: v1alpha1.WaitingCondition, Status: metav1.ConditionTrue, Reason: "Budget", Message: message, LastTransitionTime: *at(time.Second)},
			},
		},
	}
}
