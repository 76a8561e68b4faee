package gate

import (
	"cmp"
	"slices"
	"time"
)

// plan is the gate's decision for one pool at one moment.
type plan struct {
	// admit lists the nodes to admit now, in the order they asked.
	admit []string
	// waiting lists the nodes that asked and were not admitted, in order.
	waiting []string
	// unavailable is the number of unavailable nodes before admitting.
	unavailable int
	// maxUnavailable is the pool's resolved budget.
	maxUnavailable int
	// outsideWindow counts waiting nodes held back by closed windows.
	outsideWindow int
	// nextOpening is the earliest moment a node held back by windows may
	// be admitted; zero when none of them knows.
	nextOpening time.Time
	// held counts waiting nodes that would have been admitted but for held.
	held int
}

// planAdmissions picks which waiting nodes to admit: in the order they asked,
// while the budget lasts. A node that is already unavailable (cordoned by a
// person, not Ready) costs nothing to admit, since it counts against the
// budget already; without that rule a person who cordons a node before asking
// for its reboot would wait forever in a pool of maxUnavailable 1.
//
// A node whose windows are all shut (see nodeView.windowOpen: its pool's,
// its requests' policies', unless a request ignores windows) waits; the
// budget holds for the others all the same. With held (a blocking query), no
// node is admitted: the plan then counts those that would have been.
func planAdmissions(views []nodeView, maxUnavailable int, paused, held bool) plan {
	p := plan{maxUnavailable: maxUnavailable}
	var waiting []nodeView
	for _, v := range views {
		if v.unavailable() {
			p.unavailable++
		}
		if v.waiting() {
			waiting = append(waiting, v)
		}
	}
	slices.SortFunc(waiting, func(a, b nodeView) int {
		if c := a.requestTime().Compare(b.requestTime()); c != 0 {
			return c
		}
		return cmp.Compare(a.Node.Name, b.Node.Name)
	})
	free := maxUnavailable - p.unavailable
	blocked := paused || maxUnavailable == 0
	for _, v := range waiting {
		cost := 1
		if v.unavailable() {
			cost = 0
		}
		if !v.windowOpen && !blocked {
			p.waiting = append(p.waiting, v.Node.Name)
			p.outsideWindow++
			if !v.nextOpening.IsZero() && (p.nextOpening.IsZero() || v.nextOpening.Before(p.nextOpening)) {
				p.nextOpening = v.nextOpening
			}
			continue
		}
		if blocked || cost > free {
			p.waiting = append(p.waiting, v.Node.Name)
			continue
		}
		if held {
			p.waiting = append(p.waiting, v.Node.Name)
			p.held++
			free -= cost
			continue
		}
		free -= cost
		p.admit = append(p.admit, v.Node.Name)
	}
	return p
}
