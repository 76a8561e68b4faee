package policy

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

// A schedule's fire is spent once acted on (its time becomes the policy's
// lastScheduleTime), on the nodes selected at that moment. The selection
// comes from the cache, which after the API server was away can be behind
// by up to a minute (each informer's watch comes back on a backoff of its
// own): a node labelled for the policy in that time would miss the fire for
// good (a soak saw a node labelled 12s before its policy's one fire never
// asked for). A fire is rare, so before acting on one the policy lists from
// the API server the names of the nodes its selector picks (metadata only),
// and when the cache's selection differs it leaves the fire unspent, says
// why, and looks again a second later.

// liveNodesPage is how many Nodes a page of selectionBehind's list holds:
// at most 25 MiB of metadata, however they were padded.
const liveNodesPage = 100

// holdFireForTheCache returns ev, a schedule's evaluation that fired, as it
// stands when the cache's selection is the API server's; else an
// evaluation that leaves the fire for the next reconcile: the last
// candidates kept, lastScheduleTime unchanged, the reason as its error.
func (r *Reconciler) holdFireForTheCache(ctx context.Context, p *v1alpha1.RebootPolicy, last *v1alpha1.RebootPolicyStatus, f *facts, ev evaluation) evaluation {
	behind, err := r.selectionBehind(ctx, f)
	if err == nil && behind == "" {
		return ev
	}
	if err != nil {
		behind = err.Error()
	}
	return evaluation{at: ev.at, candidates: fromStatus(last, p.Generation), next: ev.at.Add(time.Second),
		err: fmt.Errorf("the schedule's fire at %s waits: %s", ev.lastSchedule.UTC().Format(time.RFC3339), behind)}
}

// selectionBehind says how the cache's selection (f.selected) differs
// from the nodes the API server has that the policy selects; empty when
// they agree.
func (r *Reconciler) selectionBehind(ctx context.Context, f *facts) (string, error) {
	seen := make(map[string]bool, len(f.selected))
	var onlyLive, onlyCached []string
	// In pages, keeping only the names: a Node's metadata holds whatever
	// anyone who may patch it wrote there (up to 256 KiB of annotations),
	// and all of the selected nodes' at once could take more memory than
	// the operator has.
	for cont := ""; ; {
		live := &metav1.PartialObjectMetadataList{}
		live.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NodeList"))
		// The selector the cache's selection was made with: the two differ
		// only in what they are read from.
		if err := r.apiReader.List(ctx, live, client.MatchingLabelsSelector{Selector: f.selector}, client.Limit(liveNodesPage), client.Continue(cont)); err != nil {
			return "", fmt.Errorf("cannot tell whether the operator's cache holds the selected nodes as they stand: list nodes: %w", err)
		}
		for i := range live.Items {
			name := live.Items[i].Name
			seen[name] = true
			if !f.selected[name] {
				onlyLive = append(onlyLive, name)
			}
		}
		if cont = live.Continue; cont == "" {
			break
		}
	}
	for name := range f.selected {
		if !seen[name] {
			onlyCached = append(onlyCached, name)
		}
	}
	if len(onlyLive)+len(onlyCached) == 0 {
		return "", nil
	}
	slices.Sort(onlyLive)
	slices.Sort(onlyCached)
	return fmt.Sprintf("the operator's cache of Nodes is behind the API server (selected there and not in the cache: [%s]; in the cache and not there: [%s])",
		strings.Join(first(onlyLive, 10), ", "), strings.Join(first(onlyCached, 10), ", ")), nil
}
