package poolnodes

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// The watches' goroutines tell a Kept of changes (Changed, Added) while a
// reconcile syncs it: a Sync reads only the sets of changes it took, and no
// change is lost, whether it came before the Sync took them or during it.
// Run under -race (make test does): when a Sync kept reading a set it had
// found empty, which Changed and Added went on writing, the race detector
// reported it here.
func TestKeptTakesChangesWhileTheWatchesMakeThem(t *testing.T) {
	sel := poolsAAndB()
	// Which of the watch and the Sync takes the Kept's lock first is the
	// scheduler's choice: enough tries have the watch write during a Sync.
	for try := range 200 {
		c := &syncCluster{nodes: map[string]*corev1.Node{}, values: map[string]string{}}
		for _, n := range []*corev1.Node{labelled("n1", "1", "a"), labelled("n2", "1", "a"), labelled("n3", "1", "a")} {
			c.nodes[n.Name] = n
		}
		k, d := NewKept[string](), NewDecoded()
		if err := c.sync(t, k, d, sel, "ctx"); err != nil {
			t.Fatal(err)
		}
		n2 := c.nodes["n2"]
		watched := make(chan struct{})
		go func() {
			defer close(watched)
			k.Changed("n1")
			k.Added(n2)
		}()
		if err := c.sync(t, k, d, sel, "ctx"); err != nil {
			t.Fatal(err)
		}
		made := slices.Clone(c.made)
		<-watched
		if err := c.sync(t, k, d, sel, "ctx"); err != nil {
			t.Fatal(err)
		}
		made = append(made, c.made...)
		// n1 was said to have changed: one of the two Syncs made it again.
		// n2's object is the one its value was made from: neither did.
		if slices.Sort(made); !slices.Equal(made, []string{"n1"}) {
			t.Fatalf("try %d: the Syncs during and after the watch's changes made %v, want [n1]", try, made)
		}
	}
}
