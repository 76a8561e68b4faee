package maintenance

import (
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
)

// hookStretches are the stretches of the pool's hooks the node's record
// shows for the admission of the boot a request was made in: the points
// before the reboot are for that boot, the one after it for the boot the
// node came back with from its approved reboot. Nil when the record is of
// another admission, or there is none.
func hookStretches(boot string, f *protocol.NodeState) []protocol.HookStretch {
	if f == nil || f.Hook == nil || boot == "" || f.Admission == nil || f.Admission.BootID != boot {
		return nil
	}
	var out []protocol.HookStretch
	for _, s := range f.Hook.Stretches() {
		switch {
		case s.Point != protocol.BeforeDrain && s.Point != protocol.BeforeReboot && s.Point != protocol.AfterReboot:
			// Not the operator's (a hand-written record): the API refuses
			// other points, and a refused status would stop the request's.
		case s.Point != protocol.AfterReboot && s.BootID == boot,
			s.Point == protocol.AfterReboot && s.BootID != boot && s.BootID == f.BootID && f.Approved == boot:
			out = append(out, s)
		}
	}
	return out
}

// recordHookTimes keeps the stretches in status.hookTimes: when the node
// first reached each point, and when its hooks had all passed. A point
// reached again after it passed (the node drained again) is open again
// until it passes again. The stretches come from the gate's record, by the
// operator's clock; one ahead of now (another replica's) is taken as now.
func recordHookTimes(s *v1alpha1.NodeMaintenanceStatus, stretches []protocol.HookStretch, now time.Time) {
	at := func(t time.Time) metav1.Time {
		if t.After(now) {
			t = now
		}
		return metav1.NewTime(t)
	}
	for _, st := range stretches {
		i := slices.IndexFunc(s.HookTimes, func(h v1alpha1.HookTime) bool { return h.Point == string(st.Point) })
		if i < 0 {
			s.HookTimes = append(s.HookTimes, v1alpha1.HookTime{Point: string(st.Point), Started: at(st.Since)})
			i = len(s.HookTimes) - 1
		}
		h := &s.HookTimes[i]
		// At most the API's bound of names, each within its bound: a
		// status the API refuses would stop the request's.
		h.Hooks = slices.Clone(st.Hooks[:min(len(st.Hooks), 8)])
		for j, name := range h.Hooks {
			if len(name) > 63 {
				h.Hooks[j] = name[:63]
			}
		}
		switch {
		case !st.Passed.IsZero():
			if h.Passed == nil {
				p := at(st.Passed)
				h.Passed = &p
			}
		case h.Passed != nil && st.Since.After(h.Passed.Time):
			h.Passed = nil
		}
	}
	slices.SortStableFunc(s.HookTimes, func(a, b v1alpha1.HookTime) int {
		switch {
		case protocol.HookPoint(a.Point).Before(protocol.HookPoint(b.Point)):
			return -1
		case protocol.HookPoint(b.Point).Before(protocol.HookPoint(a.Point)):
			return 1
		}
		return 0
	})
}
