package policy_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/harness"
)

// A change of another source's request that comes while a policy
// evaluates is not lost. The policy's candidate is held back by an open API
// request; that request goes while the policy's first evaluation waits for
// Prometheus, after it read the open requests. The evaluation ends with the
// candidate held, and the policy must come back on its own and raise: its
// interval is an hour, so nothing else would evaluate it in the test's
// time.
func TestChangeDuringEvaluationIsNotLost(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	m := startMetrics(t)
	nodes := harness.CreateNodes(t, bed, "midway", "midway", 1)
	m.set(t, "midway", nodes[0], 0.95)
	api := &v1alpha1.NodeMaintenance{
		ObjectMeta: metav1.ObjectMeta{Name: "midway-api"},
		Spec:       v1alpha1.NodeMaintenanceSpec{NodeName: nodes[0], Type: v1alpha1.RebootMaintenance, Source: v1alpha1.SourceAPI, Reason: "held"},
	}
	harness.CreateTemporary(t, bed, api)

	prom := holdQueries(t, m.prom.URL())
	startOperator(t, prom.url, nil)
	p := newPolicy("midway", "midway", promTrigger(query("midway"), "0.9", 0))
	p.Spec.Prometheus.Interval = &metav1.Duration{Duration: time.Hour}
	harness.CreateTemporary(t, bed, p)

	select {
	case <-prom.asked:
	case <-time.After(timeout):
		t.Fatal("the policy did not ask Prometheus")
	}
	g.Expect(bed.Client.Delete(ctx, api)).To(Succeed())
	// Gone from the API server; the operator's watch hears of it at once,
	// while the evaluation still waits for its query.
	g.Eventually(func() bool {
		return apierrors.IsNotFound(bed.Client.Get(ctx, client.ObjectKeyFromObject(api), &v1alpha1.NodeMaintenance{}))
	}, timeout).Should(BeTrue())
	prom.release()

	g.Eventually(func(g Gomega) {
		g.Expect(harness.PolicyMaintenances(g, bed, "midway")).To(HaveKey(nodes[0]))
		g.Expect(harness.GetPolicy(g, bed, "midway").Status.RequestsRaised).To(BeEquivalentTo(1))
	}, timeout).Should(Succeed(), "the request's going, seen while the policy evaluated, was lost")
}

// heldQueries passes queries to a real Prometheus, holding them until
// release; asked is closed when the first arrives.
type heldQueries struct {
	url     string
	asked   chan struct{}
	release func()
}

func holdQueries(t *testing.T, target string) *heldQueries {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	asked, released := make(chan struct{}), make(chan struct{})
	var askedOnce, releaseOnce sync.Once
	proxy := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		askedOnce.Do(func() { close(asked) })
		select {
		case <-released:
		case <-r.Context().Done():
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	release := func() { releaseOnce.Do(func() { close(released) }) }
	t.Cleanup(srv.Close)
	t.Cleanup(release)
	return &heldQueries{url: srv.URL, asked: asked, release: release}
}
