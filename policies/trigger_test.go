package policies

import (
	"math"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

func threshold(t *testing.T, v string, c v1alpha1.Comparison) Threshold {
	th, err := ParseThreshold(&v1alpha1.PrometheusTrigger{Threshold: v, Comparison: c})
	if err != nil {
		t.Fatal(err)
	}
	return th
}

func TestThresholdHolds(t *testing.T) {
	g := NewWithT(t)
	gt := threshold(t, "0.9", "")
	g.Expect(gt.Holds(0.91)).To(BeTrue())
	g.Expect(gt.Holds(0.9)).To(BeFalse(), "> is strict")
	g.Expect(gt.Holds(math.NaN())).To(BeFalse(), "NaN never qualifies")
	g.Expect(gt.Holds(math.Inf(1))).To(BeTrue())
	g.Expect(threshold(t, "0.9", v1alpha1.GreaterThanOrEqual).Holds(0.9)).To(BeTrue())
	lt := threshold(t, "1e3", v1alpha1.LessThan)
	g.Expect(lt.Holds(999)).To(BeTrue())
	g.Expect(lt.Holds(1000)).To(BeFalse())
	g.Expect(threshold(t, "-2", v1alpha1.LessThanOrEqual).Holds(-2)).To(BeTrue())
	g.Expect(gt.String()).To(Equal("> 0.9"))

	_, err := ParseThreshold(&v1alpha1.PrometheusTrigger{Threshold: "high"})
	g.Expect(err).To(MatchError(ContainSubstring(`threshold "high" is not a number`)))
	_, err = ParseThreshold(&v1alpha1.PrometheusTrigger{Threshold: "1", Comparison: "=="})
	g.Expect(err).To(MatchError(ContainSubstring(`comparison "=="`)))
}

func node(name string, addrs ...string) corev1.Node {
	n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, a := range addrs {
		n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: a})
	}
	return n
}

func sample(v float64, labels ...string) *model.Sample {
	m := model.Metric{}
	for i := 0; i+1 < len(labels); i += 2 {
		m[model.LabelName(labels[i])] = model.LabelValue(labels[i+1])
	}
	return &model.Sample{Metric: m, Value: model.SampleValue(v)}
}

func TestMapSeries(t *testing.T) {
	g := NewWithT(t)
	nodes := []corev1.Node{node("a", "10.0.0.1"), node("b", "10.0.0.2")}
	th := threshold(t, "0.9", "")

	byName := MapSeries(model.Vector{
		sample(0.95, "node", "a"),
		sample(0.5, "node", "b"),
		sample(0.99, "node", "gone"),
		sample(0.99, "instance", "x"),
		sample(math.NaN(), "node", "a"),
	}, "node", NewNodeResolver(nodes, v1alpha1.MatchNodeName), th)
	g.Expect(byName.ByNode).To(Equal(map[string]float64{"a": 0.95, "b": 0.5}), "NaN dropped, not taken as a's value")
	g.Expect(byName.UnmatchedCount).To(Equal(2))
	g.Expect(byName.Unmatched).To(ConsistOf(`{node="gone"}`, `{instance="x"}`))

	byAddr := MapSeries(model.Vector{
		sample(0.5, "instance", "10.0.0.1:9100"),
		sample(0.97, "instance", "10.0.0.1:9100", "zone", "Normal"),
		sample(0.2, "instance", "10.0.0.2"),
		sample(0.2, "instance", "a"),
	}, "instance", NewNodeResolver(nodes, v1alpha1.MatchNodeAddress), th)
	g.Expect(byAddr.ByNode).To(Equal(map[string]float64{"a": 0.97, "b": 0.2}), "the series furthest past the threshold speaks for the node; the name is not an address")
	g.Expect(byAddr.UnmatchedCount).To(Equal(1))

	below := MapSeries(model.Vector{sample(0.5, "node", "a"), sample(0.1, "node", "a")}, "node",
		NewNodeResolver(nodes, v1alpha1.MatchNodeName), threshold(t, "0.2", v1alpha1.LessThan))
	g.Expect(below.ByNode).To(Equal(map[string]float64{"a": 0.1}), "for <, the lowest value is the one past the threshold")

	many := model.Vector{}
	for range 20 {
		many = append(many, sample(1, "node", "nope"))
	}
	capped := MapSeries(many, "node", NewNodeResolver(nodes, v1alpha1.MatchNodeName), th)
	g.Expect(capped.UnmatchedCount).To(Equal(20))
	g.Expect(capped.Unmatched).To(HaveLen(maxUnmatched), "the status lists a few, and counts all")
}

func TestTrackKeepsAndRestartsPendingClocks(t *testing.T) {
	g := NewWithT(t)
	th := threshold(t, "0.9", "")
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

	c1 := Track(nil, map[string]float64{"a": 0.95, "b": 0.5}, th, nil, t0)
	g.Expect(c1).To(Equal([]Candidate{{Node: "a", Since: t0, Value: 0.95}}))

	t1 := t0.Add(30 * time.Second)
	c2 := Track(c1, map[string]float64{"a": 0.96, "b": 0.92}, th, nil, t1)
	g.Expect(c2).To(Equal([]Candidate{{Node: "a", Since: t0, Value: 0.96}, {Node: "b", Since: t1, Value: 0.92}}), "a keeps its clock, b starts one")

	t2 := t1.Add(30 * time.Second)
	c3 := Track(c2, map[string]float64{"a": 0.89, "b": 0.93}, th, nil, t2)
	g.Expect(c3).To(Equal([]Candidate{{Node: "b", Since: t1, Value: 0.93}}), "a dips below: its clock is gone")

	t3 := t2.Add(30 * time.Second)
	c4 := Track(c3, map[string]float64{"a": 0.95, "b": 0.93}, th, nil, t3)
	g.Expect(c4[1]).To(Equal(Candidate{Node: "a", Since: t3, Value: 0.95}), "a flapped back: the clock restarts")

	c5 := Track(c4, map[string]float64{"a": 0.95}, th, nil, t3.Add(time.Minute))
	g.Expect(c5).To(HaveLen(1), "b's series vanished: no value is no qualifying value")

	rebooted := t3.Add(10 * time.Second)
	c6 := Track(c4, map[string]float64{"a": 0.95, "b": 0.93}, th, map[string]time.Time{"b": rebooted}, t3.Add(time.Minute))
	g.Expect(c6).To(ContainElement(Candidate{Node: "b", Since: rebooted, Value: 0.93}), "values from before a reboot do not count towards for")
}

func TestSelect(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	cands := func(names ...string) []Candidate {
		var out []Candidate
		for i, n := range names {
			out = append(out, Candidate{Node: n, Since: ago(time.Hour - time.Duration(i)*time.Second)})
		}
		return out
	}
	cases := map[string]struct {
		cands   []Candidate
		guards  Guards
		raise   []string
		pending []string
		cooling []string
		overCap []string
		next    time.Time
	}{
		"held for long enough": {
			cands: cands("a"), guards: Guards{For: 30 * time.Minute, Cap: 1},
			raise: []string{"a"},
		},
		"not yet held for long enough": {
			cands: []Candidate{{Node: "a", Since: ago(10 * time.Minute)}}, guards: Guards{For: 30 * time.Minute, Cap: 1},
			pending: []string{"a"}, next: now.Add(20 * time.Minute),
		},
		"exactly for: qualifies": {
			cands: []Candidate{{Node: "a", Since: ago(30 * time.Minute)}}, guards: Guards{For: 30 * time.Minute, Cap: 1},
			raise: []string{"a"},
		},
		"cooldown from the last reboot, whatever its source": {
			cands:  cands("a", "b"),
			guards: Guards{Cooldown: 24 * time.Hour, Cap: 5, LastReboot: map[string]time.Time{"a": ago(2 * time.Hour), "b": ago(25 * time.Hour)}},
			raise:  []string{"b"}, cooling: []string{"a"}, next: now.Add(22 * time.Hour),
		},
		"cap counts open requests already out": {
			cands: cands("a", "b", "c"), guards: Guards{Cap: 2, OpenByPolicy: 1},
			raise: []string{"a"}, overCap: []string{"b", "c"},
		},
		"cap reached: nothing raised, all reported": {
			cands: cands("a", "b"), guards: Guards{Cap: 1, OpenByPolicy: 1},
			overCap: []string{"a", "b"},
		},
		"a node with an open request takes no slot and gets no second": {
			cands: cands("a", "b"), guards: Guards{Cap: 1, Open: map[string]bool{"a": true}},
			raise: []string{"b"},
		},
		"oldest candidates first": {
			cands: []Candidate{{Node: "z", Since: ago(2 * time.Hour)}, {Node: "y", Since: ago(time.Hour)}}, guards: Guards{Cap: 1},
			raise: []string{"z"}, overCap: []string{"y"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			SortCandidates(tc.cands)
			sel := Select(tc.cands, tc.guards, now)
			g.Expect(sel.Raise).To(Equal(tc.raise))
			g.Expect(keys(sel.Pending)).To(ConsistOf(toAny(tc.pending)...))
			g.Expect(keys(sel.Cooling)).To(ConsistOf(toAny(tc.cooling)...))
			g.Expect(sel.OverCap).To(Equal(tc.overCap))
			g.Expect(sel.Next).To(Equal(tc.next))
		})
	}
}

func keys(m map[string]time.Time) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}
