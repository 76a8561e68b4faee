package gate_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/gate"
	"github.com/kmaint/kmaint/test/gen"
)

// BenchmarkGateLiveRead times the reads the gate makes past its cache
// before it admits or approves (fresh.go): a GET of the pool and one of
// the cluster's MaintenanceGate, against the package's real API server
// (envtest's kube-apiserver and etcd on this machine, over loopback),
// through what the manager gives the gate as its API reader (an uncached
// client). BenchmarkGateEvent counts these reads per event
// (live-get-*/event) but answers them from memory; this is their round
// trip. The pool carries the status the gate writes of a pool of 5000
// nodes in a rollout (its counts, a Blocked condition naming 20 waiting
// nodes). Each op is one reconcile's two reads; reported are one GET's
// mean, p50 and p99 (ms/get-*) and the two's (ms/both-p50, -p99).
func BenchmarkGateLiveRead(b *testing.B) {
	ctx := context.Background()
	pool := gen.Pool("liveread", intstr.FromInt32(250))
	if err := bed.Client.Create(ctx, pool); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = bed.Client.Delete(context.Background(), pool) })
	waiting := make([]string, 20)
	for i := range waiting {
		waiting[i] = fmt.Sprintf("node-%05d", 250+i)
	}
	pool.Status = v1alpha1.MaintenancePoolStatus{ObservedGeneration: pool.Generation, Nodes: 5000, Ready: 4750, Unavailable: 250,
		MaxUnavailable: 250, Draining: 25, Rebooting: 225, PendingRequests: 4750,
		Conditions: []metav1.Condition{{Type: v1alpha1.BlockedCondition, Status: metav1.ConditionTrue, Reason: "MaxUnavailable",
			Message:            fmt.Sprintf("maxUnavailable 250 reached; waiting: %s and 4730 more", strings.Join(waiting, ", ")),
			LastTransitionTime: metav1.Now(), ObservedGeneration: pool.Generation}}}
	if err := bed.Client.Status().Update(ctx, pool); err != nil {
		b.Fatal(err)
	}
	stop := &v1alpha1.MaintenanceGate{}
	if err := bed.Client.Get(ctx, client.ObjectKey{Name: v1alpha1.ClusterGateName}, stop); err != nil {
		stop = &v1alpha1.MaintenanceGate{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.ClusterGateName}}
		if err := bed.Client.Create(ctx, stop); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = bed.Client.Delete(context.Background(), stop) })
	}
	// What the manager's GetAPIReader is: a client without a cache.
	reader, err := client.New(bed.Config, client.Options{Scheme: bed.Scheme})
	if err != nil {
		b.Fatal(err)
	}
	timed := &timedReader{Reader: reader}
	// What the cache holds, as it stands: the gate acts.
	read := func() time.Duration {
		began := time.Now()
		if why := gate.ReadBehind(ctx, timed, pool, stop); why != "" {
			b.Fatalf("the gate would not act on a cache that holds the pool and the MaintenanceGate as they are: %s", why)
		}
		return time.Since(began)
	}
	read() // the connection made, outside the measure
	timed.took = timed.took[:0]
	var both []time.Duration
	b.ResetTimer()
	for b.Loop() {
		both = append(both, read())
	}
	b.StopTimer()
	if len(timed.took) != 2*len(both) {
		b.Fatalf("%d GETs for %d reconciles' reads, want two each: the pool and the MaintenanceGate", len(timed.took), len(both))
	}
	gets := timed.took
	slices.Sort(gets)
	slices.Sort(both)
	var sum time.Duration
	for _, d := range gets {
		sum += d
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(float64(len(gets)), "gets")
	b.ReportMetric(ms(sum)/float64(len(gets)), "ms/get-mean")
	b.ReportMetric(ms(gets[len(gets)/2]), "ms/get-p50")
	b.ReportMetric(ms(gets[len(gets)*99/100]), "ms/get-p99")
	b.ReportMetric(ms(both[len(both)/2]), "ms/both-p50")
	b.ReportMetric(ms(both[len(both)*99/100]), "ms/both-p99")
}

// timedReader times each Get.
type timedReader struct {
	client.Reader
	took []time.Duration
}

func (t *timedReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	began := time.Now()
	err := t.Reader.Get(ctx, key, obj, opts...)
	t.took = append(t.took, time.Since(began))
	return err
}
