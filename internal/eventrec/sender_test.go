package eventrec_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/internal/eventrec"
	"github.com/kmaint/kmaint/test/harness"
	"github.com/kmaint/kmaint/test/testbed"
)

var bed *testbed.Bed

func TestMain(m *testing.M) { os.Exit(harness.Main(m, &bed)) }

// The events recorded just before a stop are written by it: the operator
// restarted right after it forced a drain still tells the people the
// notifier tells. controller-runtime's recorder dropped such events.
func TestAStopWritesWhatWasJustRecorded(t *testing.T) {
	g := NewWithT(t)
	cs, err := kubernetes.NewForConfig(bed.Config)
	g.Expect(err).NotTo(HaveOccurred())
	s := eventrec.New(cs.EventsV1(), bed.Scheme, logr.Discard())
	s.Start()
	rec := s.Recorder("kmaint-test-stop")
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "stop-000", UID: types.UID(uuid.NewUUID())}}
	const n = 300
	for i := range n {
		rec.Eventf(node, nil, corev1.EventTypeWarning, "DrainForced", "Drain", "event %d", i)
	}
	// A note longer than the API takes is cut on a character's boundary,
	// not refused.
	rec.Eventf(node, nil, corev1.EventTypeNormal, "Long", "Tell", "%s", strings.Repeat("é", 700))
	g.Expect(s.Stop(time.Minute)).To(Succeed())

	var list eventsv1.EventList
	g.Expect(bed.Client.List(context.Background(), &list, client.InNamespace(metav1.NamespaceDefault))).To(Succeed())
	seen := map[string]bool{}
	for _, e := range list.Items {
		if e.Regarding.UID != node.UID {
			continue
		}
		g.Expect(e.Regarding.Kind).To(Equal("Node"))
		g.Expect(e.Regarding.Name).To(Equal("stop-000"))
		g.Expect(e.Regarding.UID).To(Equal(node.UID))
		g.Expect(e.ReportingInstance).To(HavePrefix("kmaint-test-stop-"))
		if e.Reason == "Long" {
			g.Expect(len(e.Note)).To(BeNumerically("<=", 1024))
			g.Expect(e.Note).To(HavePrefix("éé"))
			g.Expect(strings.TrimRight(e.Note, "é")).To(BeEmpty(), "cut between a character's bytes")
			seen["long"] = true
			continue
		}
		g.Expect(e.Reason).To(Equal("DrainForced"))
		g.Expect(e.Type).To(Equal(corev1.EventTypeWarning))
		g.Expect(e.Action).To(Equal("Drain"))
		seen[e.Note] = true
	}
	g.Expect(seen).To(HaveLen(n+1), "every event recorded before the stop is written, once")
}

// An API server that refuses every write does not hold a stop past its
// grace, and the stop says how many events were lost.
func TestAStopGivesUpAfterItsGrace(t *testing.T) {
	g := NewWithT(t)
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		http.Error(w, "overloaded", http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	g.Expect(err).NotTo(HaveOccurred())
	s := eventrec.New(cs.EventsV1(), bed.Scheme, logr.Discard(), eventrec.WithWorkers(2))
	rec := s.Recorder("kmaint-test-grace")
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "grace-000"}}
	for i := range 5 {
		rec.Eventf(node, nil, corev1.EventTypeNormal, "Rebooting", "Reboot", "boot %d", i)
	}
	s.Start()
	g.Eventually(calls.Load).Should(BeNumerically(">=", 2), "the workers are writing")
	start := time.Now()
	err = s.Stop(300 * time.Millisecond)
	g.Expect(time.Since(start)).To(BeNumerically("<", 30*time.Second), "the stop waited for the refused writes' retries")
	g.Expect(err).To(MatchError(ContainSubstring("5 events not written within 300ms")))
}

// A full queue drops what comes next rather than block the controller
// that tells, and the stop counts only what it held.
func TestAFullQueueDropsRatherThanBlocks(t *testing.T) {
	g := NewWithT(t)
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: "http://127.0.0.1:1"})
	g.Expect(err).NotTo(HaveOccurred())
	s := eventrec.New(cs.EventsV1(), bed.Scheme, logr.Discard(), eventrec.WithQueue(3))
	rec := s.Recorder("kmaint-test-full")
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "full-000"}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 10 {
			rec.Eventf(node, nil, corev1.EventTypeNormal, "Admitted", "Admit", "request %d", i)
		}
	}()
	g.Eventually(done).Should(BeClosed())
	// Never started: nothing was written, and the stop says so at once.
	g.Expect(s.Stop(time.Hour)).To(MatchError(ContainSubstring("3 events not written")))
}

// An event dropped for a full queue was never told: the same one recorded
// again is queued, not folded into it.
func TestADroppedEventIsNotFoldedInto(t *testing.T) {
	g := NewWithT(t)
	release := make(chan struct{})
	var mu sync.Mutex
	var notes []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var e eventsv1.Event
		_ = json.Unmarshal(body, &e)
		mu.Lock()
		notes = append(notes, e.Note)
		mu.Unlock()
		<-release
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	var once sync.Once
	open := func() { once.Do(func() { close(release) }) }
	t.Cleanup(open) // before the server's Close, which waits for its handlers
	written := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(notes)
	}
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, ContentConfig: rest.ContentConfig{ContentType: "application/json"}})
	g.Expect(err).NotTo(HaveOccurred())
	s := eventrec.New(cs.EventsV1(), bed.Scheme, logr.Discard(), eventrec.WithQueue(1), eventrec.WithWorkers(1))
	s.Start()
	rec := s.Recorder("kmaint-test-dropped")
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "dropped-000"}}
	rec.Eventf(node, nil, corev1.EventTypeNormal, "Admitted", "Admit", "a")
	g.Eventually(written, 10*time.Second).Should(Equal([]string{"a"}), "the worker holds a")
	rec.Eventf(node, nil, corev1.EventTypeNormal, "Admitted", "Admit", "b")     // queued
	rec.Eventf(node, nil, corev1.EventTypeWarning, "DrainForced", "Drain", "c") // dropped: the queue is full
	open()
	g.Eventually(written).Should(Equal([]string{"a", "b"}))
	rec.Eventf(node, nil, corev1.EventTypeWarning, "DrainForced", "Drain", "c")
	g.Expect(s.Stop(time.Minute)).To(Succeed())
	g.Expect(written()).To(Equal([]string{"a", "b", "c"}))
}

// The same event told again within the window is written once, as
// client-go's series folded it: a controller that tells a thing once by
// what it reads may tell it again before its own write reaches its cache,
// and people would be notified twice. Another note, another version of the
// object, or the window passed, and it is written.
func TestARepeatWithinTheWindowIsWrittenOnce(t *testing.T) {
	g := NewWithT(t)
	cs, err := kubernetes.NewForConfig(bed.Config)
	g.Expect(err).NotTo(HaveOccurred())
	clk := clocktesting.NewFakePassiveClock(time.Now())
	s := eventrec.New(cs.EventsV1(), bed.Scheme, logr.Discard(), eventrec.WithClock(clk))
	s.Start()
	rec := s.Recorder("kmaint-test-repeat")
	// A UID of its own: the events of an earlier run of the test stay.
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "repeat-000", UID: types.UID(uuid.NewUUID()), ResourceVersion: "7"}}
	tell := func(note string) {
		rec.Eventf(node, nil, corev1.EventTypeWarning, "NodeMarkingRefused", "Mark", "%s", note)
		clk.SetTime(clk.Now().Add(time.Second)) // events a nanosecond apart would share a name
	}
	tell("refused")
	tell("refused") // folded
	tell("refused for another reason")
	node.ResourceVersion = "8"
	tell("refused")
	clk.SetTime(clk.Now().Add(eventrec.RepeatWindow))
	tell("refused")
	g.Expect(s.Stop(time.Minute)).To(Succeed())

	var list eventsv1.EventList
	g.Expect(bed.Client.List(context.Background(), &list, client.InNamespace(metav1.NamespaceDefault))).To(Succeed())
	var notes []string
	for _, e := range list.Items {
		if e.Regarding.UID == node.UID {
			notes = append(notes, e.Note+"@"+e.Regarding.ResourceVersion)
		}
	}
	g.Expect(notes).To(ConsistOf("refused@7", "refused for another reason@7", "refused@8", "refused@8"))
}
