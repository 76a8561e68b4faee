package poolstatus

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

// SetCondition sets a condition to True with trueReason and message, or to
// False with falseReason and no message.
func SetCondition(pool *v1alpha1.MaintenancePool, condType string, status bool, trueReason, falseReason, message string) {
	c := metav1.Condition{Type: condType, Status: metav1.ConditionFalse, Reason: falseReason, ObservedGeneration: pool.Generation}
	if status {
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, trueReason, v1alpha1.FitMessage(message)
	}
	meta.SetStatusCondition(&pool.Status.Conditions, c)
}

// NameList joins names for a message, the first twenty of them: enough to
// find the rest with kubectl.
func NameList(names []string) string {
	const most = 20
	if len(names) <= most {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:most], ", "), len(names)-most)
}
