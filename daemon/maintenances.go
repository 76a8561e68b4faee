package daemon

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/daemon/journal"
)

// apiRequests reads the NodeMaintenances the operator names on the node.
// known is false when it names none, or its annotation cannot be read,
// which is logged once: the operator, its one writer, replaces it.
func (a *agent) apiRequests(ctx context.Context, node *corev1.Node) (reqs []protocol.APIRequest, known bool) {
	reqs, known, err := protocol.ReadAPIRequests(node)
	if err != nil {
		if msg := err.Error(); msg != a.badAPIRequests {
			a.badAPIRequests = msg
			ctrl.LoggerFrom(ctx).Error(err, "Cannot tell which NodeMaintenances are the node's: none is journaled or cancelled until the operator rewrites the annotation")
		}
		return nil, false
	}
	a.badAPIRequests = ""
	return reqs, known
}

// readMaintenances reads from the API server each NodeMaintenance named in
// reqs that the journal does not hold yet and that was not found settled
// before: only those may still be journaled. One that is gone, names
// another node, or will never be journaled is settled. The error names
// those that could not be read; they are read again at the next sync.
func (a *agent) readMaintenances(ctx context.Context, reqs []protocol.APIRequest, entries []journal.Entry) ([]v1alpha1.NodeMaintenance, error) {
	journaled := map[string]bool{}
	for _, e := range entries {
		if e.Kind == journal.KindRequest {
			journaled[e.ID] = true
		}
	}
	named := map[types.UID]bool{}
	var nms []v1alpha1.NodeMaintenance
	var errs []error
	for _, r := range reqs {
		named[r.UID] = true
		if journaled[string(r.UID)] || a.settled[r.UID] {
			continue
		}
		nm := &v1alpha1.NodeMaintenance{}
		err := a.reader.Get(ctx, types.NamespacedName{Name: r.Name}, nm)
		switch {
		case apierrors.IsNotFound(err):
			a.settle(r.UID)
			continue
		case err != nil:
			errs = append(errs, fmt.Errorf("read maintenance %s: %w", r.Name, err))
			continue
		case nm.UID != r.UID:
			// Deleted, and its name taken by another request, which
			// the operator names with its own UID.
			a.settle(r.UID)
			continue
		case nm.Spec.NodeName != a.nodeName:
			ctrl.LoggerFrom(ctx).Error(nil, "The node names a NodeMaintenance of another node; ignoring it", "maintenance", r.Name, "itsNode", nm.Spec.NodeName)
			a.settle(r.UID)
			continue
		}
		if settled(nm, a.bootID) {
			a.settle(r.UID)
		}
		nms = append(nms, *nm)
	}
	for uid := range a.settled {
		if !named[uid] {
			delete(a.settled, uid)
		}
	}
	return nms, errors.Join(errs...)
}

func (a *agent) settle(uid types.UID) {
	if a.settled == nil {
		a.settled = map[types.UID]bool{}
	}
	a.settled[uid] = true
}

// settled reports whether a NodeMaintenance not in the journal will never
// be journaled in this boot, whatever becomes of it: it finished, is being
// deleted, starts on the node, or was journaled in an earlier boot (whose
// reboot satisfied it). decide skips it all the same; settled only spares
// reading it again.
func settled(nm *v1alpha1.NodeMaintenance, bootID string) bool {
	boot := nm.Status.JournaledBootID
	return nm.Status.Phase.Done() || nm.DeletionTimestamp != nil || nm.Spec.Source.RaisedOnNode() ||
		boot != "" && boot != bootID
}
