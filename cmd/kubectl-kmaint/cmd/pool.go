package cmd

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

// configPattern is the CRD's pattern for spec.desiredConfig.
var configPattern = regexp.MustCompile(`^[A-Za-z0-9]([-A-Za-z0-9_.:+]*[A-Za-z0-9])?$`)

// RolloutOptions are the rollout command's.
type RolloutOptions struct {
	// Pool is the MaintenancePool to roll.
	Pool string
	// Config is the new desiredConfig; empty makes a fresh restart-<time>
	// identity, as kubectl rollout restart does.
	Config string
	// Now names the restart identity; zero is the time of the call.
	Now time.Time
}

func newRolloutCommand(k *kube) *cobra.Command {
	o := RolloutOptions{}
	cmd := &cobra.Command{
		Use:   "rollout <pool>",
		Short: "Reboot every node of a pool, a few at a time, by changing its desiredConfig",
		Long: `Roll a reboot through a pool by changing its spec.desiredConfig.

Every node of the pool whose daemon reports another config asks for a reboot;
the pool admits them maxUnavailable at a time, within its maintenance windows.
Without --config the new config is restart-<UTC time>, like kubectl rollout
restart. --config names a config identity (e.g. an OS image version), which must
match the CRD's pattern: letters, digits and - _ . : + , starting and ending with
a letter or digit, at most 253 characters.`,
		Example: `  kubectl kmaint rollout workers
  kubectl kmaint rollout workers --config ubuntu-24.04.2`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: k.completePools,
		RunE: k.run(func(cmd *cobra.Command, c client.Client, args []string) error {
			o.Pool = args[0]
			return Rollout(cmd.Context(), c, out(cmd), o)
		}),
	}
	cmd.Flags().StringVar(&o.Config, "config", "", "The config identity the pool's nodes should run (default restart-<time>).")
	return cmd
}

// Rollout sets a pool's desiredConfig and says what follows.
func Rollout(ctx context.Context, c client.Client, w io.Writer, o RolloutOptions) error {
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	config := o.Config
	if config == "" {
		config = "restart-" + o.Now.UTC().Format("20060102-150405")
	}
	if len(config) > 253 || !configPattern.MatchString(config) {
		return fmt.Errorf("config %q is not a valid desiredConfig: use letters, digits and - _ . : + , starting and ending with a letter or digit, at most 253 characters", config)
	}
	pool, err := getPool(ctx, c, o.Pool)
	if err != nil {
		return err
	}
	old := pool.Spec.DesiredConfig
	if old == config {
		_, err := fmt.Fprintf(w, "maintenancepool/%s already wants config %s: nothing to do\n", pool.Name, config)
		return err
	}
	patch := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"spec":{"desiredConfig":%q}}`, config))
	if err := c.Patch(ctx, pool, patch); err != nil {
		return fmt.Errorf("set desiredConfig of MaintenancePool %s: %w", pool.Name, err)
	}
	max := "1"
	if pool.Spec.MaxUnavailable != nil {
		max = pool.Spec.MaxUnavailable.String()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "maintenancepool/%s desiredConfig: %s -> %s\n", pool.Name, or(old), config)
	fmt.Fprintf(&b, "Each of its %d nodes reboots once its daemon sees the new config, at most %s unavailable at a time", pool.Status.Nodes, max)
	if len(pool.Spec.Windows) > 0 {
		fmt.Fprintf(&b, ", within its %d maintenance windows", len(pool.Spec.Windows))
	}
	b.WriteString(".\n")
	if pool.Spec.Paused {
		fmt.Fprintf(&b, "The pool is paused: nothing starts until kubectl kmaint resume %s.\n", pool.Name)
	}
	fmt.Fprintf(&b, "Follow it with: kubectl kmaint status --pool %s\n", pool.Name)
	_, err = io.WriteString(w, b.String())
	return err
}

func newPauseCommand(k *kube, pause bool) *cobra.Command {
	var all bool
	var reason string
	cmd := &cobra.Command{
		Use:   "pause (<pool> | --all --reason \"...\")",
		Short: "Stop a pool, or every pool, from admitting nodes to reboot",
		Long: `Pause a pool (spec.paused): no more of its nodes are admitted to drain and
reboot; nodes already admitted finish. Requests keep arriving and wait. Pausing a
paused pool changes nothing.

With --all, pause every pool at once, the built-in default pool included: the
MaintenanceGate named cluster (created if need be) gets spec.paused and the
--reason, which every pool's Blocked condition, every waiting request and
kubectl kmaint status then show. kured users did this by setting its lock
annotation on its DaemonSet by hand.`,
		Example: `  kubectl kmaint pause workers
  kubectl kmaint pause --all --reason "incident 4711: no reboots until the postmortem"`,
	}
	if !pause {
		cmd.Use = "resume (<pool> | --all)"
		cmd.Short = "Let a paused or halted pool, or every pool, admit nodes to reboot again"
		cmd.Long = `Resume a paused pool: its waiting requests are admitted again within its budget
and windows.

Resume a pool halted by a failed health check (status.halt): the command writes
the pool annotation kmaint.io/resume-halt with the time of the latest failure it
shows, and names the nodes it resumes. Those nodes give up their slot as they
are (look at them first: kubectl kmaint status, kubectl describe node); a node
that fails after that time halts the pool again. A pool halted because its
health checks cannot run (Prometheus unreachable) resumes by itself once they
run. Resuming a pool that is neither paused nor halted changes nothing.

With --all, lift the cluster-wide pause (the MaintenanceGate named cluster); pools
paused one by one stay paused.`
		cmd.Example = `  kubectl kmaint resume workers
  kubectl kmaint resume --all`
	}
	cmd.Args = func(cmd *cobra.Command, args []string) error {
		if all {
			if len(args) > 0 {
				return fmt.Errorf("--all pauses or resumes every pool: give no pool name with it")
			}
			return nil
		}
		if reason != "" {
			return fmt.Errorf("--reason goes with --all only (a pool has no field for it)")
		}
		return cobra.ExactArgs(1)(cmd, args)
	}
	cmd.ValidArgsFunction = k.completePools
	cmd.RunE = k.run(func(cmd *cobra.Command, c client.Client, args []string) error {
		if all {
			return SetClusterPaused(cmd.Context(), c, out(cmd), pause, reason)
		}
		if !pause {
			return Resume(cmd.Context(), c, out(cmd), args[0])
		}
		return SetPaused(cmd.Context(), c, out(cmd), args[0], pause)
	})
	cmd.Flags().BoolVar(&all, "all", false, "Every pool, the default pool included, through the MaintenanceGate named cluster.")
	if pause {
		cmd.Flags().StringVar(&reason, "reason", "", "Why, with --all (required there): shown on every pool and waiting request.")
	}
	return cmd
}

// SetPaused pauses or resumes a pool; a pool already so is left alone.
func SetPaused(ctx context.Context, c client.Client, w io.Writer, name string, paused bool) error {
	word := map[bool]string{true: "paused", false: "resumed"}[paused]
	pool, err := getPool(ctx, c, name)
	if err != nil {
		return err
	}
	if pool.Spec.Paused == paused {
		state := map[bool]string{true: "paused", false: "not paused"}[paused]
		_, err := fmt.Fprintf(w, "maintenancepool/%s already %s\n", name, state)
		return err
	}
	patch := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"spec":{"paused":%t}}`, paused))
	if err := c.Patch(ctx, pool, patch); err != nil {
		return fmt.Errorf("set paused of MaintenancePool %s: %w", name, err)
	}
	what := "no more nodes are admitted; nodes already admitted finish"
	if !paused {
		what = fmt.Sprintf("%d waiting requests may be admitted again", pool.Status.PendingRequests)
		if gate, err := getGate(ctx, c); err == nil && v1alpha1.StopOf(gate) != nil {
			what += fmt.Sprintf(", once the cluster-wide pause is lifted (kubectl kmaint resume --all): %s", v1alpha1.StopOf(gate).Message)
		}
	}
	_, err = fmt.Fprintf(w, "maintenancepool/%s %s: %s\n", name, word, what)
	return err
}

// getPool reads a MaintenancePool, and names the pools there are when it
// does not exist.
func getPool(ctx context.Context, c client.Client, name string) (*v1alpha1.MaintenancePool, error) {
	pool := &v1alpha1.MaintenancePool{}
	err := c.Get(ctx, types.NamespacedName{Name: name}, pool)
	if apierrors.IsNotFound(err) {
		var list v1alpha1.MaintenancePoolList
		if err := c.List(ctx, &list); err != nil {
			return nil, fmt.Errorf("list MaintenancePools: %w", err)
		}
		return nil, unknownPool(name, list.Items)
	}
	if err != nil {
		return nil, fmt.Errorf("get MaintenancePool %s: %w", name, err)
	}
	return pool, nil
}

// unknownPool says that no pool has this name, and which do.
func unknownPool(name string, pools []v1alpha1.MaintenancePool) error {
	var names []string
	for _, p := range pools {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	msg := fmt.Sprintf("no MaintenancePool named %q", name)
	switch {
	case name == v1alpha1.DefaultPoolName:
		msg += "; the built-in default pool has no object to change: create a MaintenancePool named default (without nodeSelector)"
	case len(names) == 0:
		msg += "; the cluster has none (kubectl get maintenancepools)"
	default:
		msg += "; pools: " + strings.Join(names, ", ")
	}
	return fmt.Errorf("%s", msg)
}

// named matches a pool by name.
func named(name string) func(v1alpha1.MaintenancePool) bool {
	return func(p v1alpha1.MaintenancePool) bool { return p.Name == name }
}
