package pools

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
)

// Selection is every pool's node selector, read once, to tell which pools
// a node is in.
//
// A pool whose selector cannot be parsed (the API's schema refuses such
// selectors, so only one stored before its rules can be) does not know its
// nodes. Letting them fall into another pool would reboot them under that
// pool's budget, so they are kept out of every pool instead, as nodes that
// two pools select are: such a pool is one of the pools of every node it
// might select, beside the pool the node would be in otherwise. "Might
// select" is the cheapest rule that is never wrong: a selector is the AND
// of its requirements, so a node that fails one requirement that can be
// parsed is not selected whatever the others say; the nodes that meet all
// of those are in doubt, and with none that can be parsed, every node is.
//
// A node in flight is not chosen by its labels: it stays with the pool that
// admitted it until its maintenance ends (Of).
type Selection struct {
	selectors map[string]labels.Selector
	invalid   map[string]invalidSelector
	// uids are every pool object's UID, by name: a node in flight belongs
	// to the pool that admitted it only while that very object exists.
	uids map[string]types.UID
	// key names the selection (Key).
	key string
}

// Key is the same for two selections that put every node in the same
// pools: each pool's name, UID and what its selector selects (or might).
// What a node's pools are can be kept, by the node's version, while it
// stays.
func (s Selection) Key() string { return s.key }

// invalidSelector is a pool's selector that cannot be parsed.
type invalidSelector struct {
	err error
	// mightSelect selects the nodes the pool might select.
	mightSelect labels.Selector
}

// Selectors reads every pool's node selector but the default pool's.
func Selectors(pools []v1alpha1.MaintenancePool) Selection {
	s := Selection{selectors: make(map[string]labels.Selector, len(pools)), invalid: map[string]invalidSelector{},
		uids: make(map[string]types.UID, len(pools))}
	for i := range pools {
		p := &pools[i]
		if p.Name == v1alpha1.DefaultPoolName {
			continue
		}
		s.uids[p.Name] = p.UID
		sel, err := SelectorOf(p)
		if err != nil {
			s.invalid[p.Name] = invalidSelector{err: err, mightSelect: mightSelect(p.Spec.NodeSelector)}
			continue
		}
		s.selectors[p.Name] = sel
	}
	// A selector's type too: one that selects nothing and one that
	// selects everything both print as "".
	var parts []string
	for name, sel := range s.selectors {
		parts = append(parts, fmt.Sprintf("%s\x00%T\x00%s", name, sel, sel))
	}
	for name, inv := range s.invalid {
		parts = append(parts, fmt.Sprintf("%s\x01%T\x01%s", name, inv.mightSelect, inv.mightSelect))
	}
	for name, uid := range s.uids {
		parts = append(parts, fmt.Sprintf("%s\x03%s", name, uid))
	}
	slices.Sort(parts)
	s.key = strings.Join(parts, "\x02")
	return s
}

// SelectorOf parses a pool's node selector; the error names the field. A
// pool without one selects nothing.
func SelectorOf(pool *v1alpha1.MaintenancePool) (labels.Selector, error) {
	sel, err := pool.Spec.NodeSelector.AsSelector()
	if err != nil {
		return nil, fmt.Errorf("spec.nodeSelector cannot be parsed: %w", err)
	}
	return sel, nil
}

// Err says why the named pool's selector cannot be parsed; nil when it can
// (or the pool is unknown).
func (s Selection) Err(pool string) error { return s.invalid[pool].err }

// Of returns the pools a node is in, sorted. A node in flight is in the
// pool that admitted it, alone, while that pool exists (the same object,
// by its UID), whatever its labels say: it stays there until its
// maintenance ends (protocol.InFlightPool), and no pool that starts to
// select it meanwhile drives it, counts it or drops what it waits for.
// Any other node is where its labels put it (Selecting).
func Of(node *corev1.Node, s Selection) []string {
	name, uid := protocol.InFlightPool(node)
	return OfInFlight(node, s, name, uid)
}

// OfInFlight is Of for a node read already: name and uid are its
// InFlightPool.
func OfInFlight(node *corev1.Node, s Selection, name string, uid types.UID) []string {
	if s.admittedBy(name, uid) {
		return []string{name}
	}
	return Selecting(node, s)
}

// admittedBy reports whether the pool that admitted a node, by name and
// UID, is still there. The built-in default pool always is; another pool
// is there while its object is the one that admitted the node (an
// admission written before admissions named the UID names none). A pool
// deleted, or made again under the same name, admitted nothing: its
// maker may not select the node (config/admission/pool-selectors-policy.yaml),
// and the node goes where its labels put it.
func (s Selection) admittedBy(name string, uid types.UID) bool {
	if name == v1alpha1.DefaultPoolName {
		return true
	}
	have, ok := s.uids[name]
	return ok && name != "" && (uid == "" || uid == have)
}

// Selecting returns the pools whose selectors select a node by its labels,
// sorted: the pools whose selector matches it, or the default pool when
// none does, and every pool whose selector cannot be parsed and might
// select it. More than one means the node is admitted nowhere. A node in
// flight may be in another (Of).
func Selecting(node *corev1.Node, s Selection) []string {
	set := labels.Set(node.Labels)
	var names []string
	for name, sel := range s.selectors {
		if sel.Matches(set) {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		names = append(names, v1alpha1.DefaultPoolName)
	}
	for name, inv := range s.invalid {
		if inv.mightSelect.Matches(set) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// mightSelect selects every node a selector that cannot be parsed might
// select: those that meet each of its requirements that can be parsed.
func mightSelect(ls *v1alpha1.LabelSelector) labels.Selector {
	sel := labels.NewSelector()
	if ls == nil {
		return sel
	}
	for k, v := range ls.MatchLabels {
		if r, err := labels.NewRequirement(k, selection.Equals, []string{string(v)}); err == nil {
			sel = sel.Add(*r)
		}
	}
	ops := map[metav1.LabelSelectorOperator]selection.Operator{
		metav1.LabelSelectorOpIn: selection.In, metav1.LabelSelectorOpNotIn: selection.NotIn,
		metav1.LabelSelectorOpExists: selection.Exists, metav1.LabelSelectorOpDoesNotExist: selection.DoesNotExist,
	}
	for _, e := range ls.MatchExpressions {
		op, ok := ops[e.Operator]
		if !ok {
			continue
		}
		values := make([]string, 0, len(e.Values))
		for _, v := range e.Values {
			values = append(values, string(v))
		}
		if r, err := labels.NewRequirement(e.Key, op, values); err == nil {
			sel = sel.Add(*r)
		}
	}
	return sel
}
