package policy_test

import (
	"context"
	"crypto/tls"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator"
	"github.com/kmaint/kmaint/test/harness"
)

// alertPolicy creates a policy named name for alert KernelDeadlock on the
// nodes of pool name, with every node allowed a request at once.
func alertPolicy(t *testing.T, name string, change func(*v1alpha1.RebootPolicySpec)) {
	t.Helper()
	p := newPolicy(name, name, func(s *v1alpha1.RebootPolicySpec) {
		s.Alert = &v1alpha1.AlertTrigger{AlertName: "KernelDeadlock"}
		s.MaxConcurrentRequests = &intstr.IntOrString{Type: intstr.String, StrVal: "100%"}
		if change != nil {
			change(s)
		}
	})
	harness.CreateTemporary(t, bed, p)
	seen(t, name)
}

// seen waits until the operator has evaluated the policy: its cache, where
// the webhook looks policies up, has it. An alert received before then
// would find no policy to record it on (until Alertmanager sends it again).
func seen(t *testing.T, name string) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(harness.GetPolicy(g, bed, name).Status.Conditions).NotTo(BeEmpty())
	}, timeout).Should(Succeed())
}

// setSuspend suspends or resumes a policy.
func setSuspend(g Gomega, name string, suspend bool) {
	p := harness.GetPolicy(g, bed, name)
	base := p.DeepCopy()
	p.Spec.Suspend = suspend
	g.Expect(bed.Client.Patch(context.Background(), p, client.MergeFrom(base))).To(Succeed())
}

// noRequest asserts the node gets no request of the policy for a few
// seconds, long enough for one to appear: the tests that see one appear
// take a fraction of a second.
func noRequest(g Gomega, policy, node string) {
	g.Consistently(func(g Gomega) {
		g.Expect(harness.PolicyMaintenances(g, bed, policy)[node]).To(BeEmpty())
	}, 3*time.Second, 100*time.Millisecond).Should(Succeed(), "node %s got a request", node)
}

// requested waits until the node has n requests of the policy.
func requested(g Gomega, policy, node string, n int) {
	g.Eventually(func(g Gomega) {
		g.Expect(harness.PolicyMaintenances(g, bed, policy)[node]).To(HaveLen(n))
	}, timeout, 50*time.Millisecond).Should(Succeed(), "requests of node %s", node)
}

// An alert that has ended raises no request: a firing alert whose endsAt
// has passed is ended, as a resolved one is. The live alert beside it
// raises one.
func TestAlertEndedRaisesNothing(t *testing.T) {
	g := NewWithT(t)
	nodes := harness.CreateNodes(t, bed, "ended", "ended", 2)
	w := startWebhook(t, operator.Options{})
	alertPolicy(t, "ended", nil)

	ended := alert("firing", "KernelDeadlock", nodes[0], "critical")
	ended["startsAt"] = time.Now().Add(-time.Hour).UTC().Format(time.RFC3339Nano)
	ended["endsAt"] = time.Now().Add(-time.Minute).UTC().Format(time.RFC3339Nano)
	w.send(t, ended, alert("firing", "KernelDeadlock", nodes[1], "critical"))

	requested(g, "ended", nodes[1], 1)
	noRequest(g, "ended", nodes[0])
	eps := record(g, "ended")[nodes[0]]
	g.Expect(eps).To(HaveLen(1))
	g.Expect(eps[0].Ended.IsZero()).To(BeFalse(), "the ended alert is recorded as firing: %+v", eps[0])
}

// A firing record expires when no notification renews it within the TTL:
// one old POST does not keep a node a candidate. The same alert received
// again, as Alertmanager resends one that still fires, counts again.
func TestAlertFiringRecordExpires(t *testing.T) {
	g := NewWithT(t)
	nodes := harness.CreateNodes(t, bed, "expire", "expire", 1)
	w := startWebhook(t, operator.Options{AlertWebhookFiringTTL: 2 * time.Second})
	alertPolicy(t, "expire", func(s *v1alpha1.RebootPolicySpec) { s.Suspend = true })

	firing := alert("firing", "KernelDeadlock", nodes[0], "critical")
	w.send(t, firing)
	var until time.Time
	g.Eventually(func(g Gomega) {
		eps := record(g, "expire")[nodes[0]]
		g.Expect(eps).To(HaveLen(1))
		until = eps[0].Until
	}, timeout).Should(Succeed())
	g.Expect(until).To(BeTemporally("~", time.Now().Add(2*time.Second), 2*time.Second))
	g.Eventually(func() bool { return time.Now().After(until) }, timeout, 50*time.Millisecond).Should(BeTrue())

	setSuspend(g, "expire", false)
	g.Eventually(func(g Gomega) {
		g.Expect(condition(g, "expire", v1alpha1.ReadyCondition).Status).To(Equal(metav1.ConditionTrue))
	}, timeout).Should(Succeed())
	noRequest(g, "expire", nodes[0])
	g.Expect(harness.GetPolicy(g, bed, "expire").Status.Candidates).To(BeEmpty())

	// Alertmanager's next notification of the alert, same episode.
	w.send(t, firing)
	requested(g, "expire", nodes[0], 1)
}

// An alert starting in year 9999 is refused with a message naming the
// alert and the field, and raises nothing; the good alert of the same
// payload raises its request.
func TestAlertAbsurdStartRefused(t *testing.T) {
	g := NewWithT(t)
	nodes := harness.CreateNodes(t, bed, "absurd", "absurd", 2)
	w := startWebhook(t, operator.Options{})
	alertPolicy(t, "absurd", nil)

	bad := alert("firing", "KernelDeadlock", nodes[0], "critical")
	bad["startsAt"] = "9999-01-01T00:00:00Z"
	code, body := w.post(t, "s3cret", alert("firing", "KernelDeadlock", nodes[1], "critical"), bad)
	g.Expect(code).To(Equal(http.StatusBadRequest))
	g.Expect(body).To(HavePrefix("refused 1 of 2 alerts (the other 1 were taken):\nalerts[1] (alertname \"KernelDeadlock\", fingerprint "))
	g.Expect(body).To(ContainSubstring("): startsAt: 9999-01-01T00:00:00Z is in the future, more than 5m0s ahead of the receiver's clock"))

	requested(g, "absurd", nodes[1], 1)
	noRequest(g, "absurd", nodes[0])
	g.Expect(record(g, "absurd")).NotTo(HaveKey(nodes[0]))
}

// A replayed payload re-arms nothing: not after the reboot it asked for
// completed (nor does the record of the alert, still firing, ask again
// once the cooldown is over), and not after the alert was resolved.
func TestAlertReplayRaisesNothing(t *testing.T) {
	nodes := harness.CreateNodes(t, bed, "replay", "replay", 2)
	w := startWebhook(t, operator.Options{})
	harness.RunDaemons(t, bed, "replay", true)
	stop := harness.RaiseMaintenances(t, bed, nodes[0])
	defer stop()
	alertPolicy(t, "replay", func(s *v1alpha1.RebootPolicySpec) {
		s.Cooldown = &metav1.Duration{Duration: time.Second}
	})

	t.Run("after the reboot", func(t *testing.T) {
		g := NewWithT(t)
		firing := alert("firing", "KernelDeadlock", nodes[0], "critical")
		w.send(t, firing)
		g.Eventually(func(g Gomega) {
			reqs := harness.PolicyMaintenances(g, bed, "replay")[nodes[0]]
			g.Expect(reqs).To(HaveLen(1))
			g.Expect(reqs[0].Status.Phase).To(Equal(v1alpha1.PhaseSucceeded))
		}, timeout).Should(Succeed())
		// The cooldown of a second is long over within the wait, and the
		// payload comes again.
		w.send(t, firing)
		g.Consistently(func(g Gomega) {
			g.Expect(harness.PolicyMaintenances(g, bed, "replay")[nodes[0]]).To(HaveLen(1))
		}, 3*time.Second, 100*time.Millisecond).Should(Succeed(), "a second request for one episode")
	})

	t.Run("after the resolution", func(t *testing.T) {
		g := NewWithT(t)
		setSuspend(g, "replay", true)
		firing := alert("firing", "KernelDeadlock", nodes[1], "critical")
		resolved := maps.Clone(firing)
		resolved["status"], resolved["endsAt"] = "resolved", time.Now().UTC().Format(time.RFC3339Nano)
		w.send(t, firing)
		w.send(t, resolved)
		g.Eventually(func(g Gomega) {
			eps := record(g, "replay")[nodes[1]]
			g.Expect(eps).To(HaveLen(1))
			g.Expect(eps[0].Ended.IsZero()).To(BeFalse())
		}, timeout).Should(Succeed())
		setSuspend(g, "replay", false)
		w.send(t, firing)
		noRequest(g, "replay", nodes[1])

		// A new episode of the alert, later, is news.
		again := alert("firing", "KernelDeadlock", nodes[1], "critical")
		again["startsAt"] = time.Now().UTC().Format(time.RFC3339Nano)
		w.send(t, again)
		requested(g, "replay", nodes[1], 1)
	})
}

// A record of alerts that cannot be read (written by hand) raises nothing
// and says why; the next notification replaces it.
func TestAlertRecordDamaged(t *testing.T) {
	g := NewWithT(t)
	nodes := harness.CreateNodes(t, bed, "damaged", "damaged", 1)
	w := startWebhook(t, operator.Options{})
	alertPolicy(t, "damaged", nil)
	p := harness.GetPolicy(g, bed, "damaged")
	base := p.DeepCopy()
	p.Annotations = map[string]string{v1alpha1.FiringAlertsAnnotation: `{"` + nodes[0] + `":[{"fingerprint":"x"}]}`}
	g.Expect(bed.Client.Patch(context.Background(), p, client.MergeFrom(base))).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := condition(g, "damaged", v1alpha1.ReadyCondition)
		g.Expect(c.Reason).To(Equal("EvaluationFailed"))
		g.Expect(c.Message).To(ContainSubstring(`annotation kmaint.io/firing-alerts: node "` + nodes[0] + `": episode 0 has no startsAt`))
	}, timeout).Should(Succeed())
	noRequest(g, "damaged", nodes[0])

	w.send(t, alert("firing", "KernelDeadlock", nodes[0], "critical"))
	requested(g, "damaged", nodes[0], 1)
}

// The operator serves the webhook over TLS by default, with the certificate
// it keeps in a Secret; plain HTTP to it gets nothing. A restarted operator
// serves the same certificate.
func TestAlertWebhookTLSByDefault(t *testing.T) {
	g := NewWithT(t)
	harness.CreateTemporary(t, bed, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "alert-token"},
		StringData: map[string]string{"token": "s3cret"},
	})
	addr := harness.FreeAddr(t)
	opts := operator.Options{AlertWebhookAddr: addr, AlertWebhookTokenSecret: "default/alert-token"}
	stop := harness.StartOperatorWith(t, bed, opts)
	w := webhook{url: "https://" + addr + "/alerts", client: tlsClient(g)}
	var first []byte
	g.Eventually(func(g Gomega) {
		first = servedCert(g, w)
	}, timeout).Should(Succeed())

	// Plain HTTP reaches no handler: Go's TLS server answers 400 to it.
	plain := webhook{url: "http://" + addr + "/alerts", client: http.DefaultClient}
	code, body := plain.post(t, "s3cret", alert("firing", "KernelDeadlock", "n", "critical"))
	g.Expect(code).To(Equal(http.StatusBadRequest))
	g.Expect(body).To(ContainSubstring("HTTPS"))

	stop()
	harness.StartOperatorWith(t, bed, opts)
	g.Eventually(func(g Gomega) {
		g.Expect(servedCert(g, w)).To(Equal(first), "a restarted operator serves another certificate")
	}, timeout).Should(Succeed())
}

// With --alert-webhook-insecure-http, and only then, the webhook serves
// plain HTTP, and makes no certificate.
func TestAlertWebhookPlainHTTPWhenAsked(t *testing.T) {
	g := NewWithT(t)
	const ns = "alert-plain"
	if err := bed.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	harness.CreateTemporary(t, bed, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "alert-token"},
		StringData: map[string]string{"token": "s3cret"},
	})
	addr := harness.FreeAddr(t)
	harness.StartOperatorWith(t, bed, operator.Options{
		AlertWebhookAddr: addr, AlertWebhookTokenSecret: ns + "/alert-token", AlertWebhookInsecureHTTP: true,
	})
	w := webhook{url: "http://" + addr + "/alerts", client: http.DefaultClient}
	g.Eventually(func() int { code, _, _ := w.try("s3cret"); return code }, timeout).Should(Equal(http.StatusOK))
	err := bed.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: operator.DefaultAlertCertSecret}, &corev1.Secret{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "certificate Secret with plain HTTP: %v", err)
}

// servedCert is the certificate the webhook presents, after a TLS
// handshake that trusts only the Secret's CA.
func servedCert(g Gomega, w webhook) []byte {
	cfg := w.client.Transport.(*http.Transport).TLSClientConfig
	conn, err := tls.Dial("tcp", strings.TrimSuffix(strings.TrimPrefix(w.url, "https://"), "/alerts"), cfg)
	g.Expect(err).NotTo(HaveOccurred())
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].Raw
}
