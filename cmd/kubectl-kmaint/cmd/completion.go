package cmd

import (
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

// completePools completes the first argument with the cluster's pool names.
func (k *kube) completePools(cmd *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	c, err := k.Client()
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	var list v1alpha1.MaintenancePoolList
	if err := c.List(cmd.Context(), &list); err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	var names []string
	for _, p := range list.Items {
		if strings.HasPrefix(p.Name, prefix) {
			names = append(names, p.Name)
		}
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

// completeNodes completes the first argument with the cluster's node names.
func (k *kube) completeNodes(cmd *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	c, err := k.Client()
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	var list corev1.NodeList
	if err := c.List(cmd.Context(), &list); err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	var names []string
	for _, n := range list.Items {
		if strings.HasPrefix(n.Name, prefix) {
			names = append(names, n.Name)
		}
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}
