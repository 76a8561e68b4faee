package daemon_test

import (
	"context"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/daemon"
	"github.com/kmaint/kmaint/daemon/journal"
	"github.com/kmaint/kmaint/test/gen"
)

// askRecorder is a rebooter that records asks. While hang is set, an ask
// never completes: it returns only when the daemon stops, as a daemon killed
// in the middle of asking would never see it complete.
type askRecorder struct {
	hang bool

	mu   sync.Mutex
	asks int
}

func (r *askRecorder) Reboot(ctx context.Context) error {
	r.mu.Lock()
	r.asks++
	r.mu.Unlock()
	if r.hang {
		<-ctx.Done()
		return ctx.Err()
	}
	return nil
}

func (r *askRecorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.asks
}

// runDaemon runs a daemon in this process for the node, on journal j in boot,
// until the returned stop is called (or the test ends).
func runDaemon(t *testing.T, name, boot string, j journal.Journal, r *askRecorder) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- daemon.Run(ctx, bed.Config, daemon.Options{
			NodeName: name, Journal: j, Rebooter: r, RebootTimeout: time.Minute, MetricsAddr: "0", ProbeAddr: "0",
		}, daemon.WithBoot(boot, time.Now()), daemon.WithRegisterer(prometheus.NewRegistry()), daemon.WithDuplicateControllerNames())
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("daemon stopped with an error: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// A daemon stopped while it asks for the approved reboot has not made sure
// the reboot is under way: the daemon that starts next in the same boot asks
// again, rather than take the unfinished ask for one and leave the node,
// cordoned and drained, waiting for a person.
func TestDaemonStoppedWhileAskingAsksAgain(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const name, boot = "ask-again", "boot-ask-again"
	g.Expect(gen.CreateNode(ctx, bed.Client, gen.Node(name, gen.BootID(boot)))).To(Succeed())
	j := journal.NewMemory(func() string { return boot })

	first := &askRecorder{hang: true}
	stop := runDaemon(t, name, boot, j, first)
	_, err := daemon.RequestReboot(j, "kernel update", 0, time.Now())
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func(g Gomega) { g.Expect(requested(g, name).BootID).To(Equal(boot)) }, timeout).Should(Succeed())
	approve(g, name, boot)
	g.Eventually(first.count, timeout).Should(Equal(1))
	stop()

	again := &askRecorder{}
	runDaemon(t, name, boot, j, again)
	g.Eventually(again.count, timeout).Should(Equal(1), "the next daemon asks again")
	g.Eventually(func(g Gomega) { g.Expect(state(g, name).Phase).To(Equal(protocol.DaemonRebooting)) }, timeout).Should(Succeed())
	// It asks once, and journals that it did.
	g.Consistently(again.count, 2*time.Second).Should(Equal(1))
	var rebooting int
	for _, e := range entriesOf(j) {
		if e.Kind == journal.KindRebooting && e.BootID == boot {
			rebooting++
		}
	}
	g.Expect(rebooting).To(Equal(1), "one rebooting entry: the ask that completed")
}

// entriesOf reads back every entry of the journal.
func entriesOf(j journal.Journal) []journal.Entry {
	ctx, cancel := context.WithCancel(context.Background())
	var got []journal.Entry
	_ = j.Follow(ctx, func(e journal.Entry) { got = append(got, e) }, cancel)
	return got
}
