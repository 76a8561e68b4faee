package poolnodes

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kmaint/kmaint/api/protocol"
)

func requesting(name, uid, rv, boot string, ids ...string) *corev1.Node {
	req := protocol.Requested{BootID: boot}
	for _, id := range ids {
		req.Requests = append(req.Requests, protocol.Request{ID: id, Source: "manual", Time: time.Unix(1700000000, 0).UTC()})
	}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(uid), ResourceVersion: rv,
		Annotations: map[string]string{protocol.RebootRequested: protocol.Encode(req)}}}
	n.Status.NodeInfo.BootID = boot
	return n
}

// A version of a node is decoded once; a new version, a new node of the
// same name, or a node with no version (not from the API server) is
// decoded again, and each read names the Node it was given.
func TestDecodedStatesDecodeEachVersionOnce(t *testing.T) {
	d := NewDecoded()
	v1 := requesting("n1", "u1", "10", "b1", "a")
	first := d.State(v1)
	if got := first.Current().IDs(); len(got) != 1 || got[0] != "a" {
		t.Fatalf("first read: requests %v, want [a]", got)
	}
	again := d.State(v1.DeepCopy())
	if again.Requested != first.Requested {
		t.Errorf("the same version was decoded again")
	}

	cases := map[string]*corev1.Node{
		"new version":         requesting("n1", "u1", "11", "b1", "a", "b"),
		"new node, same name": requesting("n1", "u2", "10", "b1", "a", "b"),
		"no version":          requesting("n1", "u1", "", "b1", "a", "b"),
	}
	for name, n := range cases {
		t.Run(name, func(t *testing.T) {
			d.State(v1)
			got := d.State(n)
			if got.Node != n {
				t.Errorf("the state names another Node than the one read")
			}
			if ids := got.Current().IDs(); len(ids) != 2 {
				t.Errorf("read %s: requests %v, want [a b]: an old decoding was returned", name, ids)
			}
		})
	}

	// An unreadable annotation stays unreadable, however often it is read.
	bad := requesting("n2", "u3", "5", "b1")
	bad.Annotations[protocol.Admitted] = "{not json"
	for range 2 {
		if st := d.State(bad); st.Unreadable == nil || st.Admission == nil {
			t.Fatalf("unreadable admission read as %+v, want unreadable and holding its slot", st.Admission)
		}
	}
}

// The states of deleted nodes go once more are kept than the cache holds.
func TestDecodedStatesForgetDeletedNodes(t *testing.T) {
	d := NewDecoded()
	a, b, c := requesting("a", "ua", "1", "b"), requesting("b", "ub", "1", "b"), requesting("c", "uc", "1", "b")
	for _, n := range []*corev1.Node{a, b, c} {
		d.State(n)
	}
	d.ForgetGone([]*corev1.Node{a, b, c})
	if len(d.byNode) != 3 {
		t.Fatalf("kept %d states of 3 live nodes", len(d.byNode))
	}
	d.ForgetGone([]*corev1.Node{a, c})
	if _, ok := d.byNode["b"]; ok || len(d.byNode) != 2 {
		t.Errorf("after b's deletion kept %d states, b's among them: %v", len(d.byNode), ok)
	}
}
