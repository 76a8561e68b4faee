package policies

import (
	"fmt"
	"strings"
	"time"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
)

// WaitInput is what tells why requests wait: those of one node (for its
// NodeMaintenances' Waiting condition), or those of a whole pool (for the
// pool's Blocked condition). The gate fills it from what it sees and
// decides; the NodeMaintenance controller from the node and its pool's
// spec and status.
type WaitInput struct {
	// Pool names the node's pool, or the pool.
	Pool string
	// Node is the node whose requests wait, as the protocol reads it; nil
	// for the whole pool.
	Node *protocol.NodeState
	// Pools are the pools that select the node; more than one admits it
	// nowhere. Unused for the whole pool, whose Conflicting condition
	// says which nodes are in other pools.
	Pools []string
	// UnreadablePools say which MaintenancePools cannot be read, and why:
	// while there is one, no pool admits anything.
	UnreadablePools []string
	// SelectorErr says why the pool's nodeSelector cannot be parsed; for a
	// node, Pool is then the pool that might select it.
	SelectorErr error
	// WindowErr says why the pool's windows cannot be read.
	WindowErr error
	// Paused is the pool's spec.paused.
	Paused bool
	// Windows is what the maintenance windows say.
	Windows WindowWait
	// Blocking is the blocking query that holds admissions; nil when none.
	Blocking *Blocking
	// Budget is the pool's budget and what waits for it.
	Budget Budget
	// Stop is what the cluster's MaintenanceGate says when it stops every
	// pool's admissions; nil when it does not.
	Stop *v1alpha1.Stop
	// PodSelectorErr says why the pool's blockingPodSelector cannot be
	// parsed; the pool admits nothing then.
	PodSelectorErr error
	// QuorumAtRisk says why a control-plane pool's guard lets no more of
	// its nodes go down now; empty when it does not hold (or was not
	// asked: only the gate reads the etcd members).
	QuorumAtRisk string
	// SilencesErr says why the pool's spec.silences cannot make silences;
	// the pool admits nothing then.
	SilencesErr error
	// SilencesUnavailable says, for the whole pool, which admitted nodes
	// wait uncordoned for silences that cannot be made, and why, in a
	// pool whose onUnreachable is Hold; empty when none does.
	SilencesUnavailable string
	// OptOut is, for one node, what keeps it from being admitted (see
	// protocol.NodeState.OptOut); unused for the whole pool.
	OptOut *protocol.OptOut
	// OptedOut says, for the whole pool, which waiting nodes are held by an
	// opt-out and why; unused for one node.
	OptedOut []string
	// Halt says why the pool is halted by its health checks; nil when it
	// is not.
	Halt *Halt
	// Canaries is, while a rollout's canaries hold the waiting requests,
	// how many passed of how many; nil when they hold none.
	Canaries *Canaries
	// CacheBehind says how the gate's cache is behind the API server in
	// what decides admissions, or why that cannot be told; empty when it
	// is not, or when nobody asked. Only the gate asks (a read past its
	// cache of the pool and the MaintenanceGate), once a node would be
	// admitted or approved; unused for one node.
	CacheBehind string
	// Now is when the wait is told; rules that change with time alone
	// (a drain's retry backoff) read it.
	Now time.Time
}

// WindowWait is what the maintenance windows say of the waiting requests.
type WindowWait struct {
	// Shut is true when windows hold the node (none of its requests'
	// windows is open), or every waiting node of the pool.
	Shut bool
	// Next is the earliest moment one of them may be admitted; zero when
	// unknown or never.
	Next time.Time
	// Closed names whose windows are shut, e.g. "pool p and RebootPolicy
	// x"; for one node only.
	Closed []string
	// Problems say which policies' windows cannot be read.
	Problems []string
	// Frozen says which freezes hold the requests (see
	// FreezeState.Describe); Shut is then true too. For the whole pool,
	// the pool's own freeze, set only while it holds waiting nodes.
	Frozen []string
	// FreezeProblems say which freezes that hold the requests cannot be
	// read (fail closed).
	FreezeProblems []string
}

// Blocking is a blocking query that holds admissions.
type Blocking struct {
	// Reason is BlockingQueryReason, BlockingQueryFailedReason, or the
	// reason an object check cannot be evaluated (InvalidObjectCheck ...).
	Reason string
	// Message says which query and what it returned.
	Message string
}

// Halt is why a pool's health checks halt it.
type Halt struct {
	// Reason is HealthCheckFailedReason, HealthCheckUnavailableReason, or
	// the reason an object check cannot be evaluated (InvalidObjectCheck ...).
	Reason string
	// Message names the failed nodes and checks, or why they cannot run.
	Message string
}

// Canaries is how many of a rollout's canaries passed their checks, of
// how many go first.
type Canaries struct {
	Passed, Want int
}

// Budget is a pool's budget and what waits for it.
type Budget struct {
	// Max is maxUnavailable resolved to nodes.
	Max int
	// Unavailable is how many of the pool's nodes count against it.
	Unavailable int
	// Nodes is how many nodes the pool has.
	Nodes int
	// Pending is how many nodes are not admitted, and Waiting names them,
	// or the first of them in the queue's order at thousands of nodes;
	// for one node, just it.
	Pending int
	Waiting []string
	// Relabelled names the nodes in flight in the pool whose labels put
	// them in another pool now: they stay the pool's, and count in
	// Unavailable, until their maintenance ends. Unused for one node.
	Relabelled []string
}

// WaitFunc is one reason to wait: it returns the condition's reason and
// message and true when it holds.
type WaitFunc func(WaitInput) (reason, message string, wait bool)

// WaitChain is every reason to wait, in the order they are checked: the
// holds first, then the turns. The first that holds is the one reported.
func WaitChain() []WaitFunc {
	return append(Holds(), Turns()...)
}

// Holds are the reasons to wait that hold every request of the pool (or of
// the node) whatever the budget: what makes the node or the pool unusable
// first, then what stops it (a pause, a halt). The gate runs them once per
// reconcile, before it plans: while one holds, nothing is admitted, and it
// is what the pool's Blocked condition says. Adding a hold is a function
// here, its reason constant, and its case in the tests.
func Holds() []WaitFunc {
	return []WaitFunc{
		UnreadableAnnotations,
		UnreadablePool,
		ClusterStopped,
		ConflictingPools,
		InvalidSelector,
		InvalidWindow,
		InvalidBlockingPodSelector,
		InvalidSilences,
		SilencesUnavailable,
		DrainRetryBackoff,
		Paused,
		Halted,
		QuorumAtRisk,
		CacheBehind,
	}
}

// Turns are the reasons a request waits when nothing holds its pool: its
// own (an opt-out, a freeze, closed windows), then what the pool's plan
// left it (a blocking query, the canaries, the budget). For the whole pool
// they read the gate's plan, so they say what the plan decided and decide
// nothing themselves.
func Turns() []WaitFunc {
	return []WaitFunc{
		OptedOut,
		Frozen,
		OutsideWindow,
		BlockingQuery,
		WaitingForCanaries,
		BudgetExhausted,
	}
}

// Wait runs the chain and returns the first reason that holds.
func Wait(in WaitInput) (reason, message string, wait bool) {
	return First(WaitChain(), in)
}

// First returns the first reason of chain that holds, in order.
func First(chain []WaitFunc, in WaitInput) (reason, message string, wait bool) {
	for _, f := range chain {
		if reason, message, wait = f(in); wait {
			return reason, message, true
		}
	}
	return "", "", false
}

func (in WaitInput) forNode() bool { return in.Node != nil }

// UnreadableAnnotations: nothing is done to a node whose kmaint annotations
// cannot be read until they can.
func UnreadableAnnotations(in WaitInput) (string, string, bool) {
	if in.Node == nil || in.Node.Unreadable == nil {
		return "", "", false
	}
	return v1alpha1.MalformedAnnotationReason, fmt.Sprintf("%v; nothing is done to the node until they can be read", in.Node.Unreadable), true
}

// UnreadablePool: while a MaintenancePool cannot be read, no pool admits
// anything. Its selector is unknown, so any node may be its own: admitted
// under another pool (the default pool, which takes the nodes no readable
// pool selects, above all), it would escape the unreadable pool's budget,
// pause and windows.
func UnreadablePool(in WaitInput) (string, string, bool) {
	if len(in.UnreadablePools) == 0 {
		return "", "", false
	}
	which := strings.Join(in.UnreadablePools, "; ")
	if in.forNode() {
		return v1alpha1.UnreadablePoolReason, fmt.Sprintf("%s; no pool admits a node until it can be read or is deleted", which), true
	}
	return v1alpha1.UnreadablePoolReason, fmt.Sprintf("%s; no pool admits, drains or approves a node until it can be read or is deleted, since the nodes it selects cannot be told", which), true
}

// ConflictingPools: a node selected by more than one pool is admitted by none.
func ConflictingPools(in WaitInput) (string, string, bool) {
	if len(in.Pools) < 2 {
		return "", "", false
	}
	return v1alpha1.ConflictingReason, fmt.Sprintf("its node is selected by pools %s, and no pool admits it until only one does", strings.Join(in.Pools, ", ")), true
}

// InvalidSelector: a pool whose selector cannot be parsed admits nothing,
// and no pool admits a node it might select (which nodes it selects is
// unknown).
func InvalidSelector(in WaitInput) (string, string, bool) {
	if in.SelectorErr == nil {
		return "", "", false
	}
	if in.forNode() {
		return v1alpha1.InvalidSelectorReason, fmt.Sprintf("pool %s might select the node and its %v; no pool admits the node until that selector can be parsed", in.Pool, in.SelectorErr), true
	}
	return v1alpha1.InvalidSelectorReason, in.SelectorErr.Error(), true
}

// InvalidWindow: a window that cannot be read is not taken for an open one.
func InvalidWindow(in WaitInput) (string, string, bool) {
	if in.WindowErr == nil {
		return "", "", false
	}
	if in.forNode() {
		return v1alpha1.InvalidWindowReason, fmt.Sprintf("pool %s's %v; nothing is admitted until it can be read", in.Pool, in.WindowErr), true
	}
	return v1alpha1.InvalidWindowReason, in.WindowErr.Error(), true
}

// DrainRetryBackoff: a node whose drain timed out waits for its next
// attempt (drain.onTimeout Retry), uncordoned.
func DrainRetryBackoff(in WaitInput) (string, string, bool) {
	if in.Node == nil || !in.Node.BackingOff(in.Now) {
		return "", "", false
	}
	return v1alpha1.DrainRetryBackoffReason, in.Node.Retrying().Waiting(), true
}

// Paused: a paused pool admits nothing.
func Paused(in WaitInput) (string, string, bool) {
	if !in.Paused {
		return "", "", false
	}
	if in.forNode() {
		return v1alpha1.PausedReason, fmt.Sprintf("pool %s is paused", in.Pool), true
	}
	return v1alpha1.PausedReason, fmt.Sprintf("The pool is paused; %d nodes waiting", in.Budget.Pending), true
}

// Halted: a pool whose health checks failed for a node it holds, or
// cannot run for a settling node, admits nothing new until it is resumed
// or they recover.
func Halted(in WaitInput) (string, string, bool) {
	if in.Halt == nil {
		return "", "", false
	}
	if in.forNode() {
		return v1alpha1.HaltedReason, fmt.Sprintf("pool %s is halted: %s", in.Pool, in.Halt.Message), true
	}
	return v1alpha1.HaltedReason, fmt.Sprintf("The pool is halted (%s): %s", in.Halt.Reason, in.Halt.Message), true
}

// CacheBehind: a gate whose cache is behind the API server in what decides
// admissions (a budget lowered, a pool paused or halted, the cluster
// stopped while a watch was away) admits and approves nothing until it
// catches up: it would act on a decision the change forbids. It comes last,
// as the gate asks the API server only once nothing else holds the pool.
func CacheBehind(in WaitInput) (string, string, bool) {
	if in.CacheBehind == "" {
		return "", "", false
	}
	return v1alpha1.CacheBehindReason, in.CacheBehind + "; nothing is admitted or approved until it does", true
}

// WaitingForCanaries: the first nodes of a rollout go alone, and the rest
// wait until they pass their health checks.
func WaitingForCanaries(in WaitInput) (string, string, bool) {
	c := in.Canaries
	if c == nil {
		return "", "", false
	}
	return v1alpha1.CanariesReason, fmt.Sprintf("pool %s's rollout waits for its canaries: %d of %d run the new config and passed their checks", in.Pool, c.Passed, c.Want), true
}

// ClusterStopped: while the cluster's MaintenanceGate is paused, or cannot
// be read, no pool admits anything new.
func ClusterStopped(in WaitInput) (string, string, bool) {
	if in.Stop == nil {
		return "", "", false
	}
	return in.Stop.Reason, in.Stop.Message, true
}

// InvalidBlockingPodSelector: a pool that cannot tell which pods block a
// node admits none of its nodes.
func InvalidBlockingPodSelector(in WaitInput) (string, string, bool) {
	if in.PodSelectorErr == nil {
		return "", "", false
	}
	msg := fmt.Sprintf("the blockingPodSelector of pool %s cannot be parsed (%v); nothing is admitted until it can", in.Pool, in.PodSelectorErr)
	return v1alpha1.InvalidBlockingPodSelectorReason, msg, true
}

// QuorumAtRisk: a control-plane pool admits and approves nothing while one
// more node down could cost the cluster its etcd quorum.
func QuorumAtRisk(in WaitInput) (string, string, bool) {
	if in.QuorumAtRisk == "" {
		return "", "", false
	}
	if in.forNode() {
		// As its pool's Blocked condition says it.
		return v1alpha1.QuorumAtRiskReason, in.QuorumAtRisk, true
	}
	return v1alpha1.QuorumAtRiskReason, fmt.Sprintf("pool %s is a control-plane pool and %s; nothing is admitted or approved until it is not", in.Pool, in.QuorumAtRisk), true
}

// InvalidSilences: a pool whose silences cannot be made admits none of
// its nodes: it would reboot them unsilenced, or not at all.
func InvalidSilences(in WaitInput) (string, string, bool) {
	if in.SilencesErr == nil {
		return "", "", false
	}
	msg := fmt.Sprintf("the silences of pool %s cannot be used (%v); nothing is admitted until they can", in.Pool, in.SilencesErr)
	return v1alpha1.InvalidSilencesReason, msg, true
}

// SilencesUnavailable: while an admitted node waits for silences that
// cannot be made (onUnreachable: Hold), its pool admits nothing new: the
// next would wait the same way.
func SilencesUnavailable(in WaitInput) (string, string, bool) {
	if in.SilencesUnavailable == "" {
		return "", "", false
	}
	return v1alpha1.SilencesUnavailableReason, in.SilencesUnavailable + "; nothing new is admitted until they are made (onUnreachable: Hold)", true
}

// OptedOut: a node that a person, or a pod on it, keeps from being
// disrupted waits until the opt-out is lifted; its turn passes to the next
// node. The pool reports it when every waiting node is held so.
func OptedOut(in WaitInput) (string, string, bool) {
	if in.forNode() {
		if in.OptOut == nil {
			return "", "", false
		}
		return in.OptOut.Reason, in.OptOut.Message, true
	}
	if len(in.OptedOut) == 0 || len(in.OptedOut) < in.Budget.Pending {
		return "", "", false
	}
	return v1alpha1.OptedOutReason, fmt.Sprintf("every waiting node is opted out: %s", strings.Join(in.OptedOut, "; ")), true
}

// OutsideWindow: requests wait for a window of their pool (and of their
// policy) to open, unless they ignore windows.
func OutsideWindow(in WaitInput) (string, string, bool) {
	w := in.Windows
	if !w.Shut {
		return "", "", false
	}
	if !in.forNode() {
		msg := "No maintenance window is open"
		if !w.Next.IsZero() {
			msg = "No maintenance window is open until " + w.Next.UTC().Format(time.RFC3339)
		}
		msg += fmt.Sprintf("; %d nodes waiting", in.Budget.Pending)
		if len(w.Problems) > 0 {
			msg += "; requests of these policies are not admitted until their windows can be read: " + strings.Join(w.Problems, "; ")
		}
		return v1alpha1.OutsideWindowReason, msg, true
	}
	var parts []string
	if len(w.Closed) > 0 {
		msg := "outside the maintenance windows of " + strings.Join(w.Closed, "; of ")
		if w.Next.IsZero() {
			msg += "; no coming opening is known"
		} else {
			msg += "; the next opens at " + w.Next.UTC().Format(time.RFC3339)
		}
		parts = append(parts, msg)
	}
	if len(w.Problems) > 0 {
		parts = append(parts, "windows that cannot be read: "+strings.Join(w.Problems, "; "))
	}
	reason := v1alpha1.OutsideWindowReason
	if len(w.Closed) == 0 {
		reason = v1alpha1.InvalidWindowReason
	}
	return reason, strings.Join(parts, "; "), true
}

// BlockingQuery: while a blocking query returns a result, or cannot be run,
// nothing new is admitted.
func BlockingQuery(in WaitInput) (string, string, bool) {
	if in.Blocking == nil {
		return "", "", false
	}
	if in.forNode() {
		return in.Blocking.Reason, fmt.Sprintf("pool %s: %s", in.Pool, in.Blocking.Message), true
	}
	return in.Blocking.Reason, in.Blocking.Message, true
}

// BudgetExhausted: the pool has as many nodes unavailable as it allows, so
// waiting nodes wait their turn.
func BudgetExhausted(in WaitInput) (string, string, bool) {
	b := in.Budget
	if b.Pending == 0 || b.Unavailable < b.Max {
		return "", "", false
	}
	if in.forNode() {
		return v1alpha1.BudgetExhaustedReason, fmt.Sprintf("pool %s has as many nodes unavailable as it allows (%d); it waits its turn", in.Pool, b.Max), true
	}
	msg := fmt.Sprintf("%d of %d nodes may be unavailable and %d are; waiting: %s", b.Max, b.Nodes, b.Unavailable, strings.Join(b.Waiting, ", "))
	if more := b.Pending - len(b.Waiting); more > 0 {
		msg += fmt.Sprintf(" and %d more", more)
	}
	if len(b.Relabelled) > 0 {
		msg += "; counted until their maintenance ends, though their labels put them in another pool now: " + strings.Join(b.Relabelled, ", ")
	}
	return v1alpha1.BudgetExhaustedReason, msg, true
}

// Frozen: requests wait out their pool's and their policy's freezes, unless
// their NodeMaintenance has ignoreFreezes; a freeze that cannot be read
// holds them as one in force does. It comes before OutsideWindow: a window
// opening changes nothing while a freeze holds.
func Frozen(in WaitInput) (string, string, bool) {
	w := in.Windows
	if !w.Shut || len(w.Frozen)+len(w.FreezeProblems) == 0 {
		return "", "", false
	}
	reason := v1alpha1.FrozenReason
	if len(w.Frozen) == 0 {
		reason = v1alpha1.InvalidFreezeReason
	}
	parts := append(append([]string{}, w.Frozen...), w.FreezeProblems...)
	msg := "frozen by " + strings.Join(parts, "; and by ")
	if !in.forNode() {
		msg = "Frozen by " + strings.Join(parts, "; and by ") + fmt.Sprintf("; %d nodes waiting", in.Budget.Pending)
		return reason, msg, true
	}
	if len(w.Closed) > 0 {
		msg += "; also outside the maintenance windows of " + strings.Join(w.Closed, "; of ")
	}
	if !w.Next.IsZero() {
		msg += "; it may be admitted from " + w.Next.UTC().Format(time.RFC3339)
	}
	return reason, msg, true
}
