package policies

import (
	"fmt"
	"time"

	"github.com/robfig/cron/v3"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

// Schedule is a schedule trigger ready to be evaluated.
type Schedule struct {
	schedule cron.Schedule
}

// ParseSchedule checks a schedule trigger's cron expression and time zone.
func ParseSchedule(t *v1alpha1.ScheduleTrigger) (Schedule, error) {
	s, err := parseCron(t.Cron, t.TimeZone)
	if err != nil {
		return Schedule{}, err
	}
	return Schedule{schedule: s}, nil
}

// maxMissed bounds the walk over fire times missed since the last one acted
// on (a minutely schedule and a year's outage would otherwise be half a
// million steps); past it, the walk skips ahead to a day before now.
const maxMissed = 10000

// Due says what the schedule asks at now, given the last fire acted on:
// fire is the latest fire time in (last, now], zero if there is none, and
// next is the first fire time after now.
//
// Fires missed while the operator was down collapse into one: after an
// outage spanning several fire times, the schedule fires once, for the
// latest. A reboot of every node is idempotent in effect, so firing once
// catches up fully, and firing for each missed time would only queue
// reboots of nodes that had just rebooted.
func (s Schedule) Due(last, now time.Time) (fire, next time.Time) {
	t := last
	for i := 0; ; i++ {
		if i == maxMissed {
			// Once only: whatever lies before a day ago is long missed.
			if dayAgo := now.Add(-24 * time.Hour); dayAgo.After(t) {
				t = dayAgo
			}
		}
		n := s.schedule.Next(t)
		if n.IsZero() || n.After(now) {
			return fire, n
		}
		fire, t = n, n
	}
}

// ResolveCap turns maxConcurrentRequests into a count for a policy selecting
// n nodes: a percentage rounds down, but to at least 1, so a small fleet
// still makes progress. Unset means 1.
func ResolveCap(v *intstr.IntOrString, n int) (int, error) {
	if v == nil {
		return 1, nil
	}
	c, err := intstr.GetScaledValueFromIntOrPercent(v, n, false)
	if err != nil {
		return 0, fmt.Errorf("maxConcurrentRequests %q: %w", v.String(), err)
	}
	return max(c, 1), nil
}
