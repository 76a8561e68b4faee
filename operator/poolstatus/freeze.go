package poolstatus

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/policies"
)

// Freeze writes status.freeze and the Frozen condition from the pool's
// own freezes, and sends FreezeStarted and FreezeEnded once per freeze:
// the last status written (which a restarted operator reads back from the
// pool) tells whether this one was reported already. A freeze that cannot
// be read is Frozen, reason InvalidFreeze, with a Warning event once.
func Freeze(recorder events.EventRecorder, pool *v1alpha1.MaintenancePool, last *v1alpha1.MaintenancePoolStatus, f policies.FreezeState) {
	was := last.Freeze
	wasInvalid := meta.FindStatusCondition(last.Conditions, v1alpha1.FrozenCondition)
	invalidBefore := wasInvalid != nil && wasInvalid.Status == metav1.ConditionTrue && wasInvalid.Reason == v1alpha1.InvalidFreezeReason
	switch {
	case f.Err != nil:
		pool.Status.Freeze = nil
		msg := f.Describe()
		SetCondition(pool, v1alpha1.FrozenCondition, true, v1alpha1.InvalidFreezeReason, "", msg)
		if !invalidBefore {
			recorder.Eventf(pool, nil, corev1.EventTypeWarning, v1alpha1.InvalidFreezeReason, "Freeze", "%s", msg)
		}
		return
	case f.Frozen:
		pool.Status.Freeze = &v1alpha1.ActiveFreeze{Name: f.Freeze.Name, Reason: f.Freeze.Reason, End: metav1.NewTime(f.Until.UTC().Truncate(time.Second))}
		SetCondition(pool, v1alpha1.FrozenCondition, true, v1alpha1.FrozenReason, "",
			"Nothing new is admitted but requests with ignoreFreezes: "+f.Describe())
	default:
		pool.Status.Freeze = nil
		SetCondition(pool, v1alpha1.FrozenCondition, false, "", v1alpha1.NotFrozenReason, "")
	}
	now := pool.Status.Freeze
	switch {
	case now != nil && was != nil && was.Name != now.Name:
		// One freeze followed on from another.
		recorder.Eventf(pool, nil, corev1.EventTypeNormal, v1alpha1.FreezeEndedReason, "Freeze",
			"Freeze %s ended; freeze %s follows on", freezeName(was), freezeName(now))
		recorder.Eventf(pool, nil, corev1.EventTypeNormal, v1alpha1.FreezeStartedReason, "Freeze",
			"Freeze %s started: nothing new is admitted until %s, but requests with ignoreFreezes", freezeName(now), now.End.UTC().Format(time.RFC3339))
	case now != nil && was == nil:
		recorder.Eventf(pool, nil, corev1.EventTypeNormal, v1alpha1.FreezeStartedReason, "Freeze",
			"Freeze %s started: nothing new is admitted until %s, but requests with ignoreFreezes", freezeName(now), now.End.UTC().Format(time.RFC3339))
	case now == nil && was != nil:
		recorder.Eventf(pool, nil, corev1.EventTypeNormal, v1alpha1.FreezeEndedReason, "Freeze",
			"Freeze %s ended: requests are admitted again as windows and budget allow", freezeName(was))
	}
}

func freezeName(f *v1alpha1.ActiveFreeze) string {
	if f.Reason == "" {
		return f.Name
	}
	return fmt.Sprintf("%s (%s)", f.Name, f.Reason)
}
