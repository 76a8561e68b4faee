package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
)

// CancelOptions are the cancel command's.
type CancelOptions struct {
	// Name is the NodeMaintenance to cancel.
	Name string
	// Wait is how long to wait for the node's daemon to withdraw the
	// request; 0 does not wait.
	Wait time.Duration
	// Poll is how often the node is read while waiting; 0 means a second.
	Poll time.Duration
}

func newCancelCommand(k *kube) *cobra.Command {
	o := CancelOptions{}
	cmd := &cobra.Command{
		Use:   "cancel <nodemaintenance>",
		Short: "Cancel a reboot request until its reboot is approved",
		Long: `Cancel a reboot request made through the API (kubectl kmaint request, a
NodeMaintenance, a RebootPolicy): delete its NodeMaintenance. If the node's daemon
already journaled the request, it journals the cancellation and withdraws the
request; the command waits for that (--wait).

A request can be cancelled until its reboot is approved, also while the node is
being drained: kmaint then stops the drain and uncordons the node if it cordoned
it. Once the reboot is approved the node is drained and rebooting, and the
cancellation is refused; if the approval comes in the moment the cancellation is
made, the daemon refuses it (event CancelRefused on the Node) and says so here.

Requests made on the node (kmaint-daemon request-reboot) are cancelled on the
node, as root: kmaint-daemon cancel-reboot <id>. A config request follows its
pool's desiredConfig: pause the pool to hold the rollout.`,
		Example: `  kubectl kmaint cancel node-7-x2k9p
  kubectl kmaint cancel node-7-x2k9p --wait=0`,
		Args: cobra.ExactArgs(1),
		RunE: k.run(func(cmd *cobra.Command, c client.Client, args []string) error {
			o.Name = args[0]
			return Cancel(cmd.Context(), c, out(cmd), o)
		}),
	}
	cmd.Flags().DurationVar(&o.Wait, "wait", time.Minute, "How long to wait for the node's daemon to withdraw the request; 0 does not wait.")
	return cmd
}

// Cancel deletes a NodeMaintenance whose reboot is not approved yet, and
// waits for the node's daemon to withdraw its request.
func Cancel(ctx context.Context, c client.Client, w io.Writer, o CancelOptions) error {
	if o.Wait < 0 {
		return fmt.Errorf("--wait=%s: give a duration of 0 or more", o.Wait)
	}
	nm, node, err := deleteForCancel(ctx, c, o.Name)
	if err != nil {
		return err
	}
	id, boot := nm.RequestID(), requestBoot(nm)
	if boot == "" {
		// Never journaled: the daemon journals only what it reported first,
		// and cannot report to a deleted object.
		_, err := fmt.Fprintf(w, "nodemaintenance/%s cancelled: node %s's daemon had not journaled it, and will not.\n", nm.Name, node)
		return err
	}
	if _, err := fmt.Fprintf(w, "nodemaintenance/%s deleted; node %s's daemon withdraws request %s unless its reboot is approved first.\n", nm.Name, node, id); err != nil {
		return err
	}
	if o.Wait == 0 {
		return nil
	}
	return waitForWithdrawal(ctx, c, w, o, node, id, boot)
}

// deleteForCancel deletes the NodeMaintenance if it can still be cancelled,
// with preconditions, so that a change made between the check and the
// delete (an approval, a report of the daemon) is checked again.
func deleteForCancel(ctx context.Context, c client.Client, name string) (*v1alpha1.NodeMaintenance, string, error) {
	for attempt := 0; ; attempt++ {
		nm := &v1alpha1.NodeMaintenance{}
		if err := c.Get(ctx, types.NamespacedName{Name: name}, nm); apierrors.IsNotFound(err) {
			return nil, "", fmt.Errorf("nodemaintenance %q not found (kubectl get nodemaintenances.kmaint.io)", name)
		} else if err != nil {
			return nil, "", fmt.Errorf("get nodemaintenance %s: %w", name, err)
		}
		node := &corev1.Node{}
		if err := c.Get(ctx, types.NamespacedName{Name: nm.Spec.NodeName}, node); apierrors.IsNotFound(err) {
			node = nil
		} else if err != nil {
			return nil, "", fmt.Errorf("get node %s: %w", nm.Spec.NodeName, err)
		}
		if err := cancellable(nm, node); err != nil {
			return nil, "", err
		}
		uid, rv := nm.UID, nm.ResourceVersion
		err := c.Delete(ctx, nm, client.Preconditions{UID: &uid, ResourceVersion: &rv})
		switch {
		case err == nil:
			return nm, nm.Spec.NodeName, nil
		case apierrors.IsConflict(err) && attempt < 5:
			continue
		case apierrors.IsNotFound(err):
			return nil, "", fmt.Errorf("nodemaintenance %q was deleted meanwhile", name)
		default:
			return nil, "", fmt.Errorf("delete nodemaintenance %s: %w", name, err)
		}
	}
}

// cancellable says why a NodeMaintenance cannot be cancelled from the
// cluster; nil when it can. node is nil when it does not exist.
func cancellable(nm *v1alpha1.NodeMaintenance, node *corev1.Node) error {
	id := nm.RequestID()
	switch {
	case nm.Status.Phase.Done():
		return fmt.Errorf("nodemaintenance %s is already %s: nothing to cancel", nm.Name, nm.Status.Phase)
	case nm.Spec.Source == v1alpha1.SourceHost:
		return fmt.Errorf("nodemaintenance %s records a request made on node %s itself (request %s): cancel it there, as root: kmaint-daemon cancel-reboot %s",
			nm.Name, nm.Spec.NodeName, id, id)
	case nm.Spec.Source == v1alpha1.SourceSentinel:
		return fmt.Errorf("nodemaintenance %s records the reboot node %s's own sentinel asked for (request %s): withdraw it on the node, as root: kmaint-daemon cancel-reboot %s "+
			"(the daemon then asks again only when the sentinel changes), or remove the sentinel there", nm.Name, nm.Spec.NodeName, id, id)
	case nm.Spec.Source == v1alpha1.SourceConfig:
		return fmt.Errorf("nodemaintenance %s records a config request: it follows the pool's desiredConfig; pause the pool to hold the rollout (kubectl kmaint pause <pool>), "+
			"or withdraw it on node %s, as root: kmaint-daemon cancel-reboot %s", nm.Name, nm.Spec.NodeName, id)
	case nm.Status.Phase == v1alpha1.PhaseApproved || nm.Status.Phase == v1alpha1.PhaseRebooting:
		return fmt.Errorf("refused: the reboot of nodemaintenance %s is approved (%s); node %s is drained and reboots now. A request can be cancelled only until its reboot is approved",
			nm.Name, nm.Status.Phase, nm.Spec.NodeName)
	}
	if node == nil {
		return nil
	}
	st, _ := protocol.Read(node)
	if boot := requestBoot(nm); boot != "" && st.Approved == boot && st.Requested != nil && st.Requested.BootID == boot && st.Requested.Has(id) {
		return fmt.Errorf("refused: node %s's reboot is approved for boot %s, which request %s is part of; the node is drained and reboots now. A request can be cancelled only until its reboot is approved",
			nm.Spec.NodeName, boot, id)
	}
	return nil
}

// requestBoot is the boot the request was journaled in; empty while it was
// not.
func requestBoot(nm *v1alpha1.NodeMaintenance) string {
	if nm.Status.BootIDBefore != "" {
		return nm.Status.BootIDBefore
	}
	return nm.Status.JournaledBootID
}

// errTooLate ends the wait when the daemon refused the cancellation.
var errTooLate = errors.New("too late")

// waitForWithdrawal reads the node until its daemon shows the request
// withdrawn, or its reboot approved, or the node on another boot.
func waitForWithdrawal(ctx context.Context, c client.Client, w io.Writer, o CancelOptions, nodeName, id, boot string) error {
	poll := o.Poll
	if poll == 0 {
		poll = time.Second
	}
	var outcome string
	err := wait.PollUntilContextTimeout(ctx, poll, o.Wait, true, func(ctx context.Context) (bool, error) {
		node := &corev1.Node{}
		if err := c.Get(ctx, types.NamespacedName{Name: nodeName}, node); err != nil {
			return false, fmt.Errorf("get node %s: %w", nodeName, err)
		}
		st, _ := protocol.Read(node)
		switch {
		case st.Requested != nil && st.Requested.BootID == boot && slices.Contains(st.Requested.Cancelled, id):
			outcome = fmt.Sprintf("Request %s cancelled on node %s; kmaint releases the node if it was admitted, and uncordons it if kmaint cordoned it.", id, nodeName)
			return true, nil
		case st.BootID != "" && st.BootID != boot:
			outcome = fmt.Sprintf("node %s rebooted meanwhile (boot %s, then %s): that reboot satisfied request %s", nodeName, boot, st.BootID, id)
			return false, errTooLate
		case st.Approved == boot && st.Requested != nil && st.Requested.Has(id):
			outcome = fmt.Sprintf("too late: node %s's reboot was approved for boot %s before its daemon withdrew request %s; the node reboots (see its CancelRefused event)", nodeName, boot, id)
			return false, errTooLate
		}
		return false, nil
	})
	switch {
	case errors.Is(err, errTooLate):
		return errors.New(outcome)
	case err != nil && ctx.Err() == nil && wait.Interrupted(err):
		return fmt.Errorf("node %s's daemon has not withdrawn request %s within %s: is it running? The request stays deleted; the daemon withdraws it when it runs, unless the reboot is approved first", nodeName, id, o.Wait)
	case err != nil:
		return err
	}
	_, err = fmt.Fprintln(w, outcome)
	return err
}
