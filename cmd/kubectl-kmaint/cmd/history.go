package cmd

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

// HistoryOptions are the history command's.
type HistoryOptions struct {
	// Node whose history to show.
	Node string
	// Output is the format.
	Output Output
	// Now is the moment open phases run to; zero is the time of the call.
	Now time.Time
}

func newHistoryCommand(k *kube) *cobra.Command {
	o := HistoryOptions{}
	cmd := &cobra.Command{
		Use:   "history <node>",
		Short: "List a node's reboot requests, newest first",
		Long: `List a node's NodeMaintenances, newest first: every reboot asked for, whatever
its source (api, host, config, metric, schedule, alert), with its reason, its phase,
the time it entered each phase and how long it stayed there, and the boot IDs
before and after. -o wide adds the message; -o json|yaml prints the
NodeMaintenances themselves.`,
		Example: `  kubectl kmaint history node-7
  kubectl kmaint history node-7 -o yaml`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: k.completeNodes,
		RunE: k.run(func(cmd *cobra.Command, c client.Client, args []string) error {
			o.Node = args[0]
			return History(cmd.Context(), c, out(cmd), o)
		}),
	}
	addOutputFlag(cmd, &o.Output)
	return cmd
}

// History writes the node's NodeMaintenances, newest first.
func History(ctx context.Context, c client.Client, w io.Writer, o HistoryOptions) error {
	if err := o.Output.check(); err != nil {
		return err
	}
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	items, err := maintenancesOf(ctx, c, o.Node)
	if err != nil {
		return err
	}
	slices.SortFunc(items, func(a, b v1alpha1.NodeMaintenance) int { return oldestFirst(b, a) })
	if len(items) == 0 && !o.Output.structured() {
		err := c.Get(ctx, types.NamespacedName{Name: o.Node}, &corev1.Node{})
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("node %q not found, and no NodeMaintenances name it", o.Node)
		}
		if err != nil {
			return fmt.Errorf("get node %s: %w", o.Node, err)
		}
		_, err = fmt.Fprintf(w, "Node %s has no NodeMaintenances: it has not been asked to reboot.\n", o.Node)
		return err
	}
	if o.Output.structured() {
		objs := make([]client.Object, len(items))
		for i := range items {
			objs[i] = &items[i]
		}
		return printObjects(w, c, o.Output, objs)
	}
	tw := newTable(w)
	header := "NAME\tCREATED\tSOURCE\tPHASE\tREASON\tBOOT BEFORE -> AFTER\tPHASES"
	if o.Output == OutputWide {
		header += "\tMESSAGE"
	}
	tw.line(header)
	for _, nm := range items {
		reason := nm.Spec.Reason
		if err := nm.Unreadable(); err != nil {
			reason = fmt.Sprintf("(cannot be read: %v)", err)
		}
		if nm.Spec.Policy != "" {
			reason = fmt.Sprintf("%s (policy %s)", reason, nm.Spec.Policy)
		}
		if o.Output != OutputWide {
			reason = ellipsis(reason, 60)
		}
		line := fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s -> %s\t%s", nm.Name,
			nm.CreationTimestamp.UTC().Format(time.RFC3339), nm.Spec.Source, or(string(nm.Status.Phase)), reason,
			or(nm.Status.BootIDBefore), or(nm.Status.BootIDAfter), phases(nm.Status, o.Now))
		if o.Output == OutputWide {
			line += "\t" + or(nm.Status.Message)
		}
		tw.line(line)
	}
	return tw.flush()
}

// phases lists the phases a NodeMaintenance went through, each with the
// clock time it was entered and how long it lasted (to now for the last of
// an open one): "Pending 10:00:00 2s, Requested 10:00:02 1m5s, ...".
func phases(s v1alpha1.NodeMaintenanceStatus, now time.Time) string {
	type stamp struct {
		phase v1alpha1.Phase
		at    *metav1.Time
	}
	var stamps []stamp
	for _, p := range append(v1alpha1.PhaseOrder(), v1alpha1.PhaseFailed) {
		if at := s.PhaseTimes.Get(p); at != nil {
			stamps = append(stamps, stamp{p, at})
		}
	}
	// A pool without settle time or health checks passes Settling in the
	// moment it succeeds: a stamp that says nothing.
	stamps = slices.DeleteFunc(stamps, func(st stamp) bool {
		return st.phase == v1alpha1.PhaseSettling && s.PhaseTimes.Succeeded != nil && st.at.Equal(s.PhaseTimes.Succeeded)
	})
	var parts []string
	for i, st := range stamps {
		part := fmt.Sprintf("%s %s", st.phase, st.at.UTC().Format("15:04:05"))
		switch {
		case i+1 < len(stamps):
			part += " " + stamps[i+1].at.Sub(st.at.Time).Round(time.Second).String()
		case !st.phase.Done():
			part += " " + now.Sub(st.at.Time).Round(time.Second).String() + " so far"
		}
		parts = append(parts, part)
	}
	return or(strings.Join(parts, ", "))
}
