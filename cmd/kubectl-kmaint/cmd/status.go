package cmd

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/internal/pools"
)

// StatusOptions are the status command's.
type StatusOptions struct {
	// Pool limits the output to one pool; empty shows all.
	Pool string
	// Output is the format.
	Output Output
	// Now is the moment ages are measured to; zero is the time of the call.
	Now time.Time
}

func newStatusCommand(k *kube) *cobra.Command {
	o := StatusOptions{}
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show pools' rollout progress and each node's reboot phase",
		Long: `Show every MaintenancePool's progress, then every node's reboot phase.

Pools: nodes, a progress bar (nodes on the pool's desiredConfig, or nodes rebooted
out of those asked to reboot since the oldest open request), unavailable nodes
against maxUnavailable, pending requests, and whether the pool is paused, blocked
(and why), degraded, HALTED by a failed health check, frozen, waiting for its
canaries, or has nodes settling after their reboot, as the operator last
reported it.

Nodes: their pool and stage, in the words of the NodeMaintenance phases (Idle,
Pending, Requested, Draining, Approved, Rebooting, Settling, Degraded), with the
reasons of their requests or what went wrong, read from the node's kmaint.io/
annotations and its open NodeMaintenances. A Settling node keeps its slot until
its settle time ends and its health checks pass: the row says until when, and
how the checks stand or which one failed with what value.

Below the tables, each halted pool with the nodes and checks that failed, how to
look at them and the command that resumes it (kubectl kmaint resume POOL); each
frozen pool with its freeze and when it ends; each pool waiting for canaries.

-o wide adds each pool's desiredConfig and message and each node's boot ID and
how long it has been in its phase; -o json|yaml prints the pools, nodes and open
NodeMaintenances the status is read from, as one List.`,
		Example: `  kubectl kmaint status
  kubectl kmaint status --pool workers -o wide`,
		Args: cobra.NoArgs,
		RunE: k.run(func(cmd *cobra.Command, c client.Client, _ []string) error {
			return Status(cmd.Context(), c, out(cmd), o)
		}),
	}
	cmd.Flags().StringVar(&o.Pool, "pool", "", "Show only this pool and its nodes.")
	_ = cmd.RegisterFlagCompletionFunc("pool", k.completePools)
	addOutputFlag(cmd, &o.Output)
	return cmd
}

// cluster is what the status command reads.
type cluster struct {
	pools []v1alpha1.MaintenancePool
	nodes []corev1.Node
	nms   []v1alpha1.NodeMaintenance
	// gate is the cluster's MaintenanceGate; nil when there is none.
	gate *v1alpha1.MaintenanceGate
}

// poolRow is one pool and the nodes it selects.
type poolRow struct {
	name string
	// pool is nil for the built-in default pool without an object.
	pool  *v1alpha1.MaintenancePool
	nodes []*corev1.Node
	// relabelled names, by node, the pools the labels of a node in flight
	// in the pool put it in now, when that is not this pool: it stays
	// here until its maintenance ends.
	relabelled map[string][]string
}

// Status writes the pools' progress and the nodes' phases.
func Status(ctx context.Context, c client.Client, w io.Writer, o StatusOptions) error {
	if err := o.Output.check(); err != nil {
		return err
	}
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	var cl cluster
	var mps v1alpha1.MaintenancePoolList
	if err := c.List(ctx, &mps); err != nil {
		return fmt.Errorf("list MaintenancePools: %w", err)
	}
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes); err != nil {
		return fmt.Errorf("list nodes: %w", err)
	}
	var nms v1alpha1.NodeMaintenanceList
	if err := c.List(ctx, &nms); err != nil {
		return fmt.Errorf("list NodeMaintenances: %w", err)
	}
	cl.pools, cl.nodes, cl.nms = mps.Items, nodes.Items, nms.Items
	if gate, err := getGate(ctx, c); err == nil {
		cl.gate = gate
	} else if !meta.IsNoMatchError(errors.Unwrap(err)) {
		return err
	}
	if o.Pool != "" && o.Pool != v1alpha1.DefaultPoolName && !slices.ContainsFunc(cl.pools, named(o.Pool)) {
		return unknownPool(o.Pool, cl.pools)
	}
	rows := poolRows(cl, o.Pool)
	open := openByNode(cl.nms)

	if o.Output.structured() {
		var objs []client.Object
		if cl.gate != nil {
			objs = append(objs, cl.gate)
		}
		for _, r := range rows {
			if r.pool != nil {
				objs = append(objs, r.pool)
			}
		}
		for _, r := range rows {
			for _, n := range r.nodes {
				objs = append(objs, n)
			}
		}
		for _, r := range rows {
			for _, n := range r.nodes {
				for i := range open[n.Name] {
					objs = append(objs, &open[n.Name][i])
				}
			}
		}
		return printObjects(w, c, o.Output, objs)
	}
	if line := clusterLine(cl.gate); line != "" {
		if _, err := fmt.Fprintf(w, "%s\n\n", line); err != nil {
			return err
		}
	}
	return writeStatus(w, rows, open, cl.nms, v1alpha1.StopOf(cl.gate), o)
}

// poolRows groups the nodes by pool: every MaintenancePool, then the
// built-in default pool when it has nodes and no object. A node that two
// pools select is listed under both. only keeps one pool.
func poolRows(cl cluster, only string) []poolRow {
	selectors := pools.Selectors(cl.pools)
	byPool := map[string][]*corev1.Node{}
	relabelled := map[string][]string{}
	for i := range cl.nodes {
		in := pools.Of(&cl.nodes[i], selectors)
		for _, p := range in {
			byPool[p] = append(byPool[p], &cl.nodes[i])
		}
		if labels := pools.Selecting(&cl.nodes[i], selectors); !slices.Equal(labels, in) {
			relabelled[cl.nodes[i].Name] = labels
		}
	}
	var rows []poolRow
	for i := range cl.pools {
		p := &cl.pools[i]
		rows = append(rows, poolRow{name: p.Name, pool: p, nodes: byPool[p.Name], relabelled: relabelled})
	}
	if !slices.ContainsFunc(cl.pools, named(v1alpha1.DefaultPoolName)) && len(byPool[v1alpha1.DefaultPoolName]) > 0 {
		rows = append(rows, poolRow{name: v1alpha1.DefaultPoolName, nodes: byPool[v1alpha1.DefaultPoolName], relabelled: relabelled})
	}
	rows = slices.DeleteFunc(rows, func(r poolRow) bool { return only != "" && r.name != only })
	for _, r := range rows {
		slices.SortFunc(r.nodes, func(a, b *corev1.Node) int { return cmp.Compare(a.Name, b.Name) })
	}
	slices.SortFunc(rows, func(a, b poolRow) int { return cmp.Compare(a.name, b.name) })
	return rows
}

// openByNode returns each node's open NodeMaintenances, oldest first.
func openByNode(nms []v1alpha1.NodeMaintenance) map[string][]v1alpha1.NodeMaintenance {
	open := map[string][]v1alpha1.NodeMaintenance{}
	for _, nm := range nms {
		if !nm.Status.Phase.Done() {
			open[nm.Spec.NodeName] = append(open[nm.Spec.NodeName], nm)
		}
	}
	for _, list := range open {
		slices.SortFunc(list, oldestFirst)
	}
	return open
}

func oldestFirst(a, b v1alpha1.NodeMaintenance) int {
	return cmp.Or(a.CreationTimestamp.Compare(b.CreationTimestamp.Time), cmp.Compare(a.Name, b.Name))
}

func writeStatus(w io.Writer, rows []poolRow, open map[string][]v1alpha1.NodeMaintenance, nms []v1alpha1.NodeMaintenance, stop *v1alpha1.Stop, o StatusOptions) error {
	wide := o.Output == OutputWide
	tw := newTable(w)
	header := "POOL\tNODES\tPROGRESS\tUNAVAILABLE\tPENDING\tSTATE"
	if wide {
		header += "\tCONFIG\tMESSAGE"
	}
	tw.line(header)
	states := map[string]nodeState{}
	for _, r := range rows {
		for _, n := range r.nodes {
			states[n.Name] = phaseOf(n, open[n.Name])
		}
	}
	for _, r := range rows {
		s := summarize(r, states, nms, stop)
		line := fmt.Sprintf("%s\t%d\t%s\t%s\t%s\t%s", r.name, len(r.nodes), s.progress, s.unavailable, s.pending, s.state)
		if wide {
			line += fmt.Sprintf("\t%s\t%s", or(s.config), or(s.message))
		}
		tw.line(line)
	}
	if err := tw.flush(); err != nil {
		return err
	}
	if _, err := fmt.Fprintln(w); err != nil {
		return err
	}
	tw = newTable(w)
	header = "NODE\tPOOL\tPHASE\tREASON"
	if wide {
		header += "\tREADY\tBOOT ID\tSINCE"
	}
	tw.line(header)
	for _, r := range rows {
		for _, n := range r.nodes {
			st := states[n.Name]
			reason := st.Reason
			if !wide {
				reason = ellipsis(reason, 80)
			}
			pool := r.name
			if labels := r.relabelled[n.Name]; len(labels) > 0 {
				// In flight here, though its labels say otherwise now.
				pool += " (labels: " + strings.Join(labels, ", ") + ")"
			}
			line := fmt.Sprintf("%s\t%s\t%s\t%s", n.Name, pool, st.Phase, or(reason))
			if wide {
				line += fmt.Sprintf("\t%t\t%s\t%s", protocol.Ready(n), or(n.Status.NodeInfo.BootID), age(o.Now, st.Since))
			}
			tw.line(line)
		}
	}
	if err := tw.flush(); err != nil {
		return err
	}
	if notes := guardNotes(rows, o.Now); len(notes) > 0 {
		if _, err := fmt.Fprintf(w, "\n%s\n", strings.Join(notes, "\n")); err != nil {
			return err
		}
	}
	return nil
}

// poolSummary is one pool's row of cells.
type poolSummary struct {
	progress, unavailable, pending, state, config, message string
}

// summarize fills a pool's cells: from the status the operator wrote, or,
// for the built-in default pool without an object, from its nodes.
func summarize(r poolRow, states map[string]nodeState, nms []v1alpha1.NodeMaintenance, stop *v1alpha1.Stop) poolSummary {
	var s poolSummary
	if r.pool == nil {
		unavailable, waiting := 0, 0
		for _, n := range r.nodes {
			switch st, _ := protocol.Read(n); {
			case st.Unavailable():
				unavailable++
			case st.WantsAdmission():
				waiting++
			}
		}
		s.progress = rebootProgress(r, states, nms)
		s.unavailable = fmt.Sprintf("%d/1", unavailable)
		s.pending = fmt.Sprint(waiting)
		s.state = "built-in"
		s.message = "no MaintenancePool named default: one node at a time, any time"
		if stop != nil {
			s.state += ", Blocked: " + stop.Reason
			s.message = stop.Message
		}
		return s
	}
	p := r.pool
	if err := p.Unreadable(); err != nil {
		s.progress, s.unavailable, s.pending = "-", "-", "-"
		s.state = "Unreadable"
		s.message = fmt.Sprintf("cannot be read: %v; no pool admits until it can be read or is deleted", err)
		return s
	}
	st := p.Status
	s.config = p.Spec.DesiredConfig
	if p.Spec.DesiredConfig != "" {
		s.progress = bar(int(st.Updated), int(st.Nodes)) + " updated"
	} else {
		s.progress = rebootProgress(r, states, nms)
	}
	s.unavailable = fmt.Sprintf("%d/%d", st.Unavailable, st.MaxUnavailable)
	s.pending = fmt.Sprint(st.PendingRequests)
	var state []string
	if p.Spec.Paused {
		state = append(state, "Paused")
	}
	state = append(state, guardState(p)...)
	for _, t := range []string{v1alpha1.BlockedCondition, v1alpha1.DegradedCondition, v1alpha1.ConflictingCondition, v1alpha1.OverBudgetCondition} {
		if c := meta.FindStatusCondition(st.Conditions, t); c != nil && c.Status == "True" {
			if t != v1alpha1.BlockedCondition || c.Reason != v1alpha1.PausedReason && !guardBlocked(c.Reason) {
				state = append(state, t+": "+c.Reason)
			}
			if s.message == "" {
				s.message = c.Message
			}
		}
	}
	if st.OptedOut > 0 {
		state = append(state, fmt.Sprintf("%d opted out", st.OptedOut))
	}
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.DrainingCondition); c != nil && c.Status == "True" && len(state) == 0 {
		state = append(state, "Draining")
	}
	switch {
	case len(st.Conditions) == 0 && st.ObservedGeneration == 0:
		state = append(state, "no status yet: is kmaint-operator running?")
	case st.ObservedGeneration < p.Generation:
		state = append(state, "(status is of an older spec)")
	}
	s.state = or(strings.Join(state, ", "))
	if len(state) == 0 {
		s.state = "OK"
	}
	return s
}

// rebootProgress counts, out of the pool's nodes asked to reboot since its
// oldest open request, those that have rebooted.
func rebootProgress(r poolRow, states map[string]nodeState, nms []v1alpha1.NodeMaintenance) string {
	members := map[string]bool{}
	for _, n := range r.nodes {
		members[n.Name] = true
	}
	var start time.Time
	todo := 0
	for _, n := range r.nodes {
		if st := states[n.Name]; st.Phase != protocol.StageIdle {
			todo++
			if !st.Since.IsZero() && (start.IsZero() || st.Since.Before(start)) {
				start = st.Since
			}
		}
	}
	for _, nm := range nms {
		if members[nm.Spec.NodeName] && !nm.Status.Phase.Done() && (start.IsZero() || nm.CreationTimestamp.Time.Before(start)) {
			start = nm.CreationTimestamp.Time
		}
	}
	if todo == 0 {
		return "nothing to reboot"
	}
	done := map[string]bool{}
	for _, nm := range nms {
		if members[nm.Spec.NodeName] && nm.Status.Phase == v1alpha1.PhaseSucceeded &&
			!nm.CreationTimestamp.Time.Before(start) && states[nm.Spec.NodeName].Phase == protocol.StageIdle {
			done[nm.Spec.NodeName] = true
		}
	}
	return bar(len(done), len(done)+todo) + " rebooted"
}

// bar draws done out of total as a bar of 20 cells.
func bar(done, total int) string {
	const width = 20
	filled := 0
	if total > 0 {
		filled = min(width, done*width/total)
	}
	return fmt.Sprintf("[%s%s] %d/%d", strings.Repeat("#", filled), strings.Repeat("-", width-filled), done, total)
}

func ellipsis(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
