package protocol

import (
	"crypto/sha256"
	"encoding/hex"
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

// AckPrefix starts the annotation by which another controller opens a
// hook: AckPrefix + the hook's name, valued with the token of the point
// it opens. It is not kmaint.io/: the hook's owner writes it, not the
// operator.
const AckPrefix = "hooks.kmaint.io/"

// HookToken names one point of one admission of one node: the node, the
// boot the admission is for (the new boot for AfterReboot), when the
// admission was made, and the point. Any change of them gives another.
func HookToken(node, bootID string, admitted time.Time, point HookPoint) string {
	sum := sha256.Sum256([]byte(strings.Join([]string{node, bootID, admitted.UTC().Format(time.RFC3339Nano), string(point)}, "\x00")))
	return hex.EncodeToString(sum[:12])
}

// Acknowledged reports whether the node carries the acknowledgement of
// the named hook for token: one written for another token (an earlier
// boot, request or point) does not count.
func Acknowledged(node *corev1.Node, hook, token string) bool {
	v, ok := node.Annotations[AckPrefix+hook]
	return ok && token != "" && v == token
}

// HookJobName names the Job of a hook for a token: the same for every
// operator that computes it, so that one restarted at any moment finds the
// Job it made rather than making a second. At most 63 characters, a valid
// DNS label (a Job's pods take their name from it).
func HookJobName(hook, token string) string {
	sum := sha256.Sum256([]byte(hook + "\x00" + token))
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
