package pools

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kmaint/kmaint/operator/api/v1alpha1"
	"github.com/kmaint/kmaint/policies"
)

// Selectors returns every pool's node selector but the default pool's.
// Pools whose selector is invalid select nothing; the gate reports them.
func Selectors(pools []v1alpha1.MaintenancePool) map[string]labels.Selector {
	selectors := make(map[string]labels.Selector, len(pools))
	for i := range pools {
		p := &pools[i]
		if p.Name == v1alpha1.DefaultPoolName || p.Spec.NodeSelector == nil {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(p.Spec.NodeSelector)
		if err != nil {
			continue
		}
		selectors[p.Name] = sel
	}
	return selectors
}

// Of returns the pools that select a node, sorted: the pools whose selector
// matches it, or the default pool when none does. More than one means the
// node is admitted nowhere.
func Of(node *corev1.Node, selectors map[string]labels.Selector) []string {
	var names []string
	for name, sel := range selectors {
		if sel.Matches(labels.Set(node.Labels)) {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return []string{v1alpha1.DefaultPoolName}
	}
	slices.Sort(names)
	return names
}

// Verdict says whether a request's windows let it be admitted now.
type Verdict struct {
	// Open is true when the request may be admitted now, as far as
	// windows go.
	Open bool
	// Next is when a closed request may next be admitted: the first moment
	// its pool's and its policy's windows are open together. Zero when
	// unknown, or never.
	Next time.Time
	// Policy names the RebootPolicy whose windows apply too, if any.
	Policy string
	// Problem says why the request is never admitted as things stand: its
	// policy's windows cannot be read.
	Problem string
}

// Windows evaluates requests' windows at one moment for one pool, parsing
// each policy's windows once.
type Windows struct {
	now      time.Time
	pool     []policies.Window
	policies map[string]policyWindows
}

type policyWindows struct {
	windows []policies.Window
	err     error
}

// NewWindows prepares the evaluation at now of requests in a pool with these
// (parsed) windows, given the cluster's RebootPolicies.
func NewWindows(now time.Time, pool []policies.Window, rebootPolicies []v1alpha1.RebootPolicy) *Windows {
	w := &Windows{now: now, pool: pool, policies: map[string]policyWindows{}}
	for _, p := range rebootPolicies {
		if len(p.Spec.Windows) == 0 {
			continue
		}
		parsed, err := policies.ParseWindows(p.Spec.Windows)
		w.policies[p.Name] = policyWindows{windows: parsed, err: err}
	}
	return w
}

// PolicyWindows reports whether any policy has windows, i.e. whether a
// request's policy can matter.
func (w *Windows) PolicyWindows() bool { return len(w.policies) > 0 }

// Request evaluates one request: ignoreWindows passes at once; otherwise the
// pool's windows, and those of the named policy (a policy without windows,
// or one that no longer exists, adds none), must be open together.
func (w *Windows) Request(ignoreWindows bool, policy string) Verdict {
	if ignoreWindows {
		return Verdict{Open: true}
	}
	sets := [][]policies.Window{w.pool}
	pw, ok := w.policies[policy]
	if ok && policy != "" {
		if pw.err != nil {
			return Verdict{Policy: policy, Problem: fmt.Sprintf("RebootPolicy %s spec.%v", policy, pw.err)}
		}
		sets = append(sets, pw.windows)
	} else {
		policy = ""
	}
	s := policies.AllOpen(w.now, sets...)
	return Verdict{Open: s.Open, Next: s.Next, Policy: policy}
}
