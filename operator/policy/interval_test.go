package policy_test

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/harness"
)

// One query per policy per interval, however many nodes there are and
// however often the policy reconciles for other reasons (here: a request
// raised for each of 12 nodes, one at a time as the cap frees).
func TestOneQueryPerInterval(t *testing.T) {
	g := NewWithT(t)
	m := startMetrics(t)
	nodes := harness.CreateNodes(t, bed, "perint", "perint", 12)
	for _, n := range nodes {
		m.set(t, "perint", n, 0.99)
	}
	// Count the queries on their way to Prometheus.
	target, err := url.Parse(m.prom.URL())
	g.Expect(err).NotTo(HaveOccurred())
	var queries atomic.Int64
	proxy := httputil.NewSingleHostReverseProxy(target)
	counting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/api/v1/query") {
			queries.Add(1)
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(counting.Close)
	startOperator(t, counting.URL, nil)

	const interval = 2 * time.Second
	p := newPolicy("perint", "perint", promTrigger(query("perint"), "0.9", 0))
	p.Spec.Prometheus.Interval = &metav1.Duration{Duration: interval}
	p.Spec.MaxConcurrentRequests = &intstr.IntOrString{Type: intstr.Int, IntVal: 12}
	start := time.Now()
	harness.CreateTemporary(t, bed, p)
	g.Eventually(func(g Gomega) {
		g.Expect(harness.PolicyMaintenances(g, bed, "perint")).To(HaveLen(12))
		g.Expect(condition(g, "perint", v1alpha1.ReadyCondition).Reason).To(Equal("Evaluated"))
	}, timeout).Should(Succeed())
	// Wait for evaluations several intervals on, the policy reconciling
	// meanwhile as its requests change.
	g.Eventually(func(g Gomega) {
		g.Expect(harness.GetPolicy(g, bed, "perint").Status.LastEvaluationTime.Time).To(BeTemporally(">", start.Add(4*interval)))
	}, timeout).Should(Succeed())
	elapsed, n := time.Since(start), queries.Load()
	t.Logf("%d queries in %s at an interval of %s", n, elapsed, interval)
	g.Expect(n).To(BeNumerically(">=", 2), "the policy keeps evaluating")
	g.Expect(n).To(BeNumerically("<=", int64(elapsed/interval)+1), "never more than one query per interval")
}
