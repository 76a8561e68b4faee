package protocol

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

// The annotations of what happens at a drain's deadline and around the
// reboot, all written by the operator.
const (
	// DrainRetry (operator): a drain timed out and will be tried again, a
	// DrainRetrying. Kept on the Node, so that a restarted operator counts
	// on from where it was.
	DrainRetry = Prefix + "drain-retry"
	// DrainForced (operator): the last drain forced on this node, a
	// DrainForcing: which pods were deleted bypassing their
	// PodDisruptionBudgets. It stays until another drain is approved, so
	// that the NodeMaintenance controller records it whenever it looks.
	DrainForced = Prefix + "drain-forced"
	// NodeMarks (operator): the labels and taints kmaint added to the node for
	// its reboot, a Marks; kmaint removes exactly these.
	NodeMarks = Prefix + "marks"
)

// DrainRetrying is the value of DrainRetry.
type DrainRetrying struct {
	// BootID is the boot whose requests' drain timed out.
	BootID string `json:"bootID"`
	// Requests are the ids of the requests admitted for it.
	Requests []string `json:"requests"`
	// Attempts is how many drains timed out so far.
	Attempts int `json:"attempts"`
	// MaxAttempts is how many the pool allowed when the last one timed out.
	MaxAttempts int `json:"maxAttempts"`
	// NextAt is when the node may be admitted again.
	NextAt time.Time `json:"nextAt"`
	// Message says what blocked the last drain.
	Message string `json:"message"`
}

// Waiting says, for a person, which attempt comes next and when.
func (r DrainRetrying) Waiting() string {
	return fmt.Sprintf("drain attempt %d of %d did not finish (%s); attempt %d of %d not before %s",
		r.Attempts, r.MaxAttempts, r.Message, r.Attempts+1, r.MaxAttempts, r.NextAt.UTC().Format(time.RFC3339))
}

// DrainForcing is the value of DrainForced.
type DrainForcing struct {
	// BootID is the boot whose requests' drain was forced.
	BootID string `json:"bootID"`
	// Requests are the ids of the requests admitted for it.
	Requests []string `json:"requests"`
	// Time is when the pods were deleted.
	Time time.Time `json:"time"`
	// Pods are the pods deleted, namespace/name: the first
	// MaxForcedPodNames of them, so that the annotation stays far within
	// what Decode reads whatever the node runs.
	Pods []string `json:"pods"`
	// MorePods counts the pods deleted beyond Pods.
	MorePods int `json:"morePods,omitempty"`
	// Timeout is the drain timeout that passed.
	Timeout string `json:"timeout"`
}

// MaxForcedPodNames is how many deleted pods a DrainForcing names; a pod's
// name takes at most 317 bytes, so the names take at most 32 KiB.
const MaxForcedPodNames = 100

// AddPods records more pods deleted, naming the first MaxForcedPodNames and
// counting the others.
func (f *DrainForcing) AddPods(pods []string) {
	for _, p := range pods {
		switch {
		case slices.Contains(f.Pods, p):
		case len(f.Pods) < MaxForcedPodNames:
			f.Pods = append(f.Pods, p)
		default:
			f.MorePods++
		}
	}
}

// Message says, for a person, what was forced.
func (f DrainForcing) Message(node string) string {
	pods := "no pod was left to delete"
	if n := len(f.Pods) + f.MorePods; n > 0 {
		pods = fmt.Sprintf("%d pods deleted bypassing their PodDisruptionBudgets: %s", n, strings.Join(f.Pods, ", "))
		if f.MorePods > 0 {
			pods += fmt.Sprintf(" and %d more", f.MorePods)
		}
	}
	return fmt.Sprintf("drain of node %s did not finish within %s and was forced: %s; the node reboots anyway", node, f.Timeout, pods)
}

// For reports whether the forced drain was that of this request of boot.
func (f DrainForcing) For(boot, request string) bool {
	return f.BootID == boot && slices.Contains(f.Requests, request)
}

// Marks is the value of the NodeMarks annotation: what kmaint added, so that
// it removes that and nothing else, whatever the pool's spec says by then.
type Marks struct {
	// Labels are the labels kmaint set, by key.
	Labels map[string]MarkedLabel `json:"labels,omitempty"`
	// Taints are the taints kmaint added.
	Taints []MarkedTaint `json:"taints,omitempty"`
}

// MarkedLabel is a label kmaint set.
type MarkedLabel struct {
	// Value is the value kmaint set.
	Value string `json:"value"`
	// Previous is the value the node had before, restored on removal; nil
	// when the label was absent.
	Previous *string `json:"previous,omitempty"`
}

// MarkedTaint is a taint kmaint added.
type MarkedTaint struct {
	Key    string `json:"key"`
	Value  string `json:"value,omitempty"`
	Effect string `json:"effect"`
}

// Retrying returns the drain retry of the node's current boot; nil when
// there is none.
func (s NodeState) Retrying() *DrainRetrying {
	if s.DrainRetry == nil || s.DrainRetry.BootID != s.BootID || s.BootID == "" {
		return nil
	}
	return s.DrainRetry
}

// BackingOff reports whether the node waits for its next drain attempt at
// now: a time further ahead than the longest backoff allows (written by
// hand, or by a clock far off) is not believed.
func (s NodeState) BackingOff(now time.Time) bool {
	r := s.Retrying()
	if r == nil || s.Admission != nil || s.Approved != "" {
		return false
	}
	return now.Before(r.NextAt) && !r.NextAt.After(now.Add(v1alpha1.MaxDrainRetryBackoff+v1alpha1.MaxClockSkew))
}
