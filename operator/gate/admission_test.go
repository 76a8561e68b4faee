package gate

import (
	"testing"
	"time"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/gate/plan"
	"github.com/kmaint/kmaint/operator/gate/view"
	"github.com/kmaint/kmaint/test/gen"
)

// A pool-wide hold is decided once, before the plan, and counts every node
// that waits, as the plan it holds leaves them all waiting; the planner
// acts on it and the status says it unchanged.
func TestPoolHoldCountsEveryWaitingNode(t *testing.T) {
	asking := func(name string) *view.Node {
		v := frozenView(name, nil, nil)
		v.Requested = &protocol.Requested{BootID: "b", Requests: []protocol.Request{gen.Req("r-"+name, v1alpha1.SourceHost, time.Date(2025, 3, 1, 2, 0, 0, 0, time.UTC))}}
		v.Ready, v.BootID = true, "b"
		return v
	}
	st := &poolState{
		poolRead: poolRead{pool: &v1alpha1.MaintenancePool{}},
		views:    []*view.Node{asking("a"), asking("b"), frozenView("c", nil, nil)},
	}
	st.pool.Name, st.pool.Spec.Paused = "p", true

	hold := poolHold(st.holdInput())
	if hold == nil || hold.reason != v1alpha1.PausedReason || hold.message != "The pool is paused; 2 nodes waiting" {
		t.Fatalf("hold = %+v, want Paused with 2 nodes waiting", hold)
	}
	p := plan.Admissions(st.views, nil, 0, 3, hold != nil, false)
	if len(p.Admit) != 0 || len(p.Waiting) != 2 {
		t.Errorf("plan admits %v and leaves %v waiting, want none admitted and 2 waiting", p.Admit, p.Waiting)
	}
	st.admission.hold = hold
	if reason, message, blocked := st.blockedBy(st.waitInput()); !blocked || reason != hold.reason || message != hold.message {
		t.Errorf("Blocked says %s %q, want the hold %+v", reason, message, hold)
	}
}
