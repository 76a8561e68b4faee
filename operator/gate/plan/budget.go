package plan

import (
	"strings"

	"github.com/kmaint/kmaint/operator/gate/view"
)

// UnavailableBecause says why a node counts against its pool's budget.
func UnavailableBecause(v *view.Node) string {
	var why string
	switch {
	case v.AdmittedUnseen:
		why = "admitted"
	case v.Rebooting():
		why = "rebooting"
	case v.Draining():
		why = "draining"
	case v.Settle != nil || v.SettleUnreadable():
		why = "settling after its reboot"
	case !v.Ready:
		why = "not Ready"
	default:
		why = "cordoned"
	}
	if len(v.Relabelled) > 0 {
		why += ", in flight here though its labels put it in " + strings.Join(v.Relabelled, ", ")
	}
	return why
}
