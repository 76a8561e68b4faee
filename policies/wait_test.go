package policies_test

import (
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/policies"
)

func TestWait(t *testing.T) {
	next := time.Date(2025, 3, 1, 5, 0, 0, 0, time.UTC)
	n, _ := protocol.Read(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}})
	node := &n
	budgetFull := policies.Budget{Max: 1, Unavailable: 1, Nodes: 3, Pending: 2, Waiting: []string{"n1", "n2"}}
	blocking := &policies.Blocking{Reason: v1alpha1.BlockingQueryReason, Message: `Blocking query "alerts" returns 1 series`}
	unreadable, _ := protocol.Read(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Annotations: map[string]string{protocol.State: "{"}}})
	cases := map[string]struct {
		in policies.WaitInput

		// wantReason is empty when nothing holds.
		wantReason  string
		wantMessage string
	}{
		"nothing holds":                      {in: policies.WaitInput{Pool: "p", Budget: policies.Budget{Max: 2, Unavailable: 1, Pending: 1, Waiting: []string{"n1"}}}},
		"no one waits: the budget is silent": {in: policies.WaitInput{Pool: "p", Budget: policies.Budget{Max: 1, Unavailable: 1}}},
		"a node whose annotations cannot be read, before anything else": {
			in:         policies.WaitInput{Pool: "a", Node: &unreadable, Pools: []string{"a", "b"}, Paused: true},
			wantReason: v1alpha1.MalformedAnnotationReason, wantMessage: "annotation kmaint.io/state on node n1 is malformed",
		},
		"an unreadable pool holds every pool, after a node's own annotations": {
			in:         policies.WaitInput{Pool: "p", UnreadablePools: []string{"MaintenancePool big cannot be read (spec.maxUnavailable: x)"}, Paused: true, Budget: budgetFull},
			wantReason: v1alpha1.UnreadablePoolReason, wantMessage: "MaintenancePool big cannot be read (spec.maxUnavailable: x); no pool admits, drains or approves",
		},
		"an unreadable pool, for a node": {
			in:         policies.WaitInput{Pool: "p", Node: node, Pools: []string{"a", "b"}, UnreadablePools: []string{"MaintenancePool big cannot be read (x)"}},
			wantReason: v1alpha1.UnreadablePoolReason, wantMessage: "MaintenancePool big cannot be read (x); no pool admits a node",
		},
		"the cluster's stop holds every pool, paused or not": {
			in:         policies.WaitInput{Pool: "p", Stop: &v1alpha1.Stop{Reason: v1alpha1.ClusterPausedReason, Message: "every pool is paused by MaintenanceGate cluster: freeze"}, Budget: budgetFull},
			wantReason: v1alpha1.ClusterPausedReason, wantMessage: "every pool is paused by MaintenanceGate cluster: freeze",
		},
		"the cluster's stop, for a node in two pools": {
			in:         policies.WaitInput{Pool: "a", Node: node, Pools: []string{"a", "b"}, Stop: &v1alpha1.Stop{Reason: v1alpha1.UnreadableGateReason, Message: "MaintenanceGate cluster cannot be read"}},
			wantReason: v1alpha1.UnreadableGateReason, wantMessage: "MaintenanceGate cluster cannot be read",
		},
		"a blockingPodSelector that cannot be parsed, before a pause": {
			in:         policies.WaitInput{Pool: "p", PodSelectorErr: errors.New("bad key"), Paused: true},
			wantReason: v1alpha1.InvalidBlockingPodSelectorReason, wantMessage: "the blockingPodSelector of pool p cannot be parsed (bad key); nothing is admitted",
		},
		"a control-plane pool's guard, before the cache behind": {
			in:         policies.WaitInput{Pool: "cp", QuorumAtRisk: "etcd member etcd-c on c is not Ready", CacheBehind: "behind"},
			wantReason: v1alpha1.QuorumAtRiskReason, wantMessage: "pool cp is a control-plane pool and etcd member etcd-c on c is not Ready; nothing is admitted or approved",
		},
		"a control-plane pool's guard, for a node, as its pool says it": {
			in:         policies.WaitInput{Pool: "cp", Node: node, QuorumAtRisk: "pool cp is a control-plane pool and etcd member etcd-c on c is not Ready"},
			wantReason: v1alpha1.QuorumAtRiskReason, wantMessage: "pool cp is a control-plane pool and etcd member etcd-c on c is not Ready",
		},
		"silences that cannot be used, before a pause": {
			in:         policies.WaitInput{Pool: "p", SilencesErr: errors.New(`silence set "s": no = or =~ matcher uses {{ .Node }}`), Paused: true},
			wantReason: v1alpha1.InvalidSilencesReason, wantMessage: "the silences of pool p cannot be used (silence set \"s\": no = or =~ matcher uses {{ .Node }}); nothing is admitted",
		},
		"an admitted node's silences that cannot be made, before a pause": {
			in:         policies.WaitInput{Pool: "p", SilencesUnavailable: "the silences of admitted node n1 (connection refused) cannot be made", Paused: true},
			wantReason: v1alpha1.SilencesUnavailableReason, wantMessage: "the silences of admitted node n1 (connection refused) cannot be made; nothing new is admitted",
		},
		"an opted-out node, before windows and the budget": {
			in: policies.WaitInput{Pool: "p", Node: node, OptOut: &protocol.OptOut{Reason: v1alpha1.DoNotDisruptReason, Message: "node n1 is annotated kmaint.io/do-not-disrupt"},
				Windows: policies.WindowWait{Shut: true, Closed: []string{"pool p"}}, Budget: budgetFull},
			wantReason: v1alpha1.DoNotDisruptReason, wantMessage: "node n1 is annotated kmaint.io/do-not-disrupt",
		},
		"a paused pool, before an opted-out node": {
			in:         policies.WaitInput{Pool: "p", Node: node, Paused: true, OptOut: &protocol.OptOut{Reason: v1alpha1.BlockingPodReason, Message: "pods"}},
			wantReason: v1alpha1.PausedReason, wantMessage: "pool p is paused",
		},
		"a pool whose every waiting node is opted out": {
			in:         policies.WaitInput{Pool: "p", OptedOut: []string{"n1 held", "n2 held"}, Budget: budgetFull},
			wantReason: v1alpha1.OptedOutReason, wantMessage: "every waiting node is opted out: n1 held; n2 held",
		},
		"a pool with one opted-out node of two waiting: the budget": {
			in:         policies.WaitInput{Pool: "p", OptedOut: []string{"n1 held"}, Budget: budgetFull},
			wantReason: v1alpha1.BudgetExhaustedReason, wantMessage: "1 of 3 nodes may be unavailable",
		},
		"a node in two pools": {
			in:         policies.WaitInput{Pool: "a", Node: node, Pools: []string{"a", "b"}, Paused: true},
			wantReason: v1alpha1.ConflictingReason, wantMessage: "selected by pools a, b",
		},
		"an invalid selector, for the pool": {
			in:         policies.WaitInput{Pool: "p", SelectorErr: errors.New("spec.nodeSelector: bad"), Paused: true},
			wantReason: v1alpha1.InvalidSelectorReason, wantMessage: "spec.nodeSelector: bad",
		},
		"a pool whose selector cannot be parsed might select the node": {
			in:         policies.WaitInput{Pool: "broken", Node: node, Pools: []string{"default"}, SelectorErr: errors.New("spec.nodeSelector cannot be parsed: bad"), Paused: true},
			wantReason: v1alpha1.InvalidSelectorReason, wantMessage: "pool broken might select the node and its spec.nodeSelector cannot be parsed: bad; no pool admits the node until that selector can be parsed",
		},
		"the budget counts nodes in flight here whose labels put them in another pool now": {
			in:         policies.WaitInput{Pool: "p", Budget: policies.Budget{Max: 1, Unavailable: 1, Nodes: 2, Pending: 1, Waiting: []string{"n1"}, Relabelled: []string{"n0 (labels: q)"}}},
			wantReason: v1alpha1.BudgetExhaustedReason, wantMessage: "1 of 2 nodes may be unavailable and 1 are; waiting: n1; counted until their maintenance ends, though their labels put them in another pool now: n0 (labels: q)",
		},
		"thousands waiting: the first are named, the others counted": {
			in:         policies.WaitInput{Pool: "p", Budget: policies.Budget{Max: 250, Unavailable: 250, Nodes: 5000, Pending: 4750, Waiting: []string{"n1", "n2"}}},
			wantReason: v1alpha1.BudgetExhaustedReason, wantMessage: "250 of 5000 nodes may be unavailable and 250 are; waiting: n1, n2 and 4748 more",
		},
		"an invalid window comes before a pause": {
			in:         policies.WaitInput{Pool: "p", Node: node, WindowErr: errors.New("spec.windows[0]: bad"), Paused: true},
			wantReason: v1alpha1.InvalidWindowReason, wantMessage: "pool p's spec.windows[0]: bad; nothing is admitted until it can be read",
		},
		"paused, for the pool": {
			in:         policies.WaitInput{Pool: "p", Paused: true, Windows: policies.WindowWait{Shut: true}, Budget: budgetFull},
			wantReason: v1alpha1.PausedReason, wantMessage: "The pool is paused; 2 nodes waiting",
		},
		"paused, for a node": {
			in:         policies.WaitInput{Pool: "p", Node: node, Paused: true},
			wantReason: v1alpha1.PausedReason, wantMessage: "pool p is paused",
		},
		"windows come before a blocking query and the budget": {
			in:         policies.WaitInput{Pool: "p", Windows: policies.WindowWait{Shut: true, Next: next}, Blocking: blocking, Budget: budgetFull},
			wantReason: v1alpha1.OutsideWindowReason, wantMessage: "No maintenance window is open until 2025-03-01T05:00:00Z; 2 nodes waiting",
		},
		"windows shut for a node": {
			in:         policies.WaitInput{Pool: "p", Node: node, Windows: policies.WindowWait{Shut: true, Next: next, Closed: []string{"pool p and RebootPolicy x"}}},
			wantReason: v1alpha1.OutsideWindowReason, wantMessage: "outside the maintenance windows of pool p and RebootPolicy x; the next opens at 2025-03-01T05:00:00Z",
		},
		"only unreadable policy windows hold a node": {
			in:         policies.WaitInput{Pool: "p", Node: node, Windows: policies.WindowWait{Shut: true, Problems: []string{"RebootPolicy x spec.windows[0]: bad"}}},
			wantReason: v1alpha1.InvalidWindowReason, wantMessage: "windows that cannot be read: RebootPolicy x",
		},
		"a blocking query comes before the budget": {
			in:         policies.WaitInput{Pool: "p", Blocking: blocking, Budget: budgetFull},
			wantReason: v1alpha1.BlockingQueryReason, wantMessage: `Blocking query "alerts"`,
		},
		"a blocking query, quoted for a node": {
			in:         policies.WaitInput{Pool: "p", Node: node, Blocking: blocking},
			wantReason: v1alpha1.BlockingQueryReason, wantMessage: `pool p: Blocking query "alerts"`,
		},
		"a halt comes after a pause, before windows and the budget": {
			in:         policies.WaitInput{Pool: "p", Halt: &policies.Halt{Reason: v1alpha1.HealthCheckFailedReason, Message: `node n2 failed: health check "up" returned 0`}, Windows: policies.WindowWait{Shut: true}, Budget: budgetFull},
			wantReason: v1alpha1.HaltedReason, wantMessage: `The pool is halted (HealthCheckFailed): node n2 failed: health check "up" returned 0`,
		},
		"a halt, for a node": {
			in:         policies.WaitInput{Pool: "p", Node: node, Halt: &policies.Halt{Reason: v1alpha1.HealthCheckUnavailableReason, Message: "Prometheus is unreachable"}},
			wantReason: v1alpha1.HaltedReason, wantMessage: "pool p is halted: Prometheus is unreachable",
		},
		"a paused pool that is halted says paused": {
			in:         policies.WaitInput{Pool: "p", Paused: true, Halt: &policies.Halt{Reason: v1alpha1.HealthCheckFailedReason, Message: "m"}, Budget: budgetFull},
			wantReason: v1alpha1.PausedReason,
		},
		"the cache behind holds the pool, after every other hold": {
			in:          policies.WaitInput{Pool: "p", CacheBehind: "MaintenancePool p's spec changed at the API server (generation 3), and the operator's cache has generation 2", Windows: policies.WindowWait{Shut: true}, Budget: budgetFull},
			wantReason:  v1alpha1.CacheBehindReason,
			wantMessage: "MaintenancePool p's spec changed at the API server (generation 3), and the operator's cache has generation 2; nothing is admitted or approved until it does",
		},
		"a halted pool whose cache is behind says halted": {
			in:         policies.WaitInput{Pool: "p", Halt: &policies.Halt{Reason: v1alpha1.HealthCheckFailedReason, Message: "m"}, CacheBehind: "MaintenanceGate cluster was created at the API server, and the operator's cache does not have it yet"},
			wantReason: v1alpha1.HaltedReason,
		},
		"canaries come before the budget": {
			in:         policies.WaitInput{Pool: "p", Canaries: &policies.Canaries{Passed: 1, Want: 2}, Budget: budgetFull},
			wantReason: v1alpha1.CanariesReason, wantMessage: "1 of 2 run the new config and passed their checks",
		},
		"the budget, for the pool": {
			in:         policies.WaitInput{Pool: "p", Budget: budgetFull},
			wantReason: v1alpha1.BudgetExhaustedReason, wantMessage: "1 of 3 nodes may be unavailable and 1 are; waiting: n1, n2",
		},
		"the budget, for a node": {
			in:         policies.WaitInput{Pool: "p", Node: node, Budget: policies.Budget{Max: 1, Unavailable: 1, Pending: 1, Waiting: []string{"n1"}}},
			wantReason: v1alpha1.BudgetExhaustedReason, wantMessage: "pool p has as many nodes unavailable as it allows (1); it waits its turn",
		},
		"a pool over its budget": {
			in:         policies.WaitInput{Pool: "p", Node: node, Budget: policies.Budget{Max: 1, Unavailable: 3, Pending: 1, Waiting: []string{"n1"}}},
			wantReason: v1alpha1.BudgetExhaustedReason,
		},
		"a budget of zero admits nothing": {
			in:         policies.WaitInput{Pool: "p", Budget: policies.Budget{Max: 0, Unavailable: 0, Pending: 1, Waiting: []string{"n1"}}},
			wantReason: v1alpha1.BudgetExhaustedReason,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			reason, message, wait := policies.Wait(tc.in)
			g.Expect(wait).To(Equal(tc.wantReason != ""), "waits (reason %q, message %q)", reason, message)
			g.Expect(reason).To(Equal(tc.wantReason))
			g.Expect(message).To(ContainSubstring(tc.wantMessage))
		})
	}
}

// The gate runs the holds before it plans and reports the turns from its
// plan: the chain is the holds, then the turns, so a pool that a hold
// holds says the hold, however full its budget.
func TestHoldsComeBeforeTurns(t *testing.T) {
	g := NewWithT(t)
	g.Expect(policies.WaitChain()).To(HaveLen(len(policies.Holds()) + len(policies.Turns())))
	in := policies.WaitInput{Pool: "p", Paused: true, Budget: policies.Budget{Max: 1, Unavailable: 1, Nodes: 3, Pending: 2, Waiting: []string{"n1", "n2"}}}

	reason, message, held := policies.First(policies.Holds(), in)
	g.Expect(held).To(BeTrue())
	g.Expect(reason).To(Equal(v1alpha1.PausedReason))
	g.Expect(message).To(Equal("The pool is paused; 2 nodes waiting"))
	reason, _, _ = policies.First(policies.Turns(), in)
	g.Expect(reason).To(Equal(v1alpha1.BudgetExhaustedReason))
	reason, _, _ = policies.Wait(in)
	g.Expect(reason).To(Equal(v1alpha1.PausedReason))
}
