package notify_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/kmaint/kmaint/operator/notify"
	"github.com/kmaint/kmaint/test/chatrecv"
	"github.com/kmaint/kmaint/test/harness"
	"github.com/kmaint/kmaint/test/testbed"
)

var bed *testbed.Bed

func TestMain(m *testing.M) { os.Exit(harness.Main(m, &bed)) }

const timeout = 30 * time.Second

// TestTheAPIServerSelectsEventsByReportingController: the API server
// filters events.k8s.io Events on reportingController, so the notifier's
// watches carry kmaint's events only, whatever else namespace default holds.
func TestTheAPIServerSelectsEventsByReportingController(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	cs := clientset(t)
	mine := record(t, "kmaint-gate", "RolloutStarted", "MaintenancePool", "selector-pool", "selected")
	record(t, "someone-else", "RolloutStarted", "MaintenancePool", "selector-pool", "not selected")
	list, err := cs.EventsV1().Events(notify.EventNamespace).List(ctx, metav1.ListOptions{FieldSelector: "reportingController=kmaint-gate"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(list.Items).NotTo(BeEmpty())
	for _, e := range list.Items {
		g.Expect(e.ReportingController).To(Equal("kmaint-gate"))
	}
	g.Expect(list.Items).To(ContainElement(HaveField("Name", mine)))
}

// TestOnlyNewEventsAreSentAndARestartResendsNothing: an event stored before
// the notifier starts is not sent; a new one is; a notifier started after
// it (a restarted operator, a new leader) does not send it again.
func TestOnlyNewEventsAreSentAndARestartResendsNothing(t *testing.T) {
	g := NewWithT(t)
	recv := chatrecv.Start(t)
	opts := notify.Options{URLsFile: urlsFile(t, recv.URL()), Interval: 100 * time.Millisecond, Title: "test cluster"}
	record(t, "kmaint-gate", "RolloutStarted", "MaintenancePool", "restart-pool", "old-event, before any notifier")

	stop, _ := start(t, opts, clock.RealClock{})
	record(t, "kmaint-gate", "RolloutStarted", "MaintenancePool", "restart-pool", "first-event, after the notifier started")
	g.Eventually(recv.Texts, timeout).Should(ContainElement(ContainSubstring("first-event")))
	g.Expect(recv.Messages()[0].Title).To(Equal("test cluster"))
	g.Expect(recv.Messages()[0].Text).To(Equal("RolloutStarted, pool restart-pool: first-event, after the notifier started"))
	stop()

	start(t, opts, clock.RealClock{})
	record(t, "kmaint-gate", "RolloutFinished", "MaintenancePool", "restart-pool", "second-event, after the restart")
	// Both come from one watch, in order: once the second is sent, the
	// restarted notifier has seen the first and the old one too.
	g.Eventually(recv.Texts, timeout).Should(ContainElement(ContainSubstring("second-event")))
	all := strings.Join(recv.Texts(), "\n")
	g.Expect(strings.Count(all, "first-event")).To(Equal(1), "sent once: %q", all)
	g.Expect(all).NotTo(ContainSubstring("old-event"))
}

// TestABurstIsCoalesced: the first event goes at once; a hundred more
// within the interval make one message of MaxLines lines that counts the
// rest, sent when the interval is over.
func TestABurstIsCoalesced(t *testing.T) {
	g := NewWithT(t)
	recv := chatrecv.Start(t)
	clk := clocktesting.NewFakeClock(time.Now())
	opts := notify.Options{URLsFile: urlsFile(t, recv.URL()), Interval: time.Hour}
	_, reg := start(t, opts, clk)
	record(t, "kmaint-gate", "RolloutStarted", "MaintenancePool", "burst-pool", "the first")
	g.Eventually(recv.Texts, timeout).Should(ConsistOf("RolloutStarted, pool burst-pool: the first"))
	for i := range 100 {
		record(t, "kmaint-gate", "DrainFailed", "MaintenancePool", "burst-pool", fmt.Sprintf("drain %d", i))
	}
	g.Eventually(func() float64 { return value(g, reg, notify.EventsMetric, "reason", "DrainFailed") }, timeout).Should(Equal(100.0))
	// The clock has not moved: everything waits for the interval.
	g.Expect(recv.Requests()).To(Equal(1))
	// An event is counted before its batch says it summarized it.
	g.Eventually(func() float64 { return value(g, reg, notify.SummarizedMetric) }, timeout).Should(Equal(90.0))

	clk.Step(time.Hour)
	g.Eventually(recv.Requests, timeout).Should(Equal(2))
	text := recv.Texts()[1]
	g.Expect(strings.Split(text, "\n")).To(HaveLen(notify.DefaultMaxLines + 1))
	g.Expect(text).To(HavePrefix("Warning DrainFailed, pool burst-pool: drain 0\n"))
	g.Expect(text).To(HaveSuffix("… and 90 more (DrainFailed 90): kubectl get events -n default"))
	// The receiver has the message before the notifier counts it sent.
	g.Eventually(func() float64 { return value(g, reg, notify.MessagesMetric, "receiver", "1-generic", "result", "sent") }, timeout).Should(Equal(2.0))
}

// TestReceiversInTroubleHoldNothingUp: a receiver that fails and one that
// hangs are counted and logged; the good one gets every message on time,
// and the hanging one is skipped, not asked again, while it hangs.
func TestReceiversInTroubleHoldNothingUp(t *testing.T) {
	g := NewWithT(t)
	good, failing, hanging := chatrecv.Start(t), chatrecv.Start(t), chatrecv.Start(t)
	failing.SetMode(chatrecv.Fail)
	hanging.SetMode(chatrecv.Hang)
	opts := notify.Options{URLsFile: urlsFile(t, hanging.URL(), failing.URL(), good.URL()), Interval: 100 * time.Millisecond, SendTimeout: 300 * time.Millisecond}
	_, reg := start(t, opts, clock.RealClock{})
	metric := func(receiver, result string) func() float64 {
		return func() float64 {
			return value(g, reg, notify.MessagesMetric, "receiver", receiver, "result", result)
		}
	}

	record(t, "kmaint-daemon", "RebootLoop", "Node", "trouble-node", "one")
	g.Eventually(good.Texts, timeout).Should(ConsistOf(ContainSubstring("one")))
	g.Eventually(metric("2-generic", "failed"), timeout).Should(Equal(1.0))
	g.Eventually(metric("1-generic", "failed"), timeout).Should(Equal(1.0), "timed out")

	record(t, "kmaint-daemon", "RebootLoop", "Node", "trouble-node", "two")
	g.Eventually(good.Texts, timeout).Should(ConsistOf(ContainSubstring("one"), ContainSubstring("two")))
	g.Eventually(metric("2-generic", "failed"), timeout).Should(Equal(2.0))
	g.Eventually(metric("1-generic", "skipped"), timeout).Should(Equal(1.0))
	g.Expect(hanging.Requests()).To(Equal(1), "one request in flight at most")
	g.Expect(good.Requests()).To(Equal(2))
}

// TestAnUnusableURLIsReportedAndTheRestWork: a URL that cannot be used is
// counted and left out, the others work, and fixing the file (a Secret
// updated in place) takes effect without a restart.
func TestAnUnusableURLIsReportedAndTheRestWork(t *testing.T) {
	g := NewWithT(t)
	recv, other := chatrecv.Start(t), chatrecv.Start(t)
	file := urlsFile(t, "slakc://token@channel", recv.URL())
	_, reg := start(t, notify.Options{URLsFile: file, Interval: 100 * time.Millisecond}, clock.RealClock{})
	g.Expect(value(g, reg, notify.ReceiversMetric, "state", "invalid")).To(Equal(1.0))
	g.Expect(value(g, reg, notify.ReceiversMetric, "state", "valid")).To(Equal(1.0))
	record(t, "kmaint-gate", "NodeNotBack", "MaintenancePool", "typo-pool", "one")
	g.Eventually(recv.Texts, timeout).Should(ConsistOf(ContainSubstring("one")))

	g.Expect(os.WriteFile(file, []byte(other.URL()+"\n"+recv.URL()+"\n"), 0o600)).To(Succeed())
	record(t, "kmaint-gate", "NodeNotBack", "MaintenancePool", "typo-pool", "two")
	g.Eventually(other.Texts, timeout).Should(ConsistOf(ContainSubstring("two")))
	g.Expect(recv.Texts()).To(ConsistOf(ContainSubstring("one"), ContainSubstring("two")))
	g.Expect(value(g, reg, notify.ReceiversMetric, "state", "invalid")).To(Equal(0.0))
	g.Expect(value(g, reg, notify.ReceiversMetric, "state", "valid")).To(Equal(2.0))
}

func clientset(t *testing.T) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(bed.Config)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// start runs a notifier until the returned stop or the test's end, with
// its own metrics registry.
func start(t *testing.T, opts notify.Options, clk clock.WithTicker) (stop func(), reg *prometheus.Registry) {
	t.Helper()
	reg = prometheus.NewRegistry()
	m, err := notify.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	n := notify.New(clientset(t), opts, m, ctrl.Log.WithName(t.Name()), clk)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := n.Start(ctx); err != nil {
			t.Errorf("notifier: %v", err)
		}
	}()
	stop = func() {
		cancel()
		<-done
	}
	t.Cleanup(stop)
	NewWithT(t).Eventually(n.Synced, timeout).Should(BeTrue())
	return stop, reg
}

// urlsFile writes the URLs as the mounted Secret would hold them.
func urlsFile(t *testing.T, urls ...string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "urls")
	if err := os.WriteFile(file, []byte("# receivers\n"+strings.Join(urls, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// record stores an event as one of kmaint's recorders would, and returns
// its name.
func record(t *testing.T, controller, reason, kind, name, note string) string {
	t.Helper()
	eventType := corev1.EventTypeNormal
	if reason != "RolloutStarted" && reason != "RolloutFinished" {
		eventType = corev1.EventTypeWarning
	}
	ev := &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{GenerateName: name + "-", Namespace: notify.EventNamespace},
		EventTime:           metav1.NowMicro(),
		ReportingController: controller,
		ReportingInstance:   controller + "-test",
		Action:              "Test",
		Reason:              reason,
		Type:                eventType,
		Note:                note,
		Regarding:           corev1.ObjectReference{Kind: kind, Name: name},
	}
	created, err := clientset(t).EventsV1().Events(notify.EventNamespace).Create(context.Background(), ev, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return created.Name
}

// value is the value of the metric with these label pairs, 0 when absent.
func value(g Gomega, reg *prometheus.Registry, name string, labels ...string) float64 {
	families, err := reg.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	next:
		for _, m := range f.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for i := 0; i+1 < len(labels); i += 2 {
				if have[labels[i]] != labels[i+1] {
					continue next
				}
			}
			if c := m.GetCounter(); c != nil {
				return c.GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	return 0
}
