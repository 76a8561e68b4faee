package cmd

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/scheme"
	"github.com/kmaint/kmaint/internal/version"
)

// ErrNotInstalled is returned when the cluster serves no kmaint.io API.
var ErrNotInstalled = errors.New("kmaint is not installed in this cluster (no kmaint.io API)")

// NewCommand returns the kubectl-kmaint command tree. Its output goes to
// streams; it reaches the cluster through kubectl's flags (--kubeconfig,
// --context, --server ...).
func NewCommand(streams genericiooptions.IOStreams) *cobra.Command {
	flags := genericclioptions.NewConfigFlags(true)
	// Every kmaint kind is cluster-scoped: a --namespace flag would only
	// suggest otherwise.
	flags.Namespace = nil
	k := &kube{flags: flags}
	root := &cobra.Command{
		Use:   "kubectl-kmaint",
		Short: "See and steer kmaint's node reboots",
		Long: `kubectl kmaint shows and steers kmaint, the one gate for every node reboot in a cluster.

It reads and writes kmaint's API (MaintenancePool, NodeMaintenance): the status of
pools and nodes, reboot requests and their cancellation, rolling reboots of a pool,
pausing a pool, a node's reboot history and an HTML report of the reboots so far.`,
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl kmaint"},
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	flags.AddFlags(root.PersistentFlags())
	root.AddCommand(
		newStatusCommand(k),
		newRequestCommand(k),
		newCancelCommand(k),
		newRolloutCommand(k),
		newPauseCommand(k, true),
		newPauseCommand(k, false),
		newHistoryCommand(k),
		newReportCommand(k),
		newVersionCommand(),
	)
	return root
}

// kube builds the one client a command run uses from kubectl's flags.
type kube struct {
	flags  *genericclioptions.ConfigFlags
	client client.Client
}

// Client returns a client of the cluster the flags name, with kmaint's
// types; it is built on first use.
func (k *kube) Client() (client.Client, error) {
	if k.client != nil {
		return k.client, nil
	}
	cfg, err := k.flags.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("no cluster to talk to: %w", err)
	}
	cfg.UserAgent = "kubectl-kmaint/" + version.Get().Version
	s, err := scheme.New()
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", cfg.Host, err)
	}
	k.client = c
	return c, nil
}

// run adapts a command's logic to cobra: it builds the client and says
// plainly when kmaint is not installed.
func (k *kube) run(fn func(cmd *cobra.Command, c client.Client, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		c, err := k.Client()
		if err != nil {
			return err
		}
		return explain(fn(cmd, c, args))
	}
}

// explain turns the API server's "no such kind" into ErrNotInstalled.
func explain(err error) error {
	if err != nil && meta.IsNoMatchError(err) {
		return fmt.Errorf("%w: %w", ErrNotInstalled, err)
	}
	return err
}

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the plugin's version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "kubectl-kmaint: %s\n", version.Get())
			return err
		},
	}
}

// out is where a command writes its result.
func out(cmd *cobra.Command) io.Writer { return cmd.OutOrStdout() }
