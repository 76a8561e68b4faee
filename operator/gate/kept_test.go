package gate

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/gate/plan"
	"github.com/kmaint/kmaint/operator/gate/view"
	"github.com/kmaint/kmaint/operator/index"
)

// A gate keeps its views of a pool's nodes, and its queue's order, between
// reconciles; nothing of it is not in the API (invariant 5). So after any
// run of events, a gate started afresh on the same cache sees the same
// views and plans the same admissions as the gate that kept them: nodes
// whose reboot aftercare completed, and nodes drained (the gate's own
// writes), a
// NodeMaintenance made again with an earlier record (its node moves to the
// head of the queue: only the NodeMaintenance watch tells the kept views),
// a node relabelled out of the pool and back.
func TestKeptViewsAreWhatAFreshGateSees(t *testing.T) {
	ro := newRollout(t, 120)
	ctx := ctrl.LoggerInto(context.Background(), ctrl.Log.WithName("kept"))
	warm := ro.r
	reconcile := func(step string) {
		t.Helper()
		if _, err := warm.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Name: benchPool}}); err != nil {
			t.Fatalf("%s: reconcile: %v", step, err)
		}
	}
	pool := &v1alpha1.MaintenancePool{}
	if err := ro.Client().Get(ctx, client.ObjectKey{Name: benchPool}, pool); err != nil {
		t.Fatal(err)
	}
	rnd := rand.New(rand.NewPCG(5, 12))
	waitingNode := func() *corev1.Node {
		t.Helper()
		for {
			node, err := ro.Node(fmt.Sprintf("node-%05d", rnd.IntN(120)))
			if err != nil {
				t.Fatal(err)
			}
			if st, _ := protocol.Read(node); st.WantsAdmission() && node.Labels["pool"] == benchPool {
				return node
			}
		}
	}
	for turn := range 30 {
		var step string
		switch rnd.IntN(3) {
		case 0:
			step = "a node's reboot completed and the next one drained"
			if _, err := ro.CompletedReboot(); err != nil {
				t.Fatal(err)
			}
			reconcile(step)
			select {
			case <-ro.drain:
			case <-time.After(time.Minute):
				t.Fatalf("turn %d: no drain step in a minute", turn)
			}
			reconcile(step)
			ro.InFlight = append(ro.InFlight, approvedNotInFlight(t, ro)...)
		case 1:
			node := waitingNode()
			step = "the NodeMaintenance of " + node.Name + " made again, recorded earlier"
			var open v1alpha1.NodeMaintenanceList
			if err := ro.Client().List(ctx, &open, client.MatchingFields{index.OpenOnNode: node.Name}); err != nil {
				t.Fatal(err)
			}
			for i := range open.Items {
				nm := open.Items[i].DeepCopy()
				if err := ro.Client().Delete(ctx, nm); err != nil {
					t.Fatal(err)
				}
				warm.maintenancePools(ctx, nm)
				nm.ResourceVersion = ""
				nm.CreationTimestamp = metav1.NewTime(ro.Start.Add(-time.Duration(turn+1) * time.Hour))
				if err := ro.Add(nm); err != nil {
					t.Fatal(err)
				}
				warm.maintenancePools(ctx, nm)
			}
		case 2:
			node := waitingNode()
			step = node.Name + " relabelled out of the pool"
			node.Labels["pool"] = "elsewhere"
			if err := ro.Set(node); err != nil {
				t.Fatal(err)
			}
			reconcile(step)
			back, err := ro.Node(node.Name)
			if err != nil {
				t.Fatal(err)
			}
			back.Labels["pool"] = benchPool
			if err := ro.Set(back); err != nil {
				t.Fatal(err)
			}
		}
		reconcile(step)

		fresh := &Reconciler{Client: ro.Client(), Drainer: doneDrainer{}, Recorder: &events.FakeRecorder{}, DrainPollInterval: time.Hour}
		fresh.prepare(ro.Informers(), ro.Client())
		kept, err := warm.observe(ctx, pool)
		if err != nil {
			t.Fatal(err)
		}
		found, err := fresh.observe(ctx, pool)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := describeViews(kept), describeViews(found); got != want {
			t.Fatalf("turn %d, after %s: the kept views differ from a fresh gate's:\n%s", turn, step, lineDiff(got, want))
		}
		budget := kept.admission.budget
		keptPlan := plan.Admissions(kept.views, kept.queue(), kept.counted(), budget, false, false)
		freshPlan := plan.Admissions(found.views, found.queue(), found.counted(), budget, false, false)
		if !slices.Equal(keptPlan.Waiting, freshPlan.Waiting) || !slices.Equal(keptPlan.Admit, freshPlan.Admit) || keptPlan.Unlisted != freshPlan.Unlisted {
			t.Fatalf("turn %d, after %s: the kept queue plans %v then %v (%d more), a fresh gate %v then %v (%d more)",
				turn, step, keptPlan.Admit, head(keptPlan.Waiting), keptPlan.Unlisted, freshPlan.Admit, head(freshPlan.Waiting), freshPlan.Unlisted)
		}
		// And as a plan that reads every node, sorted afresh, would.
		every := plan.Admissions(everyView(found), nil, found.counted(), budget, false, false)
		if !slices.Equal(keptPlan.Admit, every.Admit) || keptPlan.Pending() != every.Pending() {
			t.Fatalf("turn %d, after %s: the kept queue plans %v with %d waiting, a plan of every node %v with %d",
				turn, step, keptPlan.Admit, keptPlan.Pending(), every.Admit, every.Pending())
		}
	}
}

// approvedNotInFlight names the nodes approved that the rollout does not
// count in flight yet, and has each node its reboot completed ask again.
func approvedNotInFlight(t *testing.T, ro *rollout) []string {
	t.Helper()
	var approved []string
	for i := range 120 {
		node, err := ro.Node(fmt.Sprintf("node-%05d", i))
		if err != nil {
			t.Fatal(err)
		}
		st, _ := protocol.Read(node)
		switch {
		case st.Approved != "" && !slices.Contains(ro.InFlight, node.Name):
			approved = append(approved, node.Name)
		case st.Requested == nil && st.Admission == nil && st.Approved == "":
			nm := ro.Ask(node)
			if err := ro.Set(node); err != nil {
				t.Fatal(err)
			}
			if err := ro.Add(nm); err != nil {
				t.Fatal(err)
			}
		}
	}
	return approved
}

// describeViews is what a reconcile knows of each node of the pool, one
// line a node.
func describeViews(st *poolState) string {
	var b strings.Builder
	for _, v := range st.views {
		fmt.Fprintf(&b, "%s rv=%s queued=%s waiting=%t unavailable=%t window=%t stale=%t held=%t others=%v optOut=%v\n",
			v.Node.Name, v.Node.ResourceVersion, v.QueuedAt.Format(time.RFC3339Nano), v.Waiting(), v.UsesBudget(), v.WindowOpen,
			v.StaleConfig, v.HeldUnreadable, v.OtherPools, v.OptedOut)
		if len(v.Relabelled) > 0 {
			fmt.Fprintf(&b, "  relabelled into %v\n", v.Relabelled)
		}
	}
	fmt.Fprintf(&b, "ordinary: %d nodes, %d on the desired config\n", st.quiet().Nodes, st.quiet().Current)
	for _, k := range st.members.Queue() {
		v := &k.Value.View
		fmt.Fprintf(&b, "queued %s rv=%s queued=%s\n", v.Node.Name, v.Node.ResourceVersion, v.QueuedAt.Format(time.RFC3339Nano))
	}
	return b.String()
}

// everyView pulls every ordinary member of the pool among st's views, as a
// gate that read every node at every reconcile had them, and returns them.
func everyView(st *poolState) []*view.Node {
	for _, k := range st.members.Queue() {
		st.pull(k)
	}
	return st.views
}

func lineDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	var out []string
	for i := range max(len(g), len(w)) {
		var a, b string
		if i < len(g) {
			a = g[i]
		}
		if i < len(w) {
			b = w[i]
		}
		if a != b {
			out = append(out, "kept:  "+a, "fresh: "+b)
		}
	}
	return strings.Join(out, "\n")
}

func head(names []string) []string { return names[:min(len(names), 5)] }
