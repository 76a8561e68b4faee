package checker

import (
	"encoding/json"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmaint/kmaint/api/protocol"
)

// history drives a checker with a clock of its own. Versions without a
// resourceVersion are numbered in the order they are given, as etcd would.
type history struct {
	*Checker
	now time.Time
}

func newHistory() *history {
	h := &history{now: time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)}
	h.Checker = New("pool", func() time.Time { return h.now })
	return h
}

func (h *history) after(d time.Duration) *history {
	h.now = h.now.Add(d)
	return h
}

func (h *history) pool(name string, budget int, paused bool) {
	h.Pool(pool(name, "", budget, paused), false)
}

// relist hands the checker what a list of Nodes after a blind window
// shows: the nodes given, changed in the window.
func (h *history) relist(nodes ...*corev1.Node) {
	h.relistNodes(listing{from: h.h.last + 1}, nodes, nil)
}

// node is a Ready node of a pool; each option changes it.
func node(name, pool string, opts ...func(*corev1.Node)) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"pool": pool}, Annotations: map[string]string{}}}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	for _, o := range opts {
		o(n)
	}
	return n
}

// admitted is kmaint's admission of boot in pool, at a time of its own
// for each boot and pool; admittedAt gives the time.
func admitted(boot, pool string, requests ...string) func(*corev1.Node) {
	return admittedAt(time.Date(2026, 12, 6, 11, 0, 0, 0, time.UTC), boot, pool, requests...)
}

func admittedAt(at time.Time, boot, pool string, requests ...string) func(*corev1.Node) {
	return func(n *corev1.Node) {
		b, _ := json.Marshal(map[string]any{"bootID": boot, "requests": requests, "pool": pool, "time": at})
		n.Annotations[protocol.Admitted] = string(b)
		n.Annotations[protocol.Cordoned] = "true"
		n.Spec.Unschedulable = true
	}
}

// seeing records, in the node's admission, the view of Nodes the gate
// counted from: the version given.
func seeing(view int64) func(*corev1.Node) {
	return func(n *corev1.Node) {
		var a map[string]any
		if err := json.Unmarshal([]byte(n.Annotations[protocol.Admitted]), &a); err != nil {
			panic("seeing an admission that is not there: " + err.Error())
		}
		a["view"] = strconv.FormatInt(view, 10)
		b, _ := json.Marshal(a)
		n.Annotations[protocol.Admitted] = string(b)
	}
}

// version is the version the history's last change was given.
func (h *history) version() int64 { return h.h.last }

func approved(boot string) func(*corev1.Node) {
	return func(n *corev1.Node) { n.Annotations[protocol.RebootApproved] = boot }
}

func notReady(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionFalse }

func invariants(vs []Violation) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Invariant)
	}
	return out
}
