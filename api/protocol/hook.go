package protocol

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Hooks: the work around a reboot (operator/gate/README.md, "Hooks around
// the reboot") that another controller opens with an acknowledgement or
// that a Job kmaint runs does. What binds each to one node, one admission
// and one point of the path is a token: an acknowledgement or a Job made
// for an earlier boot, request or point never opens a later one
// (invariant 11).

// HookPoint is where on the path a hook runs.
type HookPoint string

// The points, in the order of the path.
const (
	// BeforeDrain: admitted and cordoned, nothing evicted yet.
	BeforeDrain HookPoint = "beforeDrain"
	// BeforeReboot: drained, before the approval.
	BeforeReboot HookPoint = "beforeReboot"
	// AfterReboot: back and Ready in the new boot, still cordoned, before
	// the reboot is completed or the node settles.
	AfterReboot HookPoint = "afterReboot"
)

// Before reports whether p comes before q on the path.
func (p HookPoint) Before(q HookPoint) bool { return p.order() < q.order() }

func (p HookPoint) order() int {
	switch p {
	case BeforeDrain:
		return 1
	case BeforeReboot:
		return 2
	case AfterReboot:
		return 3
	}
	return 4
}

// Hook (operator) is where the node stands in the hooks of one point of
// its admission, a HookRecord. The gate writes it before it waits for a
// hook or starts one, so that an operator restarted at any moment finds
// the same wait, the same deadlines and the same Jobs (invariant 5).
const Hook = Prefix + "hook"

// HookRecord is the value of Hook.
type HookRecord struct {
	// Pool names the pool that admitted the node, whose hooks these are
	// (Admission.Pool); empty in records written before records named it.
	// It comes first: admission reads it from the start of the record to
	// scope who may acknowledge the hooks
	// (config/admission/hook-acknowledgements-policy.yaml).
	Pool string `json:"pool,omitempty"`
	// Point is where on the path the node waits.
	Point HookPoint `json:"point"`
	// BootID is the boot the point is for: the admitted boot before the
	// reboot, the new one after it.
	BootID string `json:"bootID"`
	// Token binds acknowledgements and Jobs to this point (HookToken).
	Token string `json:"token"`
	// Since is when the node reached the point.
	Since time.Time `json:"since"`
	// Hooks are the pool's hooks at the point, in its order.
	Hooks []HookProgress `json:"hooks"`
	// Earlier are the points of the same admission the node passed before
	// this one, in path order: the record of a point replaces the last
	// one's, and the NodeMaintenance keeps their stretches (its
	// status.hookTimes) even when its controller saw only the later point.
	Earlier []HookStretch `json:"earlier,omitempty"`
}

// HookStretch is the time a node spent at a point's hooks.
type HookStretch struct {
	Point HookPoint `json:"point"`
	// BootID is the boot the point was for.
	BootID string `json:"bootID"`
	// Hooks names the hooks of the point.
	Hooks []string `json:"hooks"`
	// Since is when the node reached the point; Passed when its last hook
	// passed, zero while one has not.
	Since  time.Time `json:"since"`
	Passed time.Time `json:"passed,omitzero"`
}

// Stretch is the time the node has spent at the record's point so far.
func (r HookRecord) Stretch() HookStretch {
	s := HookStretch{Point: r.Point, BootID: r.BootID, Since: r.Since}
	passed := len(r.Hooks) > 0
	for _, h := range r.Hooks {
		s.Hooks = append(s.Hooks, h.Name)
		if h.Passed.IsZero() {
			passed = false
		} else if h.Passed.After(s.Passed) {
			s.Passed = h.Passed
		}
	}
	if !passed {
		s.Passed = time.Time{}
	}
	return s
}

// Names reports whether the record names the hook, at its point or at an
// earlier one of its admission: the gate reads the acknowledgements of
// these hooks only (it writes the record before it waits for one), and
// removes them when the admission ends.
func (r HookRecord) Names(hook string) bool {
	for _, h := range r.Hooks {
		if h.Name == hook {
			return true
		}
	}
	for _, s := range r.Earlier {
		if slices.Contains(s.Hooks, hook) {
			return true
		}
	}
	return false
}

// Stretches are the stretches of the record's admission: the earlier
// points' and this one's.
func (r HookRecord) Stretches() []HookStretch {
	return append(append([]HookStretch(nil), r.Earlier...), r.Stretch())
}

// HookProgress is where one hook stands.
type HookProgress struct {
	// Name is the hook's name in its pool.
	Name string `json:"name"`
	// Attempt counts the hook's runs at this point, the first one 1.
	Attempt int32 `json:"attempt,omitempty"`
	// Since is when this attempt began.
	Since time.Time `json:"since"`
	// Deadline is when the hook fails unless it passed.
	Deadline time.Time `json:"deadline"`
	// JobStarted is when the operator made (or found) this attempt's Job;
	// zero before, and for an acknowledgement. A Job gone after it was made
	// is never made again: that would run it twice.
	JobStarted time.Time `json:"jobStarted,omitzero"`
	// JobUID is the UID of the Job the operator made (or found) for this
	// attempt: a Job of the same name with another UID is not it.
	JobUID string `json:"jobUID,omitempty"`
	// Passed is when the hook passed; zero while it has not.
	Passed time.Time `json:"passed,omitzero"`
	// Failure says why the hook failed; nil while it has not.
	Failure *HookFailure `json:"failure,omitempty"`
}

// HookFailure is why a hook failed.
type HookFailure struct {
	// Reason is a CamelCase reason, e.g. HookTimeout or HookJobFailed.
	Reason string `json:"reason"`
	// Message says what happened, for a person.
	Message string `json:"message"`
	// Time is when the hook was found failed; kmaint.io/resume-halt
	// compares with it.
	Time time.Time `json:"time"`
	// OnFailure is what the failure does, the hook's policy when it
	// failed for good: Halt or Release.
	OnFailure string `json:"onFailure"`
}

// Halts reports whether the failure halts the node's pool.
func (f *HookFailure) Halts() bool { return f != nil && f.OnFailure != "Release" }

// Passed reports whether every hook of the point passed.
func (r HookRecord) Passed() bool {
	for _, h := range r.Hooks {
		if h.Passed.IsZero() {
			return false
		}
	}
	return true
}

// Failed returns the first hook that failed; nil when none did.
func (r HookRecord) Failed() *HookProgress {
	for i := range r.Hooks {
		if r.Hooks[i].Failure != nil {
			return &r.Hooks[i]
		}
	}
	return nil
}

// Waiting names the hooks that neither passed nor failed.
func (r HookRecord) Waiting() []string {
	var out []string
	for _, h := range r.Hooks {
		if h.Passed.IsZero() && h.Failure == nil {
			out = append(out, h.Name)
		}
	}
	return out
}

// Describe says where the node stands at the point, for a person: the
// hook that failed, or the hooks it waits for.
func (r HookRecord) Describe() string {
	if f := r.Failed(); f != nil {
		return fmt.Sprintf("hook %s (%s) failed at attempt %d: %s: %s", f.Name, r.Point, f.Attempt, f.Failure.Reason, f.Failure.Message)
	}
	if w := r.Waiting(); len(w) > 0 {
		return fmt.Sprintf("waiting for hook %s (%s) since %s", strings.Join(w, ", "), r.Point, r.Since.UTC().Format(time.RFC3339))
	}
	return fmt.Sprintf("hooks %s passed", r.Point)
}

// AckPrefix starts the annotation by which another controller opens a
// hook: AckPrefix + the hook's name, valued with the token of the point
// it opens. It is not kmaint.io/: the hook's owner writes it, not the
// operator.
const AckPrefix = "hooks.kmaint.io/"

// HookToken names one point of one admission of one node: the node, the
// pool that admitted it, the boot the admission is for (the new boot for
// AfterReboot), when the admission was made, and the point. Any change of
// them gives another.
func HookToken(node, pool, bootID string, admitted time.Time, point HookPoint) string {
	return hookToken(node, bootID, admitted.UTC().Format(time.RFC3339Nano), string(point), pool)
}

// hookTokenWithoutPool is the token of records written before tokens bound
// the pool (HookTokenAt).
func hookTokenWithoutPool(node, bootID string, admitted time.Time, point HookPoint) string {
	return hookToken(node, bootID, admitted.UTC().Format(time.RFC3339Nano), string(point))
}

func hookToken(parts ...string) string {
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(sum[:12])
}

// HookTokenAt is the token of the node's admission at point, for the boot
// bootID (the admitted boot, or the new one after the reboot); empty for a
// node that is not admitted. A record of this admission and point written
// before records named their pool keeps the token it was written with: the
// acknowledgements written for it still open it and its Jobs keep their
// names, so that an operator upgraded while a node waits at a hook neither
// runs a Job of it twice nor asks again for what was acknowledged.
func (s NodeState) HookTokenAt(point HookPoint, bootID string) string {
	a := s.Admission
	if a == nil || s.Node == nil {
		return ""
	}
	if r := s.Hook; r != nil && r.Pool == "" && r.Point == point && r.BootID == bootID &&
		r.Token == hookTokenWithoutPool(s.Node.Name, bootID, a.Time, point) {
		return r.Token
	}
	return HookToken(s.Node.Name, a.Pool, bootID, a.Time, point)
}

// Acknowledged reports whether the node carries the acknowledgement of
// the named hook for token: one written for another token (an earlier
// boot, request or point) does not count, nor one longer than a token,
// whole or cut by CutForeign.
func Acknowledged(node *corev1.Node, hook, token string) bool {
	v, ok := node.Annotations[AckPrefix+hook]
	return ok && token != "" && v == token
}

// HookJobName names the Job of an attempt of a hook for a token: the same
// for every operator that computes it, so that one restarted at any moment
// finds the Job it made rather than making a second. At most 63
// characters, a valid DNS label (a Job's pods take their name from it).
func HookJobName(hook, token string, attempt int32) string {
	sum := sha256.Sum256([]byte(hook + "\x00" + token + "\x00" + strconv.Itoa(int(attempt))))
	suffix := "-" + hex.EncodeToString(sum[:5])
	name := "kmaint-" + strings.Trim(strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			return r
		case r >= 'A' && r <= 'Z':
			return r - 'A' + 'a'
		}
		return '-'
	}, hook), "-")
	if max := 63 - len(suffix); len(name) > max {
		name = strings.TrimRight(name[:max], "-")
	}
	return name + suffix
}
