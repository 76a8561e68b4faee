package poolstatus

import (
	"context"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/statuspatch"
)

// Writer writes pools' status. The zero Writer is not usable: make one with
// NewWriter.
type Writer struct {
	client   client.Client
	live     client.Reader
	recorder events.EventRecorder
	interval time.Duration
	// written is the status last written per pool, so that an unchanged
	// status is not written again, whatever the cache shows.
	written statuspatch.Written[*v1alpha1.MaintenancePoolStatus]
	pace    *pace
	// rollouts are the configs whose rollout was announced, per pool.
	rollouts rollouts
}

// NewWriter returns a Writer that patches with c, reads a pool afresh with
// live (the API server, not the cache) after a conflict, and writes a
// status that only moves counts at most once per interval.
func NewWriter(c client.Client, live client.Reader, recorder events.EventRecorder, interval time.Duration) *Writer {
	return &Writer{client: c, live: live, recorder: recorder, interval: interval, pace: newPace()}
}

// Last is the pool's status as this operator last wrote it, or as the cache
// shows it when it wrote none: the cache may not show the last write yet,
// and an episode must be announced once.
func (w *Writer) Last(pool *v1alpha1.MaintenancePool) *v1alpha1.MaintenancePoolStatus {
	if last, ok := w.written.Last(pool.Name, pool.UID); ok {
		return last
	}
	return pool.Status.DeepCopy()
}

// Write has set fill the pool's status, given the status last written, and
// writes it when it changed; it returns when to write again at the latest.
//
// Aftercare writes settling, halt and the Halted condition: the patch
// leaves the first two out, and puts the conditions back as the pool shows
// them, to that version of the pool only. When the cache is behind a write
// of aftercare's, the pool is read from the API server and the patch made
// again on it, so that the gate's own write, and the events announcing it,
// happen once.
func (w *Writer) Write(ctx context.Context, pool *v1alpha1.MaintenancePool, set func(last *v1alpha1.MaintenancePoolStatus)) (time.Duration, error) {
	before := w.Last(pool)
	set(before)
	if w.written.Same(pool.Name, pool.UID, &pool.Status) {
		return 0, nil
	}
	if wait := w.pace.wait(pool.UID, before, &pool.Status, w.interval, time.Now()); wait > 0 {
		return wait, nil
	}
	// blockingQuery is omitted when no query blocks: named, it is removed,
	// or waiting requests would go on quoting the last one; freeze
	// likewise once the freeze is over.
	patch := statuspatch.Whole{Leave: []string{"settling", "halt"}, Lock: true}
	written := pool
	err := w.client.Status().Patch(ctx, written, patch)
	if apierrors.IsConflict(err) {
		live := &v1alpha1.MaintenancePool{}
		if err := w.live.Get(ctx, types.NamespacedName{Name: pool.Name}, live); err != nil {
			return 0, fmt.Errorf("get pool %s: %w", pool.Name, err)
		}
		if live.UID != pool.UID {
			return 0, nil // deleted and made again: its own reconcile writes it
		}
		written = live.DeepCopy()
		written.Status = *pool.Status.DeepCopy()
		keepAftercare(&written.Status, &live.Status)
		err = w.client.Status().Patch(ctx, written, patch)
		if apierrors.IsConflict(err) {
			return time.Second, nil // changed again meanwhile: the next reconcile writes it
		}
	}
	if err != nil {
		return 0, fmt.Errorf("patch status of pool %s: %w", pool.Name, err)
	}
	pool.Status = written.Status
	w.written.Remember(pool.Name, pool.UID, &pool.Status)
	w.pace.wrote(pool.UID, time.Now())
	w.rolloutFinished(ctx, pool, before)
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
