package protocol

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

// Prefix is the prefix of every kmaint annotation.
const Prefix = "kmaint.io/"

// OperatorAnnotations are the annotations the operator writes on a Node,
// and no one else: admission refuses them to everyone but the operator
// (config/admission/operator-annotations-policy.yaml, which a test holds
// to this list).
func OperatorAnnotations() []string {
	return []string{Admitted, RebootApproved, Cordoned, DrainFailed, DrainRetry, DrainForced, NodeMarks,
		RebootUnconfirmed, NodeNotBack, AdmissionHeld, APIRequests, DesiredConfig, Settling, Hook, Silenced}
}

// DaemonAnnotations are the annotations a node's daemon writes on its Node.
func DaemonAnnotations() []string {
	return []string{RebootRequested, CurrentConfig, State}
}

// NodeAnnotations are every annotation of the node protocol under Prefix:
// the operator's, the daemon's, and the node's opt-out (DoNotDisrupt),
// which people write. Admission refuses a Node any other key under Prefix
// (config/admission/operator-annotations-policy.yaml, which a test holds
// to this list), and the operator's cache keeps no other: kmaint reads
// none, and each would cost the operator memory on every Node.
func NodeAnnotations() []string {
	return slices.Concat(OperatorAnnotations(), DaemonAnnotations(), []string{DoNotDisrupt})
}

// The annotations of the node protocol, with their one writer.
const (
	// RebootRequested (daemon): this boot's outstanding requests, a Requested.
	RebootRequested = Prefix + "reboot-requested"
	// RebootApproved (operator): the boot ID whose reboot is approved; written
	// only once the node is cordoned and drained.
	RebootApproved = Prefix + "reboot-approved"
	// DesiredConfig (operator): the config identity the node's pool wants.
	DesiredConfig = Prefix + "desired-config"
	// CurrentConfig (daemon): the config identity the node runs.
	CurrentConfig = Prefix + "current-config"
	// State (daemon): what the daemon is doing and why, a DaemonState.
	State = Prefix + "state"
	// Cordoned (operator): kmaint cordoned this node, so kmaint uncordons it.
	// A node cordoned by anyone else carries no marker and stays cordoned.
	Cordoned = Prefix + "cordoned"
	// Admitted (operator): the gate admitted the node for a boot's requests
	// and is draining it, an Admission. It holds the node's slot in the pool's
	// budget until the reboot completes or the drain is abandoned.
	Admitted = Prefix + "admitted"
	// DrainFailed (operator): the drain for these requests was abandoned, a
	// DrainFailure. Those requests are not admitted again; a new request is.
	DrainFailed = Prefix + "drain-failed"
)

// Request is one outstanding reboot request, as the daemon read it back from
// the node's journal.
type Request struct {
	// ID identifies the request: a NodeMaintenance's UID for requests that
	// start in the API, a fresh id for host and config requests.
	ID string `json:"id"`
	// Source is where the request came from.
	Source v1alpha1.Source `json:"source"`
	// Reason is why, as given by whoever asked.
	Reason string `json:"reason"`
	// Time is when the request was journaled.
	Time time.Time `json:"time"`
	// Config is the config identity a config request asks for.
	Config string `json:"config,omitempty"`
}

// Requested is the value of RebootRequested.
type Requested struct {
	// BootID is the boot the requests were made in.
	BootID string `json:"bootID"`
	// Requests are the boot's outstanding requests, oldest first.
	Requests []Request `json:"requests"`
	// Cancelled are the ids of this boot's requests withdrawn before their
	// reboot was approved; their reboot will not happen.
	Cancelled []string `json:"cancelled,omitempty"`
}

// Earliest returns when the oldest request was made.
func (r Requested) Earliest() time.Time {
	var t time.Time
	for _, req := range r.Requests {
		if t.IsZero() || req.Time.Before(t) {
			t = req.Time
		}
	}
	return t
}

// IDs returns the requests' ids, sorted.
func (r Requested) IDs() []string {
	ids := make([]string, 0, len(r.Requests))
	for _, req := range r.Requests {
		ids = append(ids, req.ID)
	}
	slices.Sort(ids)
	return ids
}

// MaxHookReason bounds each reason an Admission keeps for the hooks.
const MaxHookReason = 256

// Describe returns the sources and reasons of the requests with ids, in
// their order, each reason cut to MaxHookReason bytes.
func (r Requested) Describe(ids []string) (sources []v1alpha1.Source, reasons []string) {
	for _, id := range ids {
		for _, req := range r.Requests {
			if req.ID == id {
				reason := req.Reason
				if len(reason) > MaxHookReason {
					reason = strings.ToValidUTF8(reason[:MaxHookReason], "")
				}
				sources, reasons = append(sources, req.Source), append(reasons, reason)
			}
		}
	}
	return sources, reasons
}

// Has reports whether the request with this id is outstanding.
func (r Requested) Has(id string) bool {
	return slices.ContainsFunc(r.Requests, func(req Request) bool { return req.ID == id })
}

// Admission is the value of Admitted.
type Admission struct {
	// BootID is the boot whose requests were admitted.
	BootID string `json:"bootID"`
	// Requests are the ids of the requests admitted.
	Requests []string `json:"requests"`
	// Time is when the node was admitted and its drain began.
	Time time.Time `json:"time"`
	// Pool names the pool that admitted the node, and PoolUID that pool's
	// object (empty for the built-in default pool without one). Until its
	// maintenance ends the node belongs to that pool, whatever its labels
	// say meanwhile (InFlightPool): its budget, drain, marks and hooks are
	// that pool's. An admission that names no pool (written before the
	// field existed) leaves the node to the pool its labels put it in; one
	// whose pool is gone, or was made again under its name (another UID),
	// too: a pool made anew is not the one that admitted it.
	Pool    string    `json:"pool,omitempty"`
	PoolUID types.UID `json:"poolUID,omitempty"`
	// Sources and Reasons are those of Requests, in their order, kept for
	// the pool's hooks (their Jobs are told them, after the reboot too,
	// when the requests are gone from the node); empty when the pool had
	// no hooks. A reason is cut to MaxHookReason bytes.
	Sources []v1alpha1.Source `json:"sources,omitempty"`
	Reasons []string          `json:"reasons,omitempty"`
	// ApprovedAt is when the gate approved the reboot: the node's return
	// (a new boot ID, Ready) is timed from it. Zero before the approval, and
	// in approvals written before the field existed, whose wait the gate
	// then times from when it first sees them.
	ApprovedAt time.Time `json:"approvedAt,omitzero"`
	// View is the newest version of the Nodes the gate's view held when it
	// counted the pool's unavailable nodes for this admission, or for the
	// approval once there is one: a node that went down (NotReady, or
	// cordoned by another) at a later version was not counted, as no
	// gate could have. Empty when it did not know.
	View string `json:"view,omitempty"`
}

// DrainFailure is the value of DrainFailed.
type DrainFailure struct {
	// BootID is the boot whose requests' drain failed.
	BootID string `json:"bootID"`
	// Requests are the ids of the requests whose drain failed.
	Requests []string `json:"requests"`
	// Time is when the drain was abandoned.
	Time time.Time `json:"time"`
	// Reason is a CamelCase reason, e.g. DrainTimeout.
	Reason string `json:"reason"`
	// Message says what blocked the drain.
	Message string `json:"message"`
}

// Covers reports whether the failure covers every request of r, so that
// admitting r again would repeat the failed drain.
func (f DrainFailure) Covers(r Requested) bool {
	if f.BootID != r.BootID {
		return false
	}
	for _, req := range r.Requests {
		if !slices.Contains(f.Requests, req.ID) {
			return false
		}
	}
	return true
}

// DaemonPhase is what the daemon is doing.
type DaemonPhase string

// The daemon's phases.
const (
	DaemonIdle      DaemonPhase = "idle"
	DaemonRequested DaemonPhase = "requested"
	DaemonRebooting DaemonPhase = "rebooting"
	DaemonDegraded  DaemonPhase = "degraded"
)

// DaemonState is the value of State.
type DaemonState struct {
	// Phase is what the daemon is doing.
	Phase DaemonPhase `json:"phase"`
	// BootID is the boot the state was reported in.
	BootID string `json:"bootID,omitempty"`
	// Message says why.
	Message string `json:"message,omitempty"`
	// Since is when the daemon entered the phase.
	Since time.Time `json:"since"`
	// Config is the config identity the reboot that ends BootID applies:
	// the last config requested in that boot and not cancelled. Written
	// before the reboot, it tells the next boot's daemon which config the
	// node runs without the journal of the boot before, which a node with a
	// volatile journal does not keep.
	Config string `json:"config,omitempty"`
	// VolatileJournal is true when the node's journal holds no entry from
	// before BootID although the node booted before (volatile storage, or
	// vacuumed): the node keeps no record of its earlier requests, and
	// kmaint relies on what it keeps on the Node and its NodeMaintenances.
	VolatileJournal bool `json:"volatileJournal,omitempty"`
	// Sentinel is what the host's reboot sentinel says, when the daemon
	// watches one (--sentinel-file or --sentinel-command); nil otherwise,
	// or before its first look.
	Sentinel *SentinelStatus `json:"sentinel,omitempty"`
}

// MaxAnnotationLength is the longest kmaint annotation Decode reads, in
// bytes. The daemon's reboot-requested holds a boot's requests, each at most
// a few hundred bytes; a node that reports many times more is not believed
// (a stolen daemon token could make every reader decode up to the API's
// 256 KiB per node, on every write).
const MaxAnnotationLength = 64 << 10

// Decode reads the annotation key of node as JSON into v. It reports whether
// the annotation is present; a present but malformed or oversized value is an
// error that names the annotation and the node.
func Decode(node *corev1.Node, key string, v any) (bool, error) {
	raw, ok := node.Annotations[key]
	if !ok {
		return false, nil
	}
	if len(raw) > MaxAnnotationLength {
		return true, fmt.Errorf("annotation %s on node %s is %d bytes long; kmaint reads at most %d", key, node.Name, len(raw), MaxAnnotationLength)
	}
	if err := json.Unmarshal([]byte(raw), v); err != nil {
		return true, fmt.Errorf("annotation %s on node %s is malformed: %w", key, node.Name, err)
	}
	return true, nil
}

// Encode renders v as an annotation value.
func Encode(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		// Only the protocol's own types reach here, and they always marshal.
		panic(fmt.Sprintf("encode %T: %v", v, err))
	}
	return string(b)
}

// Ready reports whether the node's Ready condition is True.
func Ready(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// BootID returns the node's current boot ID as its kubelet reports it.
func BootID(node *corev1.Node) string {
	return strings.TrimSpace(node.Status.NodeInfo.BootID)
}
