package policy_test

import (
	"context"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator"
	"github.com/kmaint/kmaint/test/harness"
	"github.com/kmaint/kmaint/test/promtest"
	"github.com/kmaint/kmaint/test/testbed"
)

var bed *testbed.Bed

func TestMain(m *testing.M) { os.Exit(harness.Main(m, &bed)) }

const timeout = 30 * time.Second

// startOperator runs the whole operator, asking the given Prometheus (if
// any) on the given clock (if any), until the returned stop or the test's
// end.
func startOperator(t *testing.T, promURL string, clk clock.PassiveClock) (stop func()) {
	t.Helper()
	return harness.StartOperatorWith(t, bed, operator.Options{PrometheusURL: promURL, Clock: clk})
}

// metrics is a real Prometheus scraping an exporter the test moves, every
// second.
type metrics struct {
	prom *promtest.Server
	exp  *promtest.Exporter
}

func startMetrics(t *testing.T) metrics {
	exp := promtest.NewExporter(t)
	return metrics{prom: promtest.Start(t, promtest.Options{Targets: []string{exp.Address()}}), exp: exp}
}

// set sets node's value of the test's metric and waits until Prometheus
// has scraped it.
func (m metrics) set(t *testing.T, test, node string, v float64) {
	t.Helper()
	labels := map[string]string{"test": test, "node": node}
	m.exp.Set("kmaint_test_value", labels, v)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if _, err := m.prom.WaitForValue(ctx, `kmaint_test_value{test="`+test+`"}`, func(vec model.Vector) bool {
		got, ok := promtest.Value(vec, labels)
		return ok && got == v
	}); err != nil {
		t.Fatal(err)
	}
}

func query(test string) string { return `kmaint_test_value{test="` + test + `"}` }

func newPolicy(name, pool string, trigger func(*v1alpha1.RebootPolicySpec)) *v1alpha1.RebootPolicy {
	p := &v1alpha1.RebootPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.RebootPolicySpec{
			NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"pool": pool}},
		},
	}
	trigger(&p.Spec)
	return p
}

func promTrigger(q, threshold string, forDur time.Duration) func(*v1alpha1.RebootPolicySpec) {
	return func(s *v1alpha1.RebootPolicySpec) {
		s.Prometheus = &v1alpha1.PrometheusTrigger{
			Query:     q,
			Threshold: threshold,
			For:       &metav1.Duration{Duration: forDur},
			Interval:  &metav1.Duration{Duration: time.Second},
		}
	}
}

func condition(g Gomega, name, condType string) *metav1.Condition {
	c := meta.FindStatusCondition(harness.GetPolicy(g, bed, name).Status.Conditions, condType)
	g.Expect(c).NotTo(BeNil(), "condition %s of policy %s", condType, name)
	return c
}

func candidate(p *v1alpha1.RebootPolicy, node string) *v1alpha1.Candidate {
	for i := range p.Status.Candidates {
		if p.Status.Candidates[i].Node == node {
			return &p.Status.Candidates[i]
		}
	}
	return nil
}
