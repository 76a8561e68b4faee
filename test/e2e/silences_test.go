package e2e_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator"
	"github.com/kmaint/kmaint/operator/silences"
	"github.com/kmaint/kmaint/test/amtest"
	"github.com/kmaint/kmaint/test/harness"
	"github.com/kmaint/kmaint/test/sim"
)

// silencedSets are the sets the tests' pools ask for: the node's own
// alerts, and node_exporter's by its instance label.
func silencedSets(onUnreachable v1alpha1.SilencesUnreachable) *v1alpha1.Silences {
	return &v1alpha1.Silences{OnUnreachable: onUnreachable, Sets: []v1alpha1.SilenceSet{
		{Name: "node", Matchers: []string{`node="{{ .Node }}"`}},
		{Name: "instance", Matchers: []string{`instance=~"{{ .Node }}(:[0-9]+)?"`}},
	}}
}

// silencedCluster starts a pool of n simulated nodes whose pool asks for
// silences, a real Alertmanager behind a proxy that injects faults, and
// the cordon watcher; opts.Silences points the operator at the proxy.
func silencedCluster(t *testing.T, pool string, n int, maxUnavailable int32, onUnreachable v1alpha1.SilencesUnreachable) (*sim.Cluster, *amtest.Server, *amtest.Proxy, operator.Options) {
	t.Helper()
	g := NewWithT(t)
	am := amtest.Start(t)
	proxy := amtest.NewProxy(t, am)
	c, err := sim.Start(context.Background(), bed, sim.Config{
		Pools:   []sim.PoolSpec{{Name: pool, Nodes: n, MaxUnavailable: intstr.FromInt32(maxUnavailable), Silences: silencedSets(onUnreachable)}},
		Journal: sim.Memory,
	})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(c.Stop)
	harness.WatchBudget(t, bed, pool).FailAbove(int(maxUnavailable))
	watchSilencedCordons(t, pool, am)
	return c, am, proxy, operator.Options{Silences: silences.Options{URLs: []string{proxy.URL()}, Timeout: 2 * time.Second}}
}

// watchSilencedCordons fails the test if a node of the pool is cordoned by
// kmaint for an admission whose silences are not settled, or without an
// active silence per set in Alertmanager at that moment (invariant 12: the
// silences before the cordon). It counts the cordons it checked.
func watchSilencedCordons(t *testing.T, pool string, am *amtest.Server) *int {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	wc, err := client.NewWithWatch(bed.Config, client.Options{Scheme: bed.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	w, err := wc.Watch(ctx, &corev1.NodeList{}, client.MatchingLabels{"pool": pool})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	checked := 0
	cordoned := map[string]bool{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			n, ok := ev.Object.(*corev1.Node)
			if !ok || ev.Type == watch.Deleted {
				continue
			}
			st, _ := protocol.Read(n)
			now := st.Cordoned && st.Admission != nil
			if now && !cordoned[n.Name] {
				if !st.SilencesReady() {
					t.Errorf("node %s cordoned for its admission before its silences were settled: %+v", n.Name, st.Silences)
				} else if st.Silences.Unavailable == nil {
					active := activeSilences(am, n.Name)
					if active != 2 {
						t.Errorf("node %s cordoned with %d active silences in Alertmanager, want one per set (2)", n.Name, active)
					}
				}
				mu.Lock()
				checked++
				mu.Unlock()
			}
			cordoned[n.Name] = now
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		mu.Lock()
		defer mu.Unlock()
		t.Logf("cordons checked against their silences: %d", checked)
	})
	return &checked
}

// kmaintSilences are the silences of the node kmaint made, expired ones
// too, by matching the node's name in their matchers.
func kmaintSilences(g Gomega, am *amtest.Server, node string) []silences.Silence {
	c, err := silences.New(am.URL(), nil)
	g.Expect(err).NotTo(HaveOccurred())
	all, err := c.List(context.Background(), silences.CreatedBy)
	g.Expect(err).NotTo(HaveOccurred())
	var out []silences.Silence
	for _, s := range all {
		for _, m := range s.Matchers {
			if m.Name == "node" && m.Value == node || m.Name == "instance" && strings.HasPrefix(m.Value, node+"(") {
				out = append(out, s)
				break
			}
		}
	}
	return out
}

func activeSilences(am *amtest.Server, node string) int {
	c, err := silences.New(am.URL(), nil)
	if err != nil {
		return -1
	}
	all, err := c.List(context.Background(), silences.CreatedBy)
	if err != nil {
		return -1
	}
	n := 0
	for _, s := range all {
		if s.Status == nil || s.Status.State != "active" {
			continue
		}
		for _, m := range s.Matchers {
			if m.Name == "node" && m.Value == node || m.Name == "instance" && strings.HasPrefix(m.Value, node+"(") {
				n++
				break
			}
		}
	}
	return n
}

// expectDone waits until the node rebooted from first and its
// maintenance is over: a new boot, no admission, no silence record, and
// made silences made for it (one per set, no duplicate), all expired.
func expectDone(g Gomega, c *sim.Cluster, am *amtest.Server, node, first string, made int) {
	expectDoneWith(g, c, am, node, first, made, made)
}

func expectDoneWith(g Gomega, c *sim.Cluster, am *amtest.Server, node, first string, least, most int) {
	g.Eventually(func(g Gomega) {
		n := getNode(g, node)
		g.Expect(protocol.BootID(n)).NotTo(Equal(first))
		g.Expect(n.Annotations).NotTo(HaveKey(protocol.Admitted))
		g.Expect(n.Annotations).NotTo(HaveKey(protocol.Silenced), "the record goes with the silences")
		g.Expect(n.Spec.Unschedulable).To(BeFalse())
		ss := kmaintSilences(g, am, node)
		g.Expect(len(ss)).To(And(BeNumerically(">=", least), BeNumerically("<=", most)), "one silence per set and maintenance: no duplicate")
		for _, s := range ss {
			g.Expect(s.Expired()).To(BeTrue(), "silence %s ends with the maintenance", s.ID)
		}
	}, timeout).Should(Succeed())
}

// A node of a pool with silences is silenced (one silence per set, made
// by kmaint, its comment naming the node, its pool and its
// NodeMaintenance) before its cordon, and its silences are expired when
// it is done; the next node then gets its own.
func TestSilencesCoverEachRebootAndEndWithIt(t *testing.T) {
	g := NewWithT(t)
	const pool = "hush"
	c, am, _, opts := silencedCluster(t, pool, 2, 1, v1alpha1.SilencesHold)
	harness.StartOperatorWith(t, bed, opts)
	for _, name := range []string{pool + "-000", pool + "-001"} {
		first := c.Node(name).BootID()
		g.Expect(c.Node(name).RequestReboot("kernel update")).To(Succeed())
		expectDone(g, c, am, name, first, 2)
		ss := kmaintSilences(g, am, name)
		nms := harness.MaintenancesOf(g, bed, name)
		g.Expect(nms).To(HaveLen(1))
		for _, s := range ss {
			g.Expect(s.CreatedBy).To(Equal("kmaint"))
			g.Expect(s.Comment).To(ContainSubstring("node "+name), "the comment names the node")
			g.Expect(s.Comment).To(ContainSubstring("pool "+pool), "and the pool")
			g.Expect(s.Comment).To(ContainSubstring(nms[0].Name), "and the NodeMaintenance")
		}
		g.Expect(harness.EventReasons(g, bed, "Node", name, "Normal")).To(ContainElements(v1alpha1.SilencesMadeReason, v1alpha1.SilencesExpiredReason))
	}
}

// An operator killed at each step of a node's silences (the record
// written and the silence not made; the silence made and its ID not
// recorded; the silence expired and the record not removed) leaves
// neither a second silence nor one behind once another operator takes
// over.
func TestAnOperatorKilledAtEachSilenceStepLeavesNoDuplicateNorLeftover(t *testing.T) {
	for i, step := range []struct {
		name    string
		method  string
		forward bool
	}{
		{"before the silence is made", "POST", false},
		{"after the silence is made, before its ID is recorded", "POST", true},
		{"after the silence is expired, before the record goes", "DELETE", true},
	} {
		t.Run(step.name, func(t *testing.T) {
			g := NewWithT(t)
			pool := fmt.Sprintf("kill%d", i)
			c, am, proxy, opts := silencedCluster(t, pool, 1, 1, v1alpha1.SilencesHold)
			reached, release := proxy.Hold(step.method, step.forward)
			op, err := sim.StartOperator(context.Background(), bed.Config, opts)
			g.Expect(err).NotTo(HaveOccurred())
			name := pool + "-000"
			first := c.Node(name).BootID()
			g.Expect(c.Node(name).RequestReboot("kernel update")).To(Succeed())
			g.Eventually(reached, timeout).Should(BeClosed())
			g.Expect(op.Stop()).To(Succeed())
			close(release)
			st, err := protocol.Read(getNode(g, name))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(st.Silences).NotTo(BeNil(), "what is made is recorded before it is")
			harness.StartOperatorWith(t, bed, opts)
			expectDone(g, c, am, name, first, 2)
		})
	}
}

// Silences that cannot be made (Alertmanager down, slow, answering 500,
// refusing the operator's credentials): with onUnreachable Hold the
// admitted node waits uncordoned, its pool admits nothing new and says
// why; once Alertmanager answers, both nodes go, silenced.
func TestSilencesThatCannotBeMadeHoldThePool(t *testing.T) {
	for i, fault := range []struct {
		name  string
		set   func(p *amtest.Proxy, credentials string)
		says  string
		clear func(p *amtest.Proxy, credentials string)
	}{
		{"down", func(p *amtest.Proxy, _ string) { p.SetFault(amtest.Down) }, "EOF", func(p *amtest.Proxy, _ string) { p.SetFault(amtest.Pass) }},
		{"slow", func(p *amtest.Proxy, _ string) { p.SetDelay(10 * time.Second); p.SetFault(amtest.Slow) }, "Timeout", func(p *amtest.Proxy, _ string) { p.SetFault(amtest.Pass) }},
		{"500", func(p *amtest.Proxy, _ string) { p.SetFault(amtest.Error) }, "500", func(p *amtest.Proxy, _ string) { p.SetFault(amtest.Pass) }},
		{"credentials refused", func(p *amtest.Proxy, dir string) {
			p.RequireToken("right")
			writeToken(t, dir, "wrong")
		}, "401", func(p *amtest.Proxy, dir string) { writeToken(t, dir, "right") }},
	} {
		t.Run(fault.name, func(t *testing.T) {
			g := NewWithT(t)
			pool := fmt.Sprintf("held%d", i)
			c, am, proxy, opts := silencedCluster(t, pool, 2, 2, v1alpha1.SilencesHold)
			opts.Silences.CredentialsDir = t.TempDir()
			writeToken(t, opts.Silences.CredentialsDir, "right")
			fault.set(proxy, opts.Silences.CredentialsDir)
			harness.StartOperatorWith(t, bed, opts)
			held, next := pool+"-000", pool+"-001"
			firstHeld := c.Node(held).BootID()
			g.Expect(c.Node(held).RequestReboot("kernel update")).To(Succeed())
			g.Eventually(func(g Gomega) {
				n := getNode(g, held)
				st, err := protocol.Read(n)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(st.Admission).NotTo(BeNil())
				g.Expect(n.Spec.Unschedulable).To(BeFalse(), "not cordoned before its silences")
				g.Expect(st.Silences).NotTo(BeNil())
				g.Expect(st.Silences.Unavailable).NotTo(BeNil())
				g.Expect(st.Silences.Unavailable.Message).To(ContainSubstring(fault.says))
				cond := meta.FindStatusCondition(getPool(g, pool).Status.Conditions, v1alpha1.BlockedCondition)
				g.Expect(cond).NotTo(BeNil())
				g.Expect(cond.Reason).To(Equal(v1alpha1.SilencesUnavailableReason))
				g.Expect(cond.Message).To(ContainSubstring(held))
				g.Expect(harness.EventReasons(g, bed, "Node", held, "Warning")).To(ContainElement(v1alpha1.SilencesUnavailableReason))
			}, timeout).Should(Succeed())
			firstNext := c.Node(next).BootID()
			g.Expect(c.Node(next).RequestReboot("kernel update")).To(Succeed())
			g.Consistently(func(g Gomega) {
				g.Expect(getNode(g, next).Annotations).NotTo(HaveKey(protocol.Admitted), "nothing new is admitted while silences cannot be made")
				g.Expect(getNode(g, held).Spec.Unschedulable).To(BeFalse())
			}, 5*time.Second).Should(Succeed())

			fault.clear(proxy, opts.Silences.CredentialsDir)
			expectDone(g, c, am, held, firstHeld, 2)
			expectDone(g, c, am, next, firstNext, 2)
		})
	}
}

// With onUnreachable Proceed a node whose silences cannot be made goes on
// (cordoned, rebooted), with a warning; once Alertmanager answers, the
// silences are made if the node is still in flight then, and whatever was
// made ends with the maintenance: nothing is left behind.
func TestSilencesThatCannotBeMadeProceedWithAWarning(t *testing.T) {
	g := NewWithT(t)
	const pool = "loud"
	c, am, proxy, opts := silencedCluster(t, pool, 1, 1, v1alpha1.SilencesProceed)
	proxy.SetFault(amtest.Error)
	harness.StartOperatorWith(t, bed, opts)
	name := pool + "-000"
	first := c.Node(name).BootID()
	g.Expect(c.Node(name).RequestReboot("kernel update")).To(Succeed())
	g.Eventually(func(g Gomega) {
		n := getNode(g, name)
		g.Expect(protocol.BootID(n)).NotTo(Equal(first), "rebooted without its silences")
		g.Expect(harness.EventReasons(g, bed, "Node", name, "Warning")).To(ContainElement(v1alpha1.SilencesUnavailableReason))
	}, timeout).Should(Succeed())
	proxy.SetFault(amtest.Pass)
	expectDoneWith(g, c, am, name, first, 0, 2)
}

func writeToken(t *testing.T, dir, token string) {
	t.Helper()
	// Written whole, then renamed: the operator reads it at each call.
	tmp := filepath.Join(dir, ".token")
	if err := os.WriteFile(tmp, []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "token")); err != nil {
		t.Fatal(err)
	}
}

func getPool(g Gomega, name string) *v1alpha1.MaintenancePool {
	var p v1alpha1.MaintenancePool
	g.Expect(bed.Client.Get(context.Background(), client.ObjectKey{Name: name}, &p)).To(Succeed())
	return &p
}

// While a node is in flight its silences are extended before they end,
// in place (their IDs kept); one a person expired is not made again, and
// an event says so; once the node is reported not back (it needs a
// person, and its alerts are how one hears) its silences are expired.
func TestSilencesAreExtendedInFlightAndEndWhenTheNodeNeedsAPerson(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const pool, margin, notBack = "long", 10 * time.Minute, 15 * time.Minute
	c, am, _, opts := silencedCluster(t, pool, 1, 1, v1alpha1.SilencesHold)
	t0 := time.Now().UTC().Truncate(time.Second)
	clk := clocktesting.NewFakePassiveClock(t0)
	opts.Clock, opts.Silences.Margin, opts.NodeReturnTimeout = clk, margin, notBack
	harness.StartOperatorWith(t, bed, opts)
	name := pool + "-000"
	c.Node(name).IgnoreReboots(true)
	g.Expect(c.Node(name).RequestReboot("kernel update")).To(Succeed())

	var rec protocol.SilenceRecord
	g.Eventually(func(g Gomega) {
		st, err := protocol.Read(getNode(g, name))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(st.Approved).NotTo(BeEmpty(), "approved; its reboot never happens")
		g.Expect(st.Silences).NotTo(BeNil())
		g.Expect(st.Silences.Silences).To(HaveLen(2))
		for _, h := range st.Silences.Silences {
			g.Expect(h.ID).NotTo(BeEmpty())
			g.Expect(h.EndsAt).To(BeTemporally("==", t0.Add(margin)), "a margin ahead of the pass that made it")
		}
		rec = *st.Silences
	}, timeout).Should(Succeed())

	// A person expires the node set's silence.
	api, err := silences.New(am.URL(), nil)
	g.Expect(err).NotTo(HaveOccurred())
	removed := rec.Silences[0]
	g.Expect(removed.Set).To(Equal("node"))
	g.Expect(api.Expire(ctx, removed.ID)).To(Succeed())

	// Past half the margin, the next pass extends what is left.
	clk.SetTime(t0.Add(6 * time.Minute))
	poke(g, name, "1")
	g.Eventually(func(g Gomega) {
		st, err := protocol.Read(getNode(g, name))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(st.Silences.Silences).To(ConsistOf(
			protocol.HeldSilence{Set: "node", Alertmanager: rec.Silences[0].Alertmanager, ID: removed.ID, EndsAt: removed.EndsAt, Removed: true},
			protocol.HeldSilence{Set: "instance", Alertmanager: rec.Silences[1].Alertmanager, ID: rec.Silences[1].ID, EndsAt: t0.Add(16 * time.Minute)},
		))
		s, err := api.Get(ctx, rec.Silences[1].ID)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(s.EndsAt).To(BeTemporally("==", t0.Add(16*time.Minute)), "extended in place, its ID kept")
		g.Expect(harness.EventReasons(g, bed, "Node", name, "Warning")).To(ContainElement(v1alpha1.SilenceRemovedReason))
	}, timeout).Should(Succeed())
	g.Expect(kmaintSilences(g, am, name)).To(HaveLen(2), "the removed silence is not made again")

	// Not back past the operator's bound: the node needs a person.
	clk.SetTime(t0.Add(notBack + time.Minute))
	poke(g, name, "2")
	g.Eventually(func(g Gomega) {
		n := getNode(g, name)
		g.Expect(n.Annotations).To(HaveKey(protocol.NodeNotBack))
		g.Expect(n.Annotations).NotTo(HaveKey(protocol.Silenced))
		for _, s := range kmaintSilences(g, am, name) {
			g.Expect(s.Expired()).To(BeTrue(), "silence %s (%s) ended with the node degraded", s.ID, s.Matchers[0].Name)
		}
	}, timeout).Should(Succeed())
}
