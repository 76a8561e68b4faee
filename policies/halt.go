package policies

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

// PoolHalt is the pool's halt as its Halted condition reports it, the one
// record of it that the aftercare controller writes and the gate and
// NodeMaintenances read; nil when the pool is not halted.
func PoolHalt(pool *v1alpha1.MaintenancePool) *Halt {
	if pool == nil {
		return nil
	}
	c := meta.FindStatusCondition(pool.Status.Conditions, v1alpha1.HaltedCondition)
	if c == nil || c.Status != metav1.ConditionTrue {
		return nil
	}
	return &Halt{Reason: c.Reason, Message: c.Message}
}
