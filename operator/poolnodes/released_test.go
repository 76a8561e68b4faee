package poolnodes

import (
	"runtime"
	"testing"
	"weak"

	corev1 "k8s.io/api/core/v1"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/internal/pools"
)

// A pool walked rarely (the default pool, with every node in another) does
// not keep alive the versions of the nodes its last walk saw once the cache
// has replaced them; the next walk makes the node's value again from the
// version the cache holds then, as it would have otherwise.
func TestKeptLetsGoOfANodeTheCacheReplaced(t *testing.T) {
	d, kp := NewDecoded(), NewKeptPools[string]()
	sel := pools.Selectors(nil)
	walk := func(nodes []*corev1.Node) (made []string) {
		t.Helper()
		err := kp.Of("default").Walk(d, nodes, "default", sel, "ctx", func(s protocol.NodeState, _ []string) (string, error) {
			made = append(made, s.Node.Name+"@"+s.Node.ResourceVersion)
			return s.Node.ResourceVersion, nil
		}, func(*string) {})
		if err != nil {
			t.Fatal(err)
		}
		return made
	}
	old := requesting("a", "u-a", "1", "b")
	if made := walk([]*corev1.Node{old, requesting("b", "u-b", "1", "b")}); len(made) != 2 {
		t.Fatalf("first walk made %v", made)
	}
	oldRef := weak.Make(old)
	newer := requesting("a", "u-a", "2", "b")
	kp.Replaced(old)
	old = nil
	runtime.GC()
	if oldRef.Value() != nil {
		t.Fatal("the replaced version of node a is still held")
	}
	if made := walk([]*corev1.Node{newer, requesting("b", "u-b", "1", "b")}); len(made) != 2 || made[0] != "a@2" {
		// b's object is another pointer here too: the test's cache made
		// it again.
		t.Fatalf("second walk made %v, want a@2 made again", made)
	}
}
