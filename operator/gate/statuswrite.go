package gate

import (
	"context"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/statuspatch"
)

// writeStatus fills the pool's status from the reconcile's final picture
// and writes it when it changed, paced (statusPace); it returns when to
// write again at the latest.
//
// Aftercare writes settling, halt and the Halted condition: the patch
// leaves the first two out, and puts the conditions back as the pool shows
// them, to that version of the pool only. When the cache is behind a write
// of aftercare's, the pool is read from the API server and the patch made
// again on it, so that the gate's own write, and the events announcing it,
// happen once.
func (r *Reconciler) writeStatus(ctx context.Context, st *poolState) (time.Duration, error) {
	pool := st.pool
	// The built-in default pool has no object to report on, and a pool
	// that cannot be read is never written back (package unreadable
	// reports it).
	if pool.UID == "" || pool.Unreadable() != nil {
		return 0, nil
	}
	// The cached pool may predate the last status written, so the
	// comparison is with what this operator last wrote.
	before, ok := r.written.Last(pool.Name, pool.UID)
	if !ok {
		before = pool.Status.DeepCopy()
	}
	r.setStatus(ctx, st)
	if r.written.Same(pool.Name, pool.UID, &pool.Status) {
		return 0, nil
	}
	if wait := r.pace.wait(pool.UID, before, &pool.Status, r.StatusInterval, time.Now()); wait > 0 {
		return wait, nil
	}
	// blockingQuery is omitted when no query blocks: named, it is removed,
	// or waiting requests would go on quoting the last one; freeze
	// likewise once the freeze is over.
	patch := statuspatch.Whole{Leave: []string{"settling", "halt"}, Lock: true}
	written := pool
	err := r.Status().Patch(ctx, written, patch)
	if apierrors.IsConflict(err) {
		live := &v1alpha1.MaintenancePool{}
		if err := r.live.Get(ctx, types.NamespacedName{Name: pool.Name}, live); err != nil {
			return 0, fmt.Errorf("get pool %s: %w", pool.Name, err)
		}
		if live.UID != pool.UID {
			return 0, nil // deleted and made again: its own reconcile writes it
		}
		written = live.DeepCopy()
		written.Status = *pool.Status.DeepCopy()
		keepAftercare(&written.Status, &live.Status)
		err = r.Status().Patch(ctx, written, patch)
		if apierrors.IsConflict(err) {
			return time.Second, nil // changed again meanwhile: the next reconcile writes it
		}
	}
	if err != nil {
		return 0, fmt.Errorf("patch status of pool %s: %w", pool.Name, err)
	}
	pool.Status = written.Status
	r.written.Remember(pool.Name, pool.UID, &pool.Status)
	r.pace.wrote(pool.UID, time.Now())
	r.rolloutFinished(ctx, pool, before)
	return 0, nil
}

// keepAftercare puts in s what aftercare wrote in live: the settling
// count, the halt and the Halted condition.
func keepAftercare(s, live *v1alpha1.MaintenancePoolStatus) {
	s.Settling, s.Halt = live.Settling, live.Halt
	c := meta.FindStatusCondition(live.Conditions, v1alpha1.HaltedCondition)
	if c == nil {
		meta.RemoveStatusCondition(&s.Conditions, v1alpha1.HaltedCondition)
		return
	}
	// In its place, with its own transition time.
	if i := slices.IndexFunc(s.Conditions, func(x metav1.Condition) bool { return x.Type == c.Type }); i >= 0 {
		s.Conditions[i] = *c
		return
	}
	s.Conditions = append(s.Conditions, *c)
}
