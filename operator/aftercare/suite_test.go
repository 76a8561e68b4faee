package aftercare_test

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/kmaint/kmaint/api/scheme"
	"github.com/kmaint/kmaint/operator/aftercare"
	"github.com/kmaint/kmaint/test/harness"
	"github.com/kmaint/kmaint/test/testbed"
)

// bed is the real API server all tests in this package share. Each test
// works in its own pool, with its own nodes.
var bed *testbed.Bed

func TestMain(m *testing.M) { os.Exit(harness.Main(m, &bed)) }

// startAftercare runs aftercare alone, without the gate: the tests put the
// nodes in the state the gate leaves them in.
func startAftercare(t *testing.T, q *querier) { startAftercareReading(t, q, nil) }

// startAftercareReading is startAftercare with the reader that object
// checks read through; nil is the manager's API reader.
func startAftercareReading(t *testing.T, q *querier, reader client.Reader) {
	t.Helper()
	s, err := scheme.New()
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := ctrl.NewManager(bed.Config, ctrl.Options{Scheme: s, Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	r := &aftercare.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("kmaint-aftercare"), Pods: reader}
	if q != nil {
		// A nil *querier in the interface would not read as nil.
		r.Prometheus = q
	}
	if err := r.SetupWithManager(mgr, controller.Options{SkipNameValidation: ptr.To(true)}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager stopped with an error: %v", err)
		}
	})
}

// querier answers every query with what the test last set.
type querier struct {
	mu  sync.Mutex
	vec model.Vector
}

func (q *querier) set(vec model.Vector) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.vec = vec
}

func (q *querier) Query(context.Context, string, time.Time) (model.Vector, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.vec, nil
}
