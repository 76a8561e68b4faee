package poolnodes

import (
	"context"
	"errors"
	"maps"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/internal/pools"
)

// syncCluster is a cache of nodes, and what a Sync of pool "a" over it made
// and told.
type syncCluster struct {
	nodes map[string]*corev1.Node
	// lists counts the Syncs that read every node.
	lists int
	made  []string
	// values is what the caller holds after the Sets: node to value.
	values map[string]string
	resets int
	gone   []string
	fail   string
}

func (c *syncCluster) sync(t *testing.T, k *Kept[string], d *Decoded, sel pools.Selection, context string) error {
	t.Helper()
	c.made, c.gone = nil, nil
	err := k.Sync(Sync[string]{
		Decoded: d,
		List: func() ([]*corev1.Node, error) {
			c.lists++
			return slices.Collect(maps.Values(c.nodes)), nil
		},
		Get:       func(name string) (*corev1.Node, error) { return c.nodes[name], nil },
		Pool:      "a",
		Selection: sel,
		Context:   context,
		Build: func(s protocol.NodeState, _ []string) (string, error) {
			c.made = append(c.made, s.Node.Name)
			if s.Node.Name == c.fail {
				return "", errors.New("cannot make " + c.fail)
			}
			return s.Node.Name + ":" + s.Node.ResourceVersion, nil
		},
		Reset: func() { c.resets++; clear(c.values) },
		Set: func(name string, v *string) {
			if v == nil {
				delete(c.values, name)
				return
			}
			c.values[name] = *v
		},
		Gone: func(name string) { c.gone = append(c.gone, name) },
	})
	slices.Sort(c.made)
	return err
}

// After a Sync has read every node, the next reads only the nodes the watch
// named (Added, Replaced) or Changed named, and what the caller holds from
// Set is what a Sync of every node would give: a node written, relabelled
// out of the pool, deleted, new; a node build failed for is read again; a
// new context reads every node again, after Reset.
func TestSyncReadsOnlyWhatChangedAndTellsWhatAFullReadWould(t *testing.T) {
	sel := poolsAAndB()
	c := &syncCluster{nodes: map[string]*corev1.Node{}, values: map[string]string{}}
	for _, n := range []*corev1.Node{labelled("n1", "1", "a"), labelled("n2", "1", "a"), labelled("n3", "1", "a"), labelled("x", "1", "b")} {
		c.nodes[n.Name] = n
	}
	d, k := NewDecoded(), NewKept[string]()
	write := func(n *corev1.Node) {
		old := c.nodes[n.Name]
		c.nodes[n.Name] = n
		if old == nil {
			k.Added(n)
			return
		}
		k.Replaced(old)
	}
	step := func(name, context string, wantMade []string, wantLists int) {
		t.Helper()
		err := c.sync(t, k, d, sel, context)
		if c.fail == "" && err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if c.fail != "" && err == nil {
			t.Fatalf("%s: no error for %s", name, c.fail)
		}
		if !slices.Equal(c.made, wantMade) {
			t.Fatalf("%s: made %v, want %v", name, c.made, wantMade)
		}
		if c.lists != wantLists {
			t.Fatalf("%s: %d Syncs read every node, want %d", name, c.lists, wantLists)
		}
		if c.fail != "" {
			return
		}
		// What a fresh Kept, reading every node, gives.
		fresh := &syncCluster{nodes: c.nodes, values: map[string]string{}}
		if err := fresh.sync(t, NewKept[string](), NewDecoded(), sel, context); err != nil || !maps.Equal(c.values, fresh.values) {
			t.Fatalf("%s: the caller holds %v, a full read gives %v", name, c.values, fresh.values)
		}
	}
	step("first: every node", "ctx", []string{"n1", "n2", "n3"}, 1)
	step("nothing changed", "ctx", nil, 1)
	write(labelled("n2", "2", "a"))
	step("n2 written", "ctx", []string{"n2"}, 1)
	write(labelled("n3", "2", "b"))
	step("n3 relabelled out", "ctx", nil, 1)
	delete(c.nodes, "n1")
	k.Replaced(labelled("n1", "1", "a")) // a delete event's object: not the one kept
	step("n1 deleted", "ctx", nil, 1)
	if !slices.Equal(c.gone, []string{"n1"}) {
		t.Fatalf("gone %v, want [n1]", c.gone)
	}
	write(labelled("n4", "3", "a"))
	c.fail = "n4"
	step("n4 new, build fails", "ctx", []string{"n4"}, 1)
	c.fail = ""
	step("n4 read again", "ctx", []string{"n4"}, 1)
	k.Changed("n2")
	step("n2's requests changed", "ctx", []string{"n2"}, 1)
	resets := c.resets
	step("another context", "ctx2", []string{"n2", "n4"}, 2)
	if c.resets != resets+1 {
		t.Fatalf("a new context reset the caller %d times, want once", c.resets-resets)
	}
}

// TrackNodes tells the Kept of a change, then the Seen of its version,
// before it hands the event on: the reconcile the event causes finds the
// node to read, and a view read after a version holds its change.
func TestTrackNodesTellsTheKeptThenTheVersionBeforeItEnqueues(t *testing.T) {
	var order []string
	seen := &Seen{}
	kept := trackerFunc{added: func(n *corev1.Node) { order = append(order, "added "+n.Name+" at "+seen.Version()) },
		replaced: func(n *corev1.Node) { order = append(order, "replaced "+n.Name+" at "+seen.Version()) }}
	enqueued := func() { order = append(order, "enqueued at "+seen.Version()) }
	next := handler.Funcs{
		CreateFunc: func(context.Context, event.CreateEvent, workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueued()
		},
		UpdateFunc: func(context.Context, event.UpdateEvent, workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueued()
		},
		DeleteFunc: func(context.Context, event.DeleteEvent, workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueued()
		},
	}
	// Updates of n2 do not pass: the Kept and the Seen are told, nothing
	// is enqueued.
	onlyN1 := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetName() == "n1" })
	h := TrackNodes(kept, seen, next, onlyN1)
	n1, n2 := requesting("n1", "u1", "7", "b"), requesting("n2", "u2", "5", "b")
	n1b, n2b := requesting("n1", "u1", "12", "b"), requesting("n2", "u2", "9", "b")
	ctx := context.Background()
	h.Create(ctx, event.CreateEvent{Object: n1}, nil)
	h.Update(ctx, event.UpdateEvent{ObjectOld: n2, ObjectNew: n2b}, nil)
	h.Update(ctx, event.UpdateEvent{ObjectOld: n1, ObjectNew: n1b}, nil)
	// A list after a compacted watch hands on an older version after a
	// newer one: the newest stays.
	h.Update(ctx, event.UpdateEvent{ObjectOld: n2b, ObjectNew: n2b}, nil)
	h.Delete(ctx, event.DeleteEvent{Object: n1b}, nil)
	want := []string{"added n1 at ", "enqueued at 7", "replaced n2 at 7", "replaced n1 at 9", "enqueued at 12",
		"replaced n2 at 12", "replaced n1 at 12", "enqueued at 12"}
	if !slices.Equal(order, want) {
		t.Fatalf("order %v, want %v", order, want)
	}
	var none *Seen
	if got := none.Version(); got != "" {
		t.Fatalf("no Seen: version %q, want none", got)
	}
	h = TrackNodes(kept, none, next, onlyN1)
	h.Create(ctx, event.CreateEvent{Object: n1}, nil) // a nil Seen is told nothing, and does not fail
}

type trackerFunc struct{ added, replaced func(*corev1.Node) }

func (f trackerFunc) Added(n *corev1.Node)    { f.added(n) }
func (f trackerFunc) Replaced(n *corev1.Node) { f.replaced(n) }
