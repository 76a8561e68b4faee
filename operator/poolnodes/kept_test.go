package poolnodes

import (
	"errors"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/internal/pools"
)

// keptWalk is one Walk of a Kept: the nodes made again, and those visited
// in order.
type keptWalk struct {
	made, visited []string
}

func walkKept(t *testing.T, k *Kept[string], d *Decoded, nodes []*corev1.Node, sel pools.Selection, context string, fail string) (keptWalk, error) {
	t.Helper()
	var w keptWalk
	err := k.Walk(d, nodes, "a", sel, context, func(s protocol.NodeState, others []string) (string, error) {
		w.made = append(w.made, s.Node.Name)
		if s.Node.Name == fail {
			return "", errors.New("cannot make " + fail)
		}
		return s.Node.Name + ":" + s.Node.ResourceVersion, nil
	}, func(v *string) {
		w.visited = append(w.visited, *v)
	})
	slices.Sort(w.made)
	return w, err
}

// labelled is a node asking for a reboot, labelled pool=pool.
func labelled(name, rv, pool string) *corev1.Node {
	n := requesting(name, "u-"+name, rv, "b")
	n.Labels = map[string]string{"pool": pool}
	return n
}

// poolsAAndB selects pools a and b by the label pool.
func poolsAAndB() pools.Selection {
	pool := func(name string) v1alpha1.MaintenancePool {
		return v1alpha1.MaintenancePool{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.MaintenancePoolSpec{
			NodeSelector: &v1alpha1.LabelSelector{MatchLabels: map[string]v1alpha1.SelectorValue{"pool": v1alpha1.SelectorValue(name)}}}}
	}
	return pools.Selectors([]v1alpha1.MaintenancePool{pool("a"), pool("b")})
}

// A node's value is made again only when its object changed, when it is
// said to have changed, or when the context changed; the pool's nodes come
// out in name order whatever the cache's order; deleted nodes are
// forgotten; a node whose value could not be made is made at the next walk.
func TestKeptMakesAgainOnlyWhatChanged(t *testing.T) {
	sel := poolsAAndB()
	c, a, b, other := labelled("c", "1", "a"), labelled("a", "1", "a"), labelled("b", "1", "a"), labelled("x", "1", "b")
	d, k := NewDecoded(), NewKept[string]()
	check := func(step string, nodes []*corev1.Node, context, fail string, wantMade, wantVisited []string) {
		t.Helper()
		got, err := walkKept(t, k, d, nodes, sel, context, fail)
		if fail == "" && err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if fail != "" && err == nil {
			t.Fatalf("%s: a value that could not be made was not reported", step)
		}
		if !slices.Equal(got.made, wantMade) {
			t.Errorf("%s: made %v, want %v", step, got.made, wantMade)
		}
		if fail == "" && !slices.Equal(got.visited, wantVisited) {
			t.Errorf("%s: visited %v, want %v", step, got.visited, wantVisited)
		}
	}
	all := []*corev1.Node{c, other, a, b}
	check("first walk", all, "ctx", "", []string{"a", "b", "c"}, []string{"a:1", "b:1", "c:1"})
	check("nothing changed", all, "ctx", "", nil, []string{"a:1", "b:1", "c:1"})

	b2 := labelled("b", "2", "a")
	all = []*corev1.Node{c, other, a, b2}
	check("b written", all, "ctx", "", []string{"b"}, []string{"a:1", "b:2", "c:1"})

	k.Changed("c")
	check("c's NodeMaintenance changed", all, "ctx", "", []string{"c"}, []string{"a:1", "b:2", "c:1"})
	k.Changed("")
	check("every node changed", all, "ctx", "", []string{"a", "b", "c"}, []string{"a:1", "b:2", "c:1"})
	check("another context", all, "ctx2", "", []string{"a", "b", "c"}, []string{"a:1", "b:2", "c:1"})

	moved := labelled("a", "2", "b")
	all = []*corev1.Node{c, other, moved, b2}
	check("a relabelled into b", all, "ctx2", "", []string{}, []string{"b:2", "c:1"})

	all = []*corev1.Node{c, other}
	check("b and a deleted", all, "ctx2", "", nil, []string{"c:1"})
	if _, ok := k.byName["b"]; ok {
		t.Errorf("a deleted node is still kept")
	}

	d2 := labelled("d", "1", "a")
	all = []*corev1.Node{d2, c, other}
	check("d cannot be made", all, "ctx2", "d", []string{"d"}, nil)
	check("d made at the next walk", all, "ctx2", "", []string{"d"}, []string{"c:1", "d:1"})
	// Nothing is kept of objects no longer the cache's.
	if len(k.byObject) != len(all) || len(k.byName) != len(all) {
		t.Errorf("kept %d objects and %d names of %d nodes", len(k.byObject), len(k.byName), len(all))
	}
	for _, n := range all {
		if k.byObject[n] == nil {
			t.Errorf("node %s is not found by its object", n.Name)
		}
	}
}

// A node in flight is walked by the pool that admitted it, not by the one
// its labels put it in now: that one neither builds it nor visits it.
func TestKeptWalksANodeInFlightInThePoolThatAdmittedIt(t *testing.T) {
	sel := poolsAAndB()
	moved := labelled("m", "1", "b")
	protocol.Admit(protocol.Admission{BootID: "b", Requests: []string{"r"}, Pool: "a"}).Apply(moved)
	nodes := []*corev1.Node{moved, labelled("x", "1", "b")}
	for pool, want := range map[string][]string{"a": {"m"}, "b": {"x"}} {
		var visited []string
		err := NewKept[string]().Walk(NewDecoded(), nodes, pool, sel, "ctx", func(s protocol.NodeState, others []string) (string, error) {
			if len(others) > 0 {
				t.Errorf("pool %s: node %s is in %v too", pool, s.Node.Name, others)
			}
			return s.Node.Name, nil
		}, func(v *string) { visited = append(visited, *v) })
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(visited, want) {
			t.Errorf("pool %s walked %v, want %v", pool, visited, want)
		}
	}
}
