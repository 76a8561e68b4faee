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
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

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

	poolWatches := startOperatorWithStalledWatches(t, "/maintenancepools")
	g.Eventually(func(g Gomega) int32 { return getPool(g, "behind").Status.MaxUnavailable }, timeout).Should(BeEquivalentTo(3))

	poolWatches.stall()
	harness.PatchPool(g, bed, "behind", func(p *v1alpha1.MaintenancePool) {
		one := intstr.FromInt32(1)
		p.Spec.MaxUnavailable = &one
	})
	for _, n := range nodes {
		request(t, n, "b"+n, time.Now())
	}
	admitted := func(g Gomega) int { return annotated(g, nodes, protocol.Admitted) }
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

// Drains that end while the pool's watch delivers nothing: the nodes
// admitted under a budget of 3, lowered to 1 since at the API server, are not
// approved from the stale budget; the drained nodes wait, and the pool says
// why, until the cache has the budget of 1, which approves one.
func TestApprovalsWaitForTheCacheToHoldTheAPIServersBudget(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	// The drains end when the pods' budget goes.
	nodes := drainsHeldByPodBudget(t, "behindapp", 3)
	poolWatches := startOperatorWithStalledWatches(t, "/maintenancepools")
	for i, n := range nodes {
		request(t, n, "ba"+n, time.Now().Add(time.Duration(i)*time.Second))
	}
	g.Eventually(func(g Gomega) int { return annotated(g, nodes, protocol.Admitted) }, timeout).Should(Equal(3))

	poolWatches.stall()
	harness.PatchPool(g, bed, "behindapp", func(p *v1alpha1.MaintenancePool) {
		one := intstr.FromInt32(1)
		p.Spec.MaxUnavailable = &one
	})
	g.Expect(bed.Client.DeleteAllOf(ctx, &policyv1.PodDisruptionBudget{}, client.InNamespace("behindapp"))).To(Succeed())
	approved := func(g Gomega) int { return annotated(g, nodes, protocol.RebootApproved) }
	g.Eventually(func(g Gomega) {
		g.Expect(approved(g)).To(BeZero(), "nothing approved from the stale budget")
		c := meta.FindStatusCondition(getPool(g, "behindapp").Status.Conditions, v1alpha1.DrainingCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Message).To(ContainSubstring("drained; its approval waits: MaintenancePool behindapp's spec changed at the API server"))
	}, timeout).Should(Succeed())
	g.Expect(approved(g)).To(BeZero())

	poolWatches.release()
	g.Eventually(approved, timeout).Should(Equal(1))
	g.Consistently(approved, 2*time.Second).Should(Equal(1), "the budget of 1 holds the others' approvals")
}

// startOperatorWithStalledWatches starts the operator with its watches of
// resource (a path's end, e.g. "/maintenancepools") held while stalled.
func startOperatorWithStalledWatches(t *testing.T, resource string) *stalledWatches {
	t.Helper()
	watches := &stalledWatches{resource: resource}
	cfg := rest.CopyConfig(bed.Config)
	cfg.Wrap(watches.wrap)
	op, err := sim.StartOperator(context.Background(), cfg, operator.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := op.Stop(); err != nil {
			t.Errorf("operator stopped with an error: %v", err)
		}
	})
	t.Cleanup(watches.release) // before the operator stops: its watches must end
	return watches
}

// annotated counts the nodes that have the annotation.
func annotated(g Gomega, nodes []string, annotation string) int {
	k := 0
	for _, n := range nodes {
		if _, ok := getNode(g, n).Annotations[annotation]; ok {
			k++
		}
	}
	return k
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
