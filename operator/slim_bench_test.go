package operator_test

import (
	"encoding/json"
	"fmt"
	goruntime "runtime"
	"testing"
	"time"

	"github.com/google/uuid"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/kmaint/kmaint/operator"
	"github.com/kmaint/kmaint/operator/api/scheme"
	"github.com/kmaint/kmaint/operator/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/index"
)

// BenchmarkCachedFinishedMaintenance reports what one finished
// NodeMaintenance of a year's history costs the operator's cache, in heap
// bytes held: decoded from the API server's JSON as the informer does,
// transformed, and stored with the indexes of package index. "stripped"
// drops only managed fields (the cache's default transform), "slim" is
// what the operator runs. The records are shaped as the policy controller
// and the maintenance controller write them (as test/sim seeds them for
// the rolling bench): a monthly schedule's reboot of a cloud node, with
// its phase times, boot IDs, message and Succeeded condition.
func BenchmarkCachedFinishedMaintenance(b *testing.B) {
	const records = 20000
	raws := finishedRecords(b, records)
	s, err := scheme.New()
	if err != nil {
		b.Fatal(err)
	}
	decoder := serializer.NewCodecFactory(s).UniversalDeserializer()
	newStore := func() toolscache.Store {
		return toolscache.NewIndexer(toolscache.DeletionHandlingMetaNamespaceKeyFunc, cacheIndexers())
	}
	reportHeld(b, raws, decoder, newStore, operator.MaintenanceTransform(), "heap-B/record")
}

// reportHeld reports, per object of raws, the heap held with the cache's
// default transform ("stripped": managed fields only) and with slim, the
// operator's.
func reportHeld(b *testing.B, raws [][]byte, decoder runtime.Decoder, newStore func() toolscache.Store, slim toolscache.TransformFunc, unit string) {
	for _, tc := range []struct {
		name      string
		transform toolscache.TransformFunc
	}{
		{"stripped", cache.TransformStripManagedFields()},
		{"slim", slim},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportMetric(heapHeld(b, raws, decoder, tc.transform, newStore), unit)
		})
	}
}

// heapHeld returns the heap bytes each object holds once raws are decoded
// as an informer decodes them, transformed and stored in a new store.
func heapHeld(b *testing.B, raws [][]byte, decoder runtime.Decoder, transform toolscache.TransformFunc, newStore func() toolscache.Store) float64 {
	b.Helper()
	var held float64
	for b.Loop() {
		store := newStore()
		var before, after goruntime.MemStats
		goruntime.GC()
		goruntime.ReadMemStats(&before)
		for _, raw := range raws {
			decoded, _, err := decoder.Decode(raw, nil, nil)
			if err != nil {
				b.Fatal(err)
			}
			obj, err := transform(decoded)
			if err != nil {
				b.Fatal(err)
			}
			if err := store.Add(obj); err != nil {
				b.Fatal(err)
			}
		}
		goruntime.GC()
		goruntime.ReadMemStats(&after)
		held = float64(after.HeapAlloc-before.HeapAlloc) / float64(len(raws))
		goruntime.KeepAlive(store)
	}
	return held
}

// cacheIndexers are the indexes index.Setup asks for, keyed and valued as
// controller-runtime's cache stores those of a cluster-scoped kind.
func cacheIndexers() toolscache.Indexers {
	indexers := toolscache.Indexers{}
	for field, values := range index.Fields() {
		indexers["field:"+field] = func(obj any) ([]string, error) {
			var keys []string
			for _, v := range values(obj.(*v1alpha1.NodeMaintenance)) {
				keys = append(keys, "__all_namespaces/"+v)
			}
			return keys, nil
		}
	}
	return indexers
}

// finishedRecords returns n finished NodeMaintenances as the API server
// serves them: twelve months of a monthly schedule's reboots per node.
func finishedRecords(b *testing.B, n int) [][]byte {
	b.Helper()
	now := time.Now().UTC().Truncate(time.Second)
	raws := make([][]byte, 0, n)
	for i := range n {
		node := fmt.Sprintf("ip-10-0-%d-%d.eu-west-1.compute.internal", i/12/250, i/12%250)
		fired := now.Add(-time.Duration(i%12+1) * 730 * time.Hour)
		at := func(d time.Duration) *metav1.Time { t := metav1.NewTime(fired.Add(d)); return &t }
		before, after := uuid.NewString(), uuid.NewString()
		message := fmt.Sprintf("node %s rebooted: boot %s, then %s", node, before, after)
		nm := &v1alpha1.NodeMaintenance{
			TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "NodeMaintenance"},
			ObjectMeta: metav1.ObjectMeta{
				Name:              v1alpha1.ObjectName("monthly-reboot", node, fmt.Sprint(fired.Unix()), before[:6]),
				UID:               types.UID(uuid.NewString()),
				ResourceVersion:   fmt.Sprint(1_000_000 + i),
				Generation:        1,
				CreationTimestamp: *at(0),
				Labels:            map[string]string{v1alpha1.PolicyLabel: "monthly-reboot"},
				ManagedFields: []metav1.ManagedFieldsEntry{
					{Manager: "kmaint-operator", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "kmaint.io/v1alpha1", FieldsType: "FieldsV1",
						FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:labels":{".":{},"f:kmaint.io/policy":{}}},"f:spec":{".":{},"f:nodeName":{},"f:policy":{},"f:reason":{},"f:source":{},"f:type":{}}}`)}},
					{Manager: "kmaint-operator", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "kmaint.io/v1alpha1", FieldsType: "FieldsV1", Subresource: "status",
						FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{".":{},"f:bootIDAfter":{},"f:bootIDBefore":{},"f:conditions":{},"f:message":{},"f:phase":{},"f:phaseTimes":{},"f:requestID":{}}}`)}},
				},
			},
			Spec: v1alpha1.NodeMaintenanceSpec{
				NodeName: node, Type: v1alpha1.RebootMaintenance, Source: v1alpha1.SourceSchedule, Policy: "monthly-reboot",
				Reason: fmt.Sprintf("policy monthly-reboot: schedule %q (UTC) fired at %s", "@monthly", fired.Format(time.RFC3339)),
			},
			Status: v1alpha1.NodeMaintenanceStatus{
				Phase: v1alpha1.PhaseSucceeded, RequestID: uuid.NewString(),
				BootIDBefore: before, JournaledBootID: before, JournaledTime: at(time.Second), BootIDAfter: after,
				PhaseTimes: v1alpha1.PhaseTimes{Pending: at(0), Requested: at(2 * time.Second), Draining: at(time.Minute),
					Approved: at(3 * time.Minute), Rebooting: at(4 * time.Minute), Succeeded: at(6 * time.Minute)},
				Message: message,
				Conditions: []metav1.Condition{{Type: v1alpha1.SucceededCondition, Status: metav1.ConditionTrue,
					Reason: v1alpha1.RebootedReason, Message: message, LastTransitionTime: *at(6 * time.Minute)}},
			},
		}
		raw, err := json.Marshal(nm)
		if err != nil {
			b.Fatal(err)
		}
		raws = append(raws, raw)
	}
	return raws
}
