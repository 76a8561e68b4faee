package protocol

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

// Opt-outs: what keeps kmaint from admitting a node, set by people on the
// Node or on its pods, and the operator's note of what it found on the pods.
const (
	// DoNotDisrupt (a person, on a Node or a Pod): kmaint admits no reboot
	// of the node while it is there. Its value is the reason, shown where
	// the waiting request is; any value counts, "false" and "" too: to
	// lift the opt-out, remove the annotation.
	DoNotDisrupt = Prefix + "do-not-disrupt"
	// KarpenterDoNotDisrupt (a person, on a Node or a Pod) is Karpenter's
	// annotation, honoured as Karpenter reads it: "true" blocks; on a pod,
	// a duration (e.g. "30m") blocks until that long after the pod started;
	// any other value does not block.
	KarpenterDoNotDisrupt = "karpenter.sh/do-not-disrupt"
	// AdmissionHeld (operator): the node's turn came and pods on it held
	// its admission, a Held. The gate writes it, so that the node's
	// requests, the plugin and a person reading the Node see why, and
	// removes it once the node is admitted or no longer waits. It is a
	// report: the gate decides from the pods themselves every time.
	AdmissionHeld = Prefix + "admission-held"
)

// maxQuoted bounds how much of a person's annotation value a message
// quotes: a value may be 256 KiB, and it is repeated in conditions.
const maxQuoted = 256

// MaxForeignValue is as much as kmaint reads of the value of a Node
// annotation that others write: an opt-out (DoNotDisrupt,
// KarpenterDoNotDisrupt) or a hook's acknowledgement. A message quotes at
// most maxQuoted bytes of an opt-out and says when there is more;
// Karpenter's holds the node only as "true"; an acknowledgement opens a
// hook only as its token (HookToken, 24 characters).
const MaxForeignValue = maxQuoted + 1

// CutForeign cuts the value of such an annotation to MaxForeignValue
// bytes, for the operator's cache: anyone who may patch Nodes may write
// 256 KiB there. Every reader makes of the cut value what it makes of the
// whole one: a do-not-disrupt of any size holds the node and is quoted
// the same (quoteValue reads no more), and an acknowledgement longer than
// a token opens nothing, cut or not. The cut may split a character past
// the bytes a message quotes. It is a copy: a slice of the value would
// keep the whole of it in memory.
func CutForeign(v string) string {
	if len(v) <= MaxForeignValue {
		return v
	}
	return strings.Clone(v[:MaxForeignValue])
}

// maxPodsNamed bounds how many pods a message names.
const maxPodsNamed = 3

// OptOut is why a node is not admitted although it asks to be.
type OptOut struct {
	// Reason is v1alpha1.DoNotDisruptReason or v1alpha1.BlockingPodReason.
	Reason string
	// Message says what holds the node and how to lift it, for a person.
	Message string
}

// Held is the value of AdmissionHeld.
type Held struct {
	// Reason is v1alpha1.DoNotDisruptReason or v1alpha1.BlockingPodReason.
	Reason string `json:"reason"`
	// Message names the pods that hold the node, and why.
	Message string `json:"message"`
	// Since is when the gate first found the node held.
	Since time.Time `json:"since"`
	// Overdue is true once the pods have held the node past its pool's
	// podOptOuts.maxHold, and the pool keeps it held.
	Overdue bool `json:"overdue,omitempty"`
}

// NodeOptOut returns the opt-out a person set on the Node itself; nil when
// there is none.
func NodeOptOut(node *corev1.Node) *OptOut {
	if v, ok := node.Annotations[DoNotDisrupt]; ok {
		return &OptOut{Reason: v1alpha1.DoNotDisruptReason, Message: fmt.Sprintf(
			"node %s is annotated %s: %s; kmaint admits no reboot of it until the annotation is removed",
			node.Name, DoNotDisrupt, quoteValue(v))}
	}
	if node.Annotations[KarpenterDoNotDisrupt] == "true" {
		return &OptOut{Reason: v1alpha1.DoNotDisruptReason, Message: fmt.Sprintf(
			"node %s is annotated %s=true; kmaint admits no reboot of it until the annotation is removed",
			node.Name, KarpenterDoNotDisrupt)}
	}
	return nil
}

// PodBlocks says why a pod holds its node's admission; empty when it does
// not. selector is the pool's blockingPodSelector; nil matches nothing.
// Pods that have finished (Succeeded, Failed) hold nothing: a reboot does
// not disrupt them.
func PodBlocks(pod *corev1.Pod, selector labels.Selector, now time.Time) (reason, why string) {
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return "", ""
	}
	name := pod.Namespace + "/" + pod.Name
	if v, ok := pod.Annotations[DoNotDisrupt]; ok {
		return v1alpha1.DoNotDisruptReason, fmt.Sprintf("pod %s is annotated %s: %s", name, DoNotDisrupt, quoteValue(v))
	}
	if v, ok := pod.Annotations[KarpenterDoNotDisrupt]; ok {
		if v == "true" {
			return v1alpha1.DoNotDisruptReason, fmt.Sprintf("pod %s is annotated %s=true", name, KarpenterDoNotDisrupt)
		}
		if d, err := time.ParseDuration(v); err == nil && d > 0 {
			start := pod.Status.StartTime
			if start == nil || now.Before(start.Add(d)) {
				return v1alpha1.DoNotDisruptReason, fmt.Sprintf("pod %s is annotated %s=%s, for %s after it started", name, KarpenterDoNotDisrupt, v, d)
			}
		}
	}
	if selector != nil && !selector.Empty() && selector.Matches(labels.Set(pod.Labels)) {
		return v1alpha1.BlockingPodReason, fmt.Sprintf("pod %s matches the pool's blockingPodSelector (%s)", name, selector)
	}
	return "", ""
}

// PodsOptOut says what the pods on a node hold its admission for; nil when
// none does. Only the pods of the namespaces bounds counts hold (nil
// bounds: every namespace's). Do-not-disrupt annotations come first: they
// are a person's word about one pod.
func PodsOptOut(node string, pods []corev1.Pod, selector labels.Selector, bounds *v1alpha1.PodOptOuts, now time.Time) *OptOut {
	var reason string
	var whys []string
	for i := range pods {
		if !bounds.Counts(pods[i].Namespace) {
			continue
		}
		r, why := PodBlocks(&pods[i], selector, now)
		if r == "" {
			continue
		}
		if reason == "" || r == v1alpha1.DoNotDisruptReason && reason != r {
			reason = r
		}
		whys = append(whys, why)
	}
	if len(whys) == 0 {
		return nil
	}
	msg := strings.Join(whys[:min(len(whys), maxPodsNamed)], "; ")
	if len(whys) > maxPodsNamed {
		msg += fmt.Sprintf("; and %d more pods", len(whys)-maxPodsNamed)
	}
	return &OptOut{Reason: reason, Message: fmt.Sprintf("node %s is not admitted while its pods say so: %s", node, msg)}
}

// OptOut returns what keeps the node from being admitted although it asks
// to be: the Node's own annotation, else what the gate found on its pods
// when its turn last came; nil when nothing does, or the node asks for
// nothing.
func (s NodeState) OptOut() *OptOut {
	if !s.WantsAdmission() {
		return nil
	}
	if o := NodeOptOut(s.Node); o != nil {
		return o
	}
	if s.Held != nil {
		return &OptOut{Reason: s.Held.Reason, Message: s.Held.Message}
	}
	return nil
}

// HeldAnnotated reports whether the node carries the gate's note of why it
// holds the node (AdmissionHeld), whether it can be read or not: the gate
// removes it from every node nothing holds, and asks at every reconcile.
func (s NodeState) HeldAnnotated() bool { return s.heldAnnotated }

// readHeld decodes AdmissionHeld. It is the operator's report, not a
// decision: one that cannot be read is taken for absent (the gate writes
// it again from the pods), never for a reason to hold the node's other
// annotations unreadable.
func readHeld(node *corev1.Node) *Held {
	raw, ok := node.Annotations[AdmissionHeld]
	if !ok || len(raw) > MaxAnnotationLength {
		return nil
	}
	var h Held
	if err := json.Unmarshal([]byte(raw), &h); err != nil || h.Message == "" {
		return nil
	}
	h.Message = v1alpha1.FitMessage(h.Message)
	return &h
}

// quoteValue shows an annotation value a person wrote: quoted, escaped and
// cut short, and says so when it is empty. It reads no more than
// CutForeign keeps, so that the operator's cached Node, which keeps no
// more, is quoted as the Node itself is.
func quoteValue(v string) string {
	v = CutForeign(v)
	if strings.TrimSpace(v) == "" {
		return "(no reason given)"
	}
	if len(v) > maxQuoted {
		cut := maxQuoted
		for cut > 0 && v[cut]&0xC0 == 0x80 {
			cut--
		}
		return fmt.Sprintf("%q… (over %d bytes)", v[:cut], maxQuoted)
	}
	return fmt.Sprintf("%q", v)
}
