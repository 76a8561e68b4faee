package gate

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"

	"github.com/kmaint/kmaint/api/protocol"
)

// syncDesiredConfig writes the pool's desiredConfig to its nodes. Nodes that
// two pools select get none: no pool owns them.
func (r *Reconciler) syncDesiredConfig(ctx context.Context, st *poolState) error {
	want := st.pool.Spec.DesiredConfig
	var errs []error
	started := false
	for _, v := range st.views {
		// Read from the annotation: with want set, equal means it is there;
		// with none wanted, absent or empty is the same.
		if len(v.OtherPools) > 0 || v.DesiredConfig == want {
			continue
		}
		_, err := r.patchNode(ctx, st, v, false, protocol.SetDesiredConfig(want))
		errs = append(errs, err)
		started = started || err == nil && want != "" && v.CurrentConfig != want
	}
	if started && st.pool.UID != "" {
		// The quiet members not among the views are in no other pool.
		outdated := st.quiet().Nodes - st.quiet().Current
		for _, v := range st.views {
			if len(v.OtherPools) == 0 && v.CurrentConfig != want {
				outdated++
			}
		}
		r.status.RolloutStarted(ctx, st.pool, outdated, st.memberCount())
	}
	return errors.Join(errs...)
}

// releaseVoid releases admissions that no longer stand for a request
// (protocol.NodeState.AdmissionVoid), freeing their slots: the node
// rebooted by other means, or its requests are gone. The release is one
// patch, and the Jobs of its hooks are stopped after it. What comes after
// an approved reboot is aftercare's.
func (r *Reconciler) releaseVoid(ctx context.Context, st *poolState) error {
	var errs []error
	for _, v := range st.views {
		if !v.AdmissionVoid() {
			continue
		}
		rec := v.Hook
		if _, err := r.patchNode(ctx, st, v, true, protocol.Release()); err != nil {
			errs = append(errs, err)
			continue
		}
		errs = append(errs, r.hooks.Stop(ctx, rec))
		r.events.Node(st.pool, v.Node, corev1.EventTypeNormal, "AdmissionReleased", "Release",
			"Node %s no longer requests a reboot of the admitted boot; released before approval", v.Node.Name)
	}
	return errors.Join(errs...)
}
