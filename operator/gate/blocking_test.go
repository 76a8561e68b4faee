package gate_test

import (
	"context"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/scheme"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/aftercare"
	"github.com/kmaint/kmaint/operator/drain"
	"github.com/kmaint/kmaint/operator/gate"
	"github.com/kmaint/kmaint/operator/index"
	"github.com/kmaint/kmaint/operator/maintenance"
	"github.com/kmaint/kmaint/policies"
	"github.com/kmaint/kmaint/policies/promapi"
	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/harness"
	"github.com/kmaint/kmaint/test/promtest"
)

// gateOptions are what these tests set on the gate that the operator's
// options do not reach.
type gateOptions struct {
	prometheus policies.Querier
	clock      clock.PassiveClock
	interval   time.Duration
	// pods lists nodes' pods; nil is the manager's API reader.
	pods client.Reader
	// daemonPods lists failed daemon pods for aftercare; nil is the API server.
	daemonPods  client.Reader
	podInterval time.Duration
	// drainer drains nodes; nil is the real one.
	drainer gate.Drainer
}

// startGate runs the gate and the maintenance controller, as the operator
// wires them, with a Querier and a clock of the test's, until the test ends.
func startGate(t *testing.T, opts gateOptions) { startStoppableGate(t, opts) }

// startStoppableGate is startGate, and returns what stops it as an
// operator killed would stop: the test may start another.
func startStoppableGate(t *testing.T, opts gateOptions) (stop func()) {
	t.Helper()
	if opts.clock == nil {
		opts.clock = clock.RealClock{}
	}
	s, err := scheme.New()
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := ctrl.NewManager(bed.Config, ctrl.Options{Scheme: s, Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	copts := controller.Options{SkipNameValidation: ptr.To(true)}
	if opts.drainer == nil {
		opts.drainer = &drain.Drainer{Client: kubernetes.NewForConfigOrDie(bed.Config)}
	}
	g := &gate.Reconciler{
		Client:                mgr.GetClient(),
		Drainer:               opts.drainer,
		Recorder:              mgr.GetEventRecorder("kmaint-gate"),
		Clock:                 opts.clock,
		DrainPollInterval:     200 * time.Millisecond,
		Prometheus:            opts.prometheus,
		BlockingQueryInterval: opts.interval,
		Pods:                  opts.pods,
		BlockingPodInterval:   opts.podInterval,
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := index.Setup(ctx, mgr.GetFieldIndexer()); err != nil {
		t.Fatal(err)
	}
	if err := g.SetupWithManager(mgr, copts); err != nil {
		t.Fatal(err)
	}
	// Aftercare completes and settles the nodes the gate approved and halts the pool
	// when a check fails, which the gate then honours.
	ac := &aftercare.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("kmaint-aftercare"), Clock: opts.clock,
		Prometheus: opts.prometheus, Pods: opts.daemonPods}
	if err := ac.SetupWithManager(mgr, copts); err != nil {
		t.Fatal(err)
	}
	m := &maintenance.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("kmaint-maintenance"), Clock: opts.clock}
	if err := m.SetupWithManager(ctx, mgr, copts); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("manager stopped with an error: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// fakeQuerier answers every query with what the test last set, and counts
// the queries.
type fakeQuerier struct {
	mu     sync.Mutex
	result model.Vector
	err    error
	calls  int
}

func (f *fakeQuerier) Query(context.Context, string, time.Time) (model.Vector, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	return f.result, f.err
}

func (f *fakeQuerier) set(result model.Vector, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.result, f.err = result, err
}

func (f *fakeQuerier) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

func poolWithQuery(name, query string) *v1alpha1.MaintenancePool {
	pool := gen.Pool(name, intstr.FromInt32(2))
	pool.Spec.BlockingQueries = []v1alpha1.BlockingQuery{{Name: "critical-alerts", Query: query}}
	return pool
}

// expectBlocked waits for the pool's Blocked condition to carry reason and
// every one of the substrings.
func expectBlocked(g Gomega, pool, reason string, substrings ...string) {
	g.Eventually(func(g Gomega) {
		c := meta.FindStatusCondition(getPool(g, pool).Status.Conditions, v1alpha1.BlockedCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(reason), "message %q", c.Message)
		for _, s := range substrings {
			g.Expect(c.Message).To(ContainSubstring(s))
		}
	}, timeout).Should(Succeed())
}

func TestBlockingQueryHoldsAdmissionsWhileItReturnsResults(t *testing.T) {
	g := NewWithT(t)
	createPool(t, poolWithQuery("bq", `ALERTS{severity="critical"}`))
	nodes := createNodes(t, "bq", "bq", 2)
	daemons := runDaemons(t, "bq", false)
	q := &fakeQuerier{}
	q.set(model.Vector{{Metric: model.Metric{"alertname": "NodeDown", "severity": "critical"}, Value: 1}}, nil)
	startGate(t, gateOptions{prometheus: q, interval: 200 * time.Millisecond})

	request(t, nodes[0], "bq-0", time.Now())
	expectBlocked(g, "bq", v1alpha1.BlockingQueryReason, `"critical-alerts"`, "1 series", `alertname="NodeDown"`)
	g.Expect(getNode(g, nodes[0]).Annotations).NotTo(HaveKey(protocol.Admitted))
	g.Eventually(func(g Gomega) []string { return harness.EventReasons(g, bed, "MaintenancePool", "bq", "Normal") }, timeout).Should(ContainElement("BlockingQueryStarted"))
	// The waiting request's NodeMaintenance quotes the query.
	g.Eventually(func(g Gomega) {
		nm := hostMaintenance(g, nodes[0])
		c := meta.FindStatusCondition(nm.Status.Conditions, v1alpha1.WaitingCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(v1alpha1.BlockingQueryReason))
		g.Expect(c.Message).To(ContainSubstring("critical-alerts"))
	}, timeout).Should(Succeed())

	// The alert resolves: admissions resume.
	q.set(nil, nil)
	g.Eventually(func(g Gomega) { expectRebootedOnce(g, nodes[0], false) }, timeout).Should(Succeed())
	g.Expect(daemons.Count(nodes[1])).To(Equal(0))
	g.Eventually(func(g Gomega) []string { return harness.EventReasons(g, bed, "MaintenancePool", "bq", "Normal") }, timeout).Should(ContainElement("BlockingQueryCleared"))
	// The status no longer names the query, or waiting requests would
	// quote it still.
	g.Eventually(func(g Gomega) *v1alpha1.BlockingQueryStatus { return getPool(g, "bq").Status.BlockingQuery }, timeout).Should(BeNil())
}

// hostMaintenance returns the NodeMaintenance recorded for the node's host
// request.
func hostMaintenance(g Gomega, node string) *v1alpha1.NodeMaintenance {
	var list v1alpha1.NodeMaintenanceList
	g.Expect(bed.Client.List(context.Background(), &list)).To(Succeed())
	for i := range list.Items {
		if nm := &list.Items[i]; nm.Spec.NodeName == node && nm.Spec.Source == v1alpha1.SourceHost {
			return nm
		}
	}
	g.Expect(list.Items).To(ContainElement(HaveField("Spec.NodeName", node)), "a NodeMaintenance for node %s", node)
	return nil
}

// A query asked only when it decides something, and not more than once per
// interval however often the pool reconciles.
func TestBlockingQueryIsAskedOnlyWhenItMatters(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	createPool(t, poolWithQuery("bq-once", "up == 0"))
	nodes := createNodes(t, "bq-once", "bq-once", 2)
	q := &fakeQuerier{}
	q.set(model.Vector{{Metric: model.Metric{"job": "db"}, Value: 0}}, nil)
	startGate(t, gateOptions{prometheus: q, interval: time.Hour})

	// No request, no query.
	g.Eventually(func(g Gomega) int32 { return getPool(g, "bq-once").Status.Nodes }, timeout).Should(BeEquivalentTo(2))
	g.Expect(q.count()).To(Equal(0))

	request(t, nodes[0], "once-0", time.Now())
	expectBlocked(g, "bq-once", v1alpha1.BlockingQueryReason, `job="db"`)
	// More events for the pool: a second request, a label on a node.
	request(t, nodes[1], "once-1", time.Now())
	g.Eventually(func(g Gomega) int32 { return getPool(g, "bq-once").Status.PendingRequests }, timeout).Should(BeEquivalentTo(2))
	n := getNode(g, nodes[1])
	n.Labels["touched"] = "yes"
	g.Expect(bed.Client.Update(ctx, n)).To(Succeed())
	g.Eventually(func(g Gomega) { expectBlocked(g, "bq-once", v1alpha1.BlockingQueryReason) }, timeout).Should(Succeed())
	g.Expect(q.count()).To(Equal(1), "one evaluation per interval")
}

func TestFailingBlockingQueriesBlock(t *testing.T) {
	cases := map[string]struct {
		// pool names the test's pool and nodes.
		pool string
		// querier answers the pool's query; nil is no Prometheus configured.
		querier func(t *testing.T) policies.Querier
		query   string
		// wantMessage are substrings of the Blocked condition's message.
		wantMessage []string
	}{
		"no Prometheus configured": {
			pool:        "bqf-none",
			querier:     func(*testing.T) policies.Querier { return nil },
			query:       "up",
			wantMessage: []string{"no Prometheus URL configured"},
		},
		"Prometheus unreachable": {
			pool: "bqf-unreachable",
			querier: func(t *testing.T) policies.Querier {
				p, err := promapi.New("http://127.0.0.1:1", 2*time.Second)
				if err != nil {
					t.Fatal(err)
				}
				return p
			},
			query:       "up",
			wantMessage: []string{`"critical-alerts"`, "unreachable", "127.0.0.1:1"},
		},
		"a query Prometheus refuses": {
			pool:        "bqf-refused",
			querier:     func(t *testing.T) policies.Querier { return promtest.Start(t, promtest.Options{}).Querier() },
			query:       `sum(rate(up[5m]`,
			wantMessage: []string{`"critical-alerts"`, "refused by Prometheus", "parse error"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			pool := tc.pool
			createPool(t, poolWithQuery(pool, tc.query))
			node := createNodes(t, pool, pool, 1)[0]
			startGate(t, gateOptions{prometheus: tc.querier(t), interval: 200 * time.Millisecond})
			request(t, node, pool+"-r", time.Now())
			expectBlocked(g, pool, v1alpha1.BlockingQueryFailedReason, tc.wantMessage...)
			g.Eventually(func(g Gomega) []string { return harness.EventReasons(g, bed, "MaintenancePool", pool, "Warning") }, timeout).Should(ContainElement(v1alpha1.BlockingQueryFailedReason))
			g.Expect(getNode(g, node).Annotations).NotTo(HaveKey(protocol.Admitted))
			g.Expect(getPool(g, pool).Status.PendingRequests).To(BeEquivalentTo(1))
		})
	}
}

// A real Prometheus: a blocking query over a scraped series blocks while the
// series is above zero, and lets the reboot through once it is not.
func TestBlockingQueryOnARealPrometheus(t *testing.T) {
	g := NewWithT(t)
	exp := promtest.NewExporter(t)
	exp.Set("kmaint_test_incident", map[string]string{"service": "payments"}, 1)
	srv := promtest.Start(t, promtest.Options{Targets: []string{exp.Address()}})
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if _, err := srv.WaitForValue(ctx, "kmaint_test_incident > 0", func(v model.Vector) bool { return len(v) == 1 }); err != nil {
		t.Fatal(err)
	}
	createPool(t, poolWithQuery("bq-prom", "kmaint_test_incident > 0"))
	node := createNodes(t, "bq-prom", "bq-prom", 1)[0]
	runDaemons(t, "bq-prom", true)
	startGate(t, gateOptions{prometheus: srv.Querier(), interval: 200 * time.Millisecond})

	request(t, node, "prom-0", time.Now())
	expectBlocked(g, "bq-prom", v1alpha1.BlockingQueryReason, `service="payments"`)
	g.Expect(getNode(g, node).Annotations).NotTo(HaveKey(protocol.Admitted))

	exp.Set("kmaint_test_incident", map[string]string{"service": "payments"}, 0)
	g.Eventually(func(g Gomega) { expectRebootedOnce(g, node, false) }, timeout).Should(Succeed())
}
