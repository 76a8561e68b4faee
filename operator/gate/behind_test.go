package gate_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator"
	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/harness"
	"github.com/kmaint/kmaint/test/sim"
)

// A pool's budget lowered while the operator's watch of the pools delivers
// nothing (as after the API server was away, until the informer's backoff
// ends) reaches the API server and not the cache: the gate, whose Node
// watch still works, sees requests and a stale budget of 3. It admits
// nothing until the cache has the budget of 1, says why, and then admits one
// node.
func TestAdmissionsWaitForTheCacheToHoldTheAPIServersBudget(t *testing.T) {
	g := NewWithT(t)
	createPool(t, gen.Pool("behind", intstr.FromInt32(3)))
	nodes := createNodes(t, "behind", "behind", 3)
	budget := watchBudget(t, "behind")

	poolWatches := &stalledWatches{resource: "/maintenancepools"}
	cfg := rest.CopyConfig(bed.Config)
	cfg.Wrap(poolWatches.wrap)
	op, err := sim.StartOperator(context.Background(), cfg, operator.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { g.Expect(op.Stop()).To(Succeed()) })
	t.Cleanup(poolWatches.release) // before the operator stops: its watch must end
	g.Eventually(func(g Gomega) int32 { return getPool(g, "behind").Status.MaxUnavailable }, timeout).Should(BeEquivalentTo(3))

	poolWatches.stall()
	harness.PatchPool(g, bed, "behind", func(p *v1alpha1.MaintenancePool) {
		one := intstr.FromInt32(1)
		p.Spec.MaxUnavailable = &one
	})
	for _, n := range nodes {
		request(t, n, "b"+n, time.Now())
	}
	admitted := func(g Gomega) int {
		k := 0
		for _, n := range nodes {
			if _, ok := getNode(g, n).Annotations[protocol.Admitted]; ok {
				k++
			}
		}
		return k
	}
	g.Eventually(func(g Gomega) {
		g.Expect(admitted(g)).To(BeZero(), "nothing admitted from the stale budget")
		c := meta.FindStatusCondition(getPool(g, "behind").Status.Conditions, v1alpha1.BlockedCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(v1alpha1.CacheBehindReason))
		g.Expect(c.Message).To(ContainSubstring("MaintenancePool behind's spec changed at the API server (generation 2), and the operator's cache has generation 1"))
	}, timeout).Should(Succeed())
	g.Expect(admitted(g)).To(BeZero())

	poolWatches.release()
	g.Eventually(admitted, timeout).Should(Equal(1))
	g.Consistently(admitted, 2*time.Second).Should(Equal(1), "the budget of 1 holds the others")
	most, _ := budget.MostUnavailable()
	g.Expect(most).To(Equal(1))
	c := meta.FindStatusCondition(getPool(g, "behind").Status.Conditions, v1alpha1.BlockedCondition)
	g.Expect(c.Reason).To(Equal(v1alpha1.BudgetExhaustedReason))
}

// stalledWatches holds back what the operator's watches of one resource
// deliver while stalled: their events wait in the connection until release,
// as they wait for a watch that is not there yet. Lists and reads pass.
type stalledWatches struct {
	resource string

	mu      sync.Mutex
	stalled chan struct{} // closed by release; nil while not stalled
}

func (s *stalledWatches) stall() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stalled == nil {
		s.stalled = make(chan struct{})
	}
}

func (s *stalledWatches) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stalled != nil {
		close(s.stalled)
		s.stalled = nil
	}
}

func (s *stalledWatches) wait() {
	s.mu.Lock()
	ch := s.stalled
	s.mu.Unlock()
	if ch != nil {
		<-ch
	}
}

func (s *stalledWatches) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if err != nil || !strings.HasSuffix(req.URL.Path, s.resource) || req.URL.Query().Get("watch") != "true" {
			return resp, err
		}
		resp.Body = stallingBody{ReadCloser: resp.Body, watches: s}
		return resp, nil
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// stallingBody hands over what it read only when its watches are not
// stalled: a read under way when the stall begins holds its event too.
type stallingBody struct {
	io.ReadCloser
	watches *stalledWatches
}

func (b stallingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.watches.wait()
	return n, err
}
