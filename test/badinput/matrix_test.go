package badinput

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator"
	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/harness"
	"github.com/kmaint/kmaint/test/sim"
)

// kind is how kmaint dealt with a bad input.
type kind string

const (
	// refused: the input never got in; the message names the field.
	refused kind = "refused"
	// contained: the input got in, and a condition or event names what is
	// wrong with it.
	contained kind = "contained"
)

// outcome is what one row must end in: its kind, and what the refusal's
// message or the containment's condition or event says.
type outcome struct {
	kind kind
	says string
	// or is another message a refusal may give instead: when two
	// admission policies refuse the same write, the API server names
	// either.
	or string
}

// refusedNaming is a refusal whose message holds says (a field, usually).
func refusedNaming(says string) outcome { return outcome{kind: refused, says: says} }

// containedAs is an acceptance shown by a condition or event reason.
func containedAs(reason string) outcome { return outcome{kind: contained, says: reason} }

// shown lists what a person sees about an accepted input: the reasons of
// the conditions and events of the objects it concerns.
type shown func(g Gomega) []string

// row is one bad input.
type row struct {
	// surface is where the input enters: a CRD, the node annotations, the
	// webhook or a command line.
	surface string
	name    string
	// send sends the input. It returns the refusal (nil when the input was
	// accepted) and, for an accepted one, where to look for its containment.
	send func(t *testing.T, e *env) (shown, error)
	want outcome
}

// Nodes of the matrix. The open pool admits as a real pool does; the
// paused pool holds the nodes whose daemon token the rows use, so that a
// request the compromised daemon may legitimately raise for its own node
// still reboots nothing.
const (
	openPool   = "matrix-open"
	pausedPool = "matrix-paused"
	poolLabel  = "kmaint.test/matrix"
	// witnessNode carries a good request for the whole test: it must be
	// neither lost nor duplicated, whatever the rows do.
	witnessNode = "matrix-paused-2"
	witnessNM   = "matrix-witness"
)

var (
	openNodes   = []string{"matrix-open-0", "matrix-open-1", "matrix-open-2"}
	pausedNodes = []string{"matrix-paused-0", "matrix-paused-1", witnessNode}
)

// env is what the rows act on.
type env struct {
	op *sim.Operator
	// kubeconfig is a cluster admin's, for the plugin.
	kubeconfig string
	// daemons holds, per node, a client with that node's daemon token.
	daemons map[string]client.Client
	// webhook is the running Alertmanager receiver.
	webhook *webhookTarget
}

func TestBadInputMatrix(t *testing.T) {
	e := setUp(t)
	rows := slices.Concat(poolRows(), objectCheckRows(), policyRows(), maintenanceRows(), annotationRows(), webhookRows(), cliRows(), teamRows(), rightsRows(), addonRows(),
		hooksNamespaceRows())
	counts := map[kind]int{}
	bySurface := map[string]map[kind]int{}
	for _, r := range rows {
		t.Run(r.surface+"/"+r.name, func(t *testing.T) {
			check(t, e, r)
		})
		counts[r.want.kind]++
		if bySurface[r.surface] == nil {
			bySurface[r.surface] = map[kind]int{}
		}
		bySurface[r.surface][r.want.kind]++
	}
	t.Run("invariants", func(t *testing.T) { checkInvariants(t, e) })

	surfaces := make([]string, 0, len(bySurface))
	for s := range bySurface {
		surfaces = append(surfaces, s)
	}
	sort.Strings(surfaces)
	var b strings.Builder
	fmt.Fprintf(&b, "bad-input matrix: %d rows, %d refused, %d contained\n", len(rows), counts[refused], counts[contained])
	for _, s := range surfaces {
		fmt.Fprintf(&b, "  %-32s refused %3d  contained %3d\n", s, bySurface[s][refused], bySurface[s][contained])
	}
	t.Log(b.String())
	if len(rows) < 120 {
		t.Errorf("the matrix has %d rows; it must cover at least 120 bad inputs", len(rows))
	}
}

// check sends one row's input and asserts its one outcome.
func check(t *testing.T, e *env, r row) {
	g := NewWithT(t)
	see, err := r.send(t, e)
	switch r.want.kind {
	case refused:
		g.Expect(err).To(HaveOccurred(), "the input was accepted; it must be refused naming %q", r.want.says)
		if r.want.or != "" {
			g.Expect(err.Error()).To(Or(ContainSubstring(r.want.says), ContainSubstring(r.want.or)))
			break
		}
		g.Expect(err.Error()).To(ContainSubstring(r.want.says))
	case contained:
		g.Expect(err).NotTo(HaveOccurred(), "the input was refused; it must be accepted and shown as %s", r.want.says)
		g.Expect(see).NotTo(BeNil(), "the row says where its containment shows")
		g.Eventually(see).WithTimeout(time.Minute).WithPolling(200*time.Millisecond).
			Should(ContainElement(r.want.says), "a condition or event says %s", r.want.says)
	}
}

// setUp installs kmaint's identities and admission policies, creates the
// pools and nodes, a witness request, and starts the operator.
func setUp(t *testing.T) *env {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	installIdentities(t)

	open := gen.Pool(openPool, intstr.FromInt32(1))
	open.Spec.NodeSelector = &v1alpha1.LabelSelector{MatchLabels: map[string]v1alpha1.SelectorValue{poolLabel: "open"}}
	harness.Create(t, bed, open)
	paused := gen.Pool(pausedPool, intstr.FromInt32(3))
	paused.Spec.NodeSelector = &v1alpha1.LabelSelector{MatchLabels: map[string]v1alpha1.SelectorValue{poolLabel: "paused"}}
	paused.Spec.Paused = true
	harness.Create(t, bed, paused)
	for _, n := range openNodes {
		g.Expect(gen.CreateNode(ctx, bed.Client, gen.Node(n, gen.Labels(poolLabel, "open")))).To(Succeed())
	}
	for _, n := range pausedNodes {
		g.Expect(gen.CreateNode(ctx, bed.Client, gen.Node(n, gen.Labels(poolLabel, "paused")))).To(Succeed())
	}
	harness.Create(t, bed, &v1alpha1.NodeMaintenance{
		ObjectMeta: metav1.ObjectMeta{Name: witnessNM},
		Spec:       v1alpha1.NodeMaintenanceSpec{NodeName: witnessNode, Reason: "the witness: a good request that must survive every row"},
	})

	e := &env{daemons: map[string]client.Client{}, kubeconfig: writeKubeconfig(t)}
	for _, n := range pausedNodes[:2] {
		e.daemons[n] = daemonClient(t, n)
	}
	e.webhook = startWebhookTarget(t)
	op, err := sim.StartOperator(ctx, bed.Config, operatorOptions(e.webhook))
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		if err := op.Stop(); err != nil {
			t.Errorf("operator stopped with an error: %v", err)
		}
	})
	e.op = op
	e.webhook.trust(t)

	// The operator is up once it has looked at both pools and the witness,
	// which waits for a daemon that never comes.
	for _, pool := range []string{openPool, pausedPool} {
		g.Eventually(func(g Gomega) int64 {
			return harness.GetPool(g, bed, pool).Status.ObservedGeneration
		}).WithTimeout(time.Minute).Should(BeNumerically(">=", 1), "pool %s reconciled", pool)
	}
	g.Eventually(func(g Gomega) v1alpha1.Phase {
		return harness.GetMaintenance(g, bed, witnessNM).Status.Phase
	}).WithTimeout(time.Minute).Should(Equal(v1alpha1.PhasePending))
	return e
}

// checkInvariants asserts what must hold whatever the rows did.
func checkInvariants(t *testing.T, e *env) {
	g := NewWithT(t)
	g.Expect(e.op.Running()).To(BeTrue(), "the operator is still running")

	// No reboot: no node was admitted, approved or cordoned.
	for _, name := range slices.Concat(openNodes, pausedNodes) {
		n := harness.GetNode(g, bed, name)
		g.Expect(n.Annotations).NotTo(HaveKey(protocol.RebootApproved), "node %s approved for a reboot", name)
		g.Expect(n.Annotations).NotTo(HaveKey(protocol.Admitted), "node %s admitted", name)
		g.Expect(n.Spec.Unschedulable).To(BeFalse(), "node %s cordoned", name)
		g.Expect(n.Status.NodeInfo.BootID).To(Equal("boot-0"), "node %s rebooted", name)
	}

	// Nothing lost or duplicated: the witness is there once, still waiting.
	witness := harness.MaintenancesOf(g, bed, witnessNode)
	g.Expect(witness).To(HaveLen(1), "the witness node's requests")
	g.Expect(witness[0].Name).To(Equal(witnessNM))
	g.Expect(witness[0].Status.Phase).NotTo(Equal(v1alpha1.PhaseFailed))

	// The operator still sees new objects: a pool created now gets a status.
	probe := gen.Pool("matrix-probe", intstr.FromInt32(1))
	probe.Spec.NodeSelector = &v1alpha1.LabelSelector{MatchLabels: map[string]v1alpha1.SelectorValue{poolLabel: "probe"}}
	harness.Create(t, bed, probe)
	g.Eventually(func(g Gomega) int64 {
		return harness.GetPool(g, bed, probe.Name).Status.ObservedGeneration
	}).WithTimeout(time.Minute).Should(BeNumerically(">=", 1), "a pool created after the rows is reconciled")

	g.Expect(harness.PolicyMaintenances(g, bed, alertPolicy)).To(BeEmpty(), "requests raised by bad webhook payloads")
	g.Expect(e.op.Running()).To(BeTrue(), "the operator is still running")
}

// conditionReasons lists the reasons of conditions.
func conditionReasons(conds []metav1.Condition) []string {
	out := make([]string, 0, len(conds))
	for _, c := range conds {
		out = append(out, c.Reason)
	}
	return out
}

// operatorOptions runs the operator as the chart does, with the webhook on.
func operatorOptions(w *webhookTarget) operator.Options {
	return w.options()
}
