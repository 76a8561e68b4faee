package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

// RequestOptions are the request command's.
type RequestOptions struct {
	// Node is the node to reboot.
	Node string
	// Reason is why; it goes to the node's journal.
	Reason string
	// IgnoreWindows lets the request be admitted outside maintenance
	// windows; the pool's budget still holds.
	IgnoreWindows bool
	// IgnoreFreezes lets the request be admitted during its pool's freeze
	// periods; ignoring windows does not. Budget, pause, a halt and the
	// cluster's stop still hold.
	IgnoreFreezes bool
}

func newRequestCommand(k *kube) *cobra.Command {
	o := RequestOptions{}
	cmd := &cobra.Command{
		Use:   "request <node> --reason <why>",
		Short: "Ask kmaint to reboot a node",
		Long: `Ask kmaint to reboot a node: create a NodeMaintenance (source api) named
<node>-<random suffix>. The node's daemon journals it, the node's pool admits it
within its budget and maintenance windows, then kmaint drains and reboots the node.
--ignore-windows lets it start outside the pool's windows, for emergencies; the
pool's maxUnavailable still holds. --ignore-windows does not pass a freeze period
(spec.freezes of the pool or of a RebootPolicy): --ignore-freezes does, and nothing
else; the budget, a pause, a halted pool and the cluster's stop still hold. Give
both to pass a closed window during a freeze. Each needs a right of its own besides
creating NodeMaintenances: RBAC's verb use on maintenanceoverrides.kmaint.io named
ignoreWindows or ignoreFreezes, which a cluster admin grants.

A node with an open request from the API gets no second one: the reboot under way
will satisfy both.`,
		Example: `  kubectl kmaint request node-7 --reason "kernel 6.12.9"
  kubectl kmaint request node-7 --reason "stuck NIC firmware" --ignore-windows
  kubectl kmaint request node-7 --reason "CVE-2026-1234 during the freeze" --ignore-freezes --ignore-windows`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: k.completeNodes,
		RunE: k.run(func(cmd *cobra.Command, c client.Client, args []string) error {
			o.Node = args[0]
			_, err := Request(cmd.Context(), c, out(cmd), o)
			return err
		}),
	}
	cmd.Flags().StringVar(&o.Reason, "reason", "", "Why the node should reboot (required; written to its journal).")
	cmd.Flags().BoolVar(&o.IgnoreWindows, "ignore-windows", false, "Admit the request outside maintenance windows (the pool's budget still holds; freezes too).")
	cmd.Flags().BoolVar(&o.IgnoreFreezes, "ignore-freezes", false, "Admit the request during freeze periods (windows, unless --ignore-windows, and the budget still hold).")
	_ = cmd.MarkFlagRequired("reason")
	return cmd
}

// Request creates a NodeMaintenance for the node and returns it.
func Request(ctx context.Context, c client.Client, w io.Writer, o RequestOptions) (*v1alpha1.NodeMaintenance, error) {
	if strings.TrimSpace(o.Reason) == "" {
		return nil, errors.New("--reason must say why the node should reboot")
	}
	if err := v1alpha1.CheckReason(o.Reason); err != nil {
		return nil, fmt.Errorf("--reason: %w", err)
	}
	if err := c.Get(ctx, types.NamespacedName{Name: o.Node}, &corev1.Node{}); apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("node %q not found (kubectl get nodes)", o.Node)
	} else if err != nil {
		return nil, fmt.Errorf("get node %s: %w", o.Node, err)
	}
	open, err := openOf(ctx, c, o.Node)
	if err != nil {
		return nil, err
	}
	for _, nm := range open {
		if !nm.Spec.Source.RaisedOnNode() {
			return nil, fmt.Errorf("node %s already has an open request, NodeMaintenance %s (%s, %q): its reboot will do; a second one would be refused as a duplicate. Follow it with: kubectl kmaint history %s",
				o.Node, nm.Name, or(string(nm.Status.Phase)), nm.Spec.Reason, o.Node)
		}
	}
	nm := &v1alpha1.NodeMaintenance{
		ObjectMeta: metav1.ObjectMeta{GenerateName: o.Node + "-"},
		Spec: v1alpha1.NodeMaintenanceSpec{
			NodeName:      o.Node,
			Type:          v1alpha1.RebootMaintenance,
			Reason:        o.Reason,
			Source:        v1alpha1.SourceAPI,
			IgnoreWindows: o.IgnoreWindows,
			IgnoreFreezes: o.IgnoreFreezes,
		},
	}
	if err := c.Create(ctx, nm); err != nil {
		if refused := refusedOverrides(err); len(refused) > 0 {
			return nil, overridesRefusedError(refused)
		}
		return nil, fmt.Errorf("create NodeMaintenance for node %s: %w", o.Node, err)
	}
	_, err = fmt.Fprintf(w, "nodemaintenance/%s created: node %s will reboot when its pool admits it\nFollow it with: kubectl kmaint status  or  kubectl get nodemaintenance %s -w\n",
		nm.Name, o.Node, nm.Name)
	return nm, err
}

// openOf lists the node's open NodeMaintenances, oldest first.
func openOf(ctx context.Context, c client.Client, node string) ([]v1alpha1.NodeMaintenance, error) {
	items, err := maintenancesOf(ctx, c, node)
	if err != nil {
		return nil, err
	}
	return openByNode(items)[node], nil
}

// maintenancesOf lists the node's NodeMaintenances, selected by the API
// server on spec.nodeName (a selectable field of the CRD).
func maintenancesOf(ctx context.Context, c client.Client, node string) ([]v1alpha1.NodeMaintenance, error) {
	var list v1alpha1.NodeMaintenanceList
	if err := c.List(ctx, &list, client.MatchingFields{"spec.nodeName": node}); err != nil {
		return nil, fmt.Errorf("list NodeMaintenances of node %s: %w", node, err)
	}
	return list.Items, nil
}

// override is a request flag that passes a hold, with the field it sets,
// which is also the name admission asks RBAC about.
type override struct{ field, flag string }

func overrides() []override {
	return []override{{"ignoreWindows", "--ignore-windows"}, {"ignoreFreezes", "--ignore-freezes"}}
}

// refusedOverrides says which of the request's overrides admission refused
// (policy kmaint-request-overrides), or nothing when err is another
// refusal. The API server's own words name the policy, its binding and the
// field; a person wants the flag and the right to ask for.
func refusedOverrides(err error) []override {
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), overridesResource()) {
		return nil
	}
	var out []override
	for _, o := range overrides() {
		if strings.Contains(err.Error(), "spec."+o.field) {
			out = append(out, o)
		}
	}
	return out
}

// overridesResource is the resource RBAC grants overrides on, with its group.
func overridesResource() string {
	return v1alpha1.OverridesResource + "." + v1alpha1.GroupVersion.Group
}

// overridesRefusedError is what a person reads when admission refused
// the overrides: the flags, the right each needs, and what happens
// without them.
func overridesRefusedError(refused []override) error {
	var needs, flags []string
	for _, o := range refused {
		needs = append(needs, fmt.Sprintf("%s needs the right to %s %s named %s, which you lack", o.flag, v1alpha1.OverrideVerb, overridesResource(), o.field))
		flags = append(flags, o.flag)
	}
	return fmt.Errorf("refused: %s; ask a cluster admin (config/README.md, \"Who can pass windows and freezes\"). "+
		"Without %s the request waits for the pool's windows and freezes like any other", strings.Join(needs, "; "), strings.Join(flags, " and "))
}
