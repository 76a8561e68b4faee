package history

import (
	"encoding/json"
	"fmt"
	goruntime "runtime"
	"testing"
	"time"

	"github.com/google/uuid"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/kmaint/kmaint/api/scheme"
	"github.com/kmaint/kmaint/api/v1alpha1"
)

// BenchmarkHeldRecord reports the heap one finished NodeMaintenance of a
// year's history holds: "history", decoded from the API server's JSON as
// the Reflector decodes it, and stored in the history; "cache", decoded,
// stripped of its managed fields and stored in a client-go indexer with a
// node index, as a controller-runtime cache of every record would hold it.
// The records are a monthly schedule's reboots of cloud nodes, with their
// phase times, boot ids, message and condition, as the rolling bench seeds
// them.
func BenchmarkHeldRecord(b *testing.B) {
	const records = 20000
	raws := finishedJSON(b, records)
	s, err := scheme.New()
	if err != nil {
		b.Fatal(err)
	}
	decoder := serializer.NewCodecFactory(s).UniversalDeserializer()
	interned := map[string]string{}
	intern := func(v string) string {
		if w, ok := interned[v]; ok {
			return w
		}
		interned[v] = v
		return v
	}
	byNode := toolscache.Indexers{"node": func(obj any) ([]string, error) {
		return []string{obj.(*v1alpha1.NodeMaintenance).Spec.NodeName}, nil
	}}
	for _, tc := range []struct {
		name     string
		newStore func() interface{ Add(any) error }
	}{
		{"history", func() interface{ Add(any) error } { return newWatching(nil, intern).stores[v1alpha1.PhaseSucceeded] }},
		{"cache", func() interface{ Add(any) error } {
			return toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, byNode, toolscache.WithTransformer(cache.TransformStripManagedFields()))
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var held float64
			for b.Loop() {
				st := tc.newStore()
				var before, after goruntime.MemStats
				goruntime.GC()
				goruntime.ReadMemStats(&before)
				for _, raw := range raws {
					obj, _, err := decoder.Decode(raw, nil, nil)
					if err != nil {
						b.Fatal(err)
					}
					if err := st.Add(obj); err != nil {
						b.Fatal(err)
					}
				}
				goruntime.GC()
				goruntime.ReadMemStats(&after)
				held = float64(after.HeapAlloc-before.HeapAlloc) / records
				goruntime.KeepAlive(st)
			}
			b.ReportMetric(held, "heap-B/record")
		})
	}
}

// finishedJSON returns n finished NodeMaintenances as the API server serves
// them: twelve months of a monthly schedule's reboots per node.
func finishedJSON(b *testing.B, n int) [][]byte {
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
				CreationTimestamp: *at(0),
				Labels:            map[string]string{v1alpha1.PolicyLabel: "monthly-reboot"},
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
