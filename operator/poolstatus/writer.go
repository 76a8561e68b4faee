package poolstatus

import (
	"context"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/statuspatch"
)

// Writer writes pools' status. The zero Writer is not usable: make one with
// NewWriter.
type Writer struct {
	client   client.Client
	recorder events.EventRecorder
	interval time.Duration
	// written is the status last written per pool, so that an unchanged
	// status is not written again, whatever the cache shows.
	written statuspatch.Written[*v1alpha1.MaintenancePoolStatus]
	pace    *pace
	// rollouts are the configs whose rollout was announced, per pool.
	rollouts rollouts
}

// NewWriter returns a Writer that writes with c, and writes a status that
// only moves counts at most once per interval.
func NewWriter(c client.Client, recorder events.EventRecorder, interval time.Duration) *Writer {
	return &Writer{client: c, recorder: recorder, interval: interval, pace: newPace()}
}

// Last is the gate's part of the pool's status as this operator last wrote
// it, or as the cache shows it when it wrote none: the cache may not show
// the last write yet, and an episode must be announced once.
func (w *Writer) Last(pool *v1alpha1.MaintenancePool) *v1alpha1.MaintenancePoolStatus {
	if last, ok := w.written.Last(pool.Name, pool.UID); ok {
		return last
	}
	return gatePart(&pool.Status)
}

// The field managers of the pool's status: the gate writes all of it but
// aftercare's part, aftercare settling, halt and the Halted condition
// (server-side apply, statuspatch.Apply), so that no field has two
// writers.
const (
	GateManager      = "kmaint-gate"
	AftercareManager = "kmaint-aftercare"
)

// GatePart is the gate's part of a pool's status.
var GatePart = statuspatch.Apply{Kind: v1alpha1.GroupVersion.WithKind("MaintenancePool"), Leave: []string{"settling", "halt"},
	Conditions: []string{v1alpha1.BlockedCondition, v1alpha1.DrainingCondition, v1alpha1.DegradedCondition, v1alpha1.ConflictingCondition,
		v1alpha1.OverBudgetCondition, v1alpha1.OptedOutCondition, v1alpha1.FrozenCondition}}

// AftercarePart is aftercare's part of a pool's status.
var AftercarePart = statuspatch.Apply{Kind: v1alpha1.GroupVersion.WithKind("MaintenancePool"), Fields: []string{"settling", "halt"},
	Conditions: []string{v1alpha1.HaltedCondition}, Lock: true}

// Write has set fill the pool's status, given the gate's part of the
// status last written, and writes the gate's part when it changed (Apply,
// as GateManager); it returns when to write again at the latest.
func (w *Writer) Write(ctx context.Context, pool *v1alpha1.MaintenancePool, set func(last *v1alpha1.MaintenancePoolStatus)) (time.Duration, error) {
	before := w.Last(pool)
	set(before)
	mine := gatePart(&pool.Status)
	if w.written.Same(pool.Name, pool.UID, mine) {
		return 0, nil
	}
	if wait := w.pace.wait(pool.UID, before, mine, w.interval, time.Now()); wait > 0 {
		return wait, nil
	}
	applied, err := GatePart.Part(pool)
	if err != nil {
		return 0, err
	}
	written := pool.DeepCopy()
	switch err := w.client.Status().Patch(ctx, written, GatePart, client.FieldOwner(GateManager), client.ForceOwnership); {
	case apierrors.IsConflict(err) || apierrors.IsNotFound(err):
		return 0, nil // deleted, maybe made again: its own reconcile writes it
	case err != nil:
		return 0, fmt.Errorf("apply the status of pool %s: %w", pool.Name, err)
	}
	if err := w.removeLeftovers(ctx, written, applied); err != nil {
		return 0, err
	}

	w.written.Remember(pool.Name, pool.UID, mine)
	w.pace.wrote(pool.UID, time.Now())
	w.rolloutFinished(ctx, pool, before)
	return 0, nil
}

// removeLeftovers removes from the pool what is the gate's part of its
// status but was not applied: written by an operator before the status
// had a field manager per controller, or by a person. Their entry of
// managedFields keeps the fields whose values it wrote, beside the gate
// (an apply shares a field with the writer of the same value), so no
// apply of the gate's removes them; and only a write of the pool itself,
// which the operator is not granted, could drop that entry. Nearly every
// write finds none.
func (w *Writer) removeLeftovers(ctx context.Context, stored *v1alpha1.MaintenancePool, applied map[string]any) error {
	patch, err := GatePart.Leftovers(stored, applied)
	if patch == nil || err != nil {
		return err
	}
	if err := w.client.Status().Patch(ctx, stored, patch, client.FieldOwner(GateManager)); err != nil && !apierrors.IsInvalid(err) {
		// Invalid: a test failed, the status changed meanwhile; the next
		// write looks again.
		return fmt.Errorf("remove what is left of an earlier status of pool %s: %w", stored.Name, err)
	}
	return nil
}

// gatePart is a copy of s holding only the gate's part (GatePart).
func gatePart(s *v1alpha1.MaintenancePoolStatus) *v1alpha1.MaintenancePoolStatus {
	part := s.DeepCopy()
	part.Settling, part.Halt = 0, nil
	part.Conditions = slices.DeleteFunc(part.Conditions, func(c metav1.Condition) bool {
		return !slices.Contains(GatePart.Conditions, c.Type)
	})
	return part
}
