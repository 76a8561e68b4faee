package v1alpha1

import (
	"encoding/json"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kjson "sigs.k8s.io/json"
)

// Hooks are the work a pool's maintenance is for, at three points of each
// node's path: another controller's acknowledgement, or a Job kmaint runs
// on the node. A node waits at a point until each of its hooks passed, and
// keeps its slot meanwhile; no hook lets a node past the budget, windows,
// freezes, opt-outs, the cluster's stop or a halt, which decide admission
// as before.
type Hooks struct {
	// BeforeDrain run once the node is admitted and cordoned, before
	// anything is evicted.
	// +kubebuilder:validation:MaxItems=8
	// +listType=map
	// +listMapKey=name
	// +optional
	BeforeDrain []Hook `json:"beforeDrain,omitempty"`

	// BeforeReboot run once the node is drained, before its reboot is
	// approved: with a desiredConfig rollout, the place to stage the new
	// config on the host.
	// +kubebuilder:validation:MaxItems=8
	// +listType=map
	// +listMapKey=name
	// +optional
	BeforeReboot []Hook `json:"beforeReboot,omitempty"`

	// AfterReboot run once the node is back and Ready in its new boot,
	// still cordoned, before its reboot is completed and it settles: the
	// place to check that it runs what it was to run.
	// +kubebuilder:validation:MaxItems=8
	// +listType=map
	// +listMapKey=name
	// +optional
	AfterReboot []Hook `json:"afterReboot,omitempty"`
}

// Hook is one piece of work at a point of the path, of exactly one kind.
// +kubebuilder:validation:XValidation:rule="has(self.acknowledgement) != has(self.job)",message="a hook is exactly one of acknowledgement or job"
type Hook struct {
	// Name names the hook in its pool; an acknowledgement is the Node
	// annotation hooks.kmaint.io/<name>.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// Timeout is how long the hook may take before it fails, from when
	// the node reached its point (or its attempt started): from 10s to
	// 24h, 30m when unset.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('10s') && duration(self) <= duration('24h')",message="timeout must be a Go duration from 10s to 24h"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// OnFailure is what a failure does (a timeout, a Job that failed or
	// could not start): Halt (the default) halts the pool as a failed
	// health check does, the node keeping its slot, cordoned, until
	// kubectl kmaint resume runs the hook again; Release releases the node
	// uncordoned and fails its requests with the hook's reason (after the
	// reboot there is nothing left to fail: the node is completed, with a
	// Warning); Retry runs it again up to retries times, then halts.
	// +kubebuilder:default=Halt
	// +optional
	OnFailure HookFailurePolicy `json:"onFailure,omitempty"`

	// Retries bounds the runs after the first with onFailure Retry: from
	// 1 to 10, 3 when unset.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10
	// +optional
	Retries *int32 `json:"retries,omitempty"`

	// Acknowledgement makes the hook a gate another controller opens: it
	// passes when the node carries the annotation hooks.kmaint.io/<name>
	// valued with the token in the node's kmaint.io/hook annotation. An
	// acknowledgement written for an earlier boot, request or point never
	// opens a later one.
	// +optional
	Acknowledgement *HookAcknowledgement `json:"acknowledgement,omitempty"`

	// Job makes the hook a Job kmaint runs on the node, in the namespace
	// the install names, once per node, request, boot and attempt. It
	// passes when the Job succeeds.
	// +optional
	Job *HookJob `json:"job,omitempty"`
}

// HookAcknowledgement is a hook another controller opens. It has no
// fields yet: who may write the annotation is for the cluster's RBAC and
// admission (config/README.md, "Who can make kmaint reboot a node").
type HookAcknowledgement struct{}

// HookJob is a hook kmaint runs as a Job on the node.
//
// Its template is a whole core/v1 PodTemplateSpec in Go (Template), and in
// the CRD's schema nearly nothing (TemplateSchema): the pod spec's schema
// would add hundreds of kilobytes to the CRD at each point, and the API
// server checks the whole template when the Job is made. A validation rule
// sees only what the schema declares, so the schema declares the fields a
// rule refuses, and keeps the rest as written. MarshalJSON and
// UnmarshalJSON read and write the field template as Template.
type HookJob struct {
	// Template is the pod the Job runs, the field template; its
	// documentation is TemplateSchema's.
	Template corev1.PodTemplateSpec `json:"-"`

	// TemplateSchema gives template its schema; Go reads and writes
	// template through Template and never sets it. (The comment below,
	// apart from this one, is the field's description in the CRD.)

	// Template is the pod the Job runs. kmaint pins it to the node,
	// tolerates every taint (the cordon and the pool's marks among them),
	// never restarts it, runs it under the service account and priority
	// class the install names, and adds the environment KMAINT_NODE,
	// KMAINT_BOOT_ID, KMAINT_POOL, KMAINT_HOOK, KMAINT_POINT,
	// KMAINT_TOKEN, KMAINT_ATTEMPT, KMAINT_REQUEST_SOURCES,
	// KMAINT_REQUEST_REASONS, KMAINT_DESIRED_CONFIG and
	// KMAINT_CURRENT_CONFIG to each container. It may not name a service
	// account. The API server checks it when the Job is made: a template it
	// refuses fails the hook.
	TemplateSchema HookPodTemplateSchema `json:"template"`
}

// HookPodTemplateSchema is the schema of a hook's pod template: only its
// spec's service account fields, which a rule refuses; the rest is kept as
// written.
// +kubebuilder:validation:Type=object
// +kubebuilder:pruning:PreserveUnknownFields
type HookPodTemplateSchema struct {
	// Spec is the pod's spec.
	// +optional
	Spec *HookPodSpecSchema `json:"spec,omitempty"`
}

// HookPodSpecSchema is the schema of a hook's pod spec: the fields that
// name a service account, which a hook's pod may not choose. It runs under
// the one the install names (the operator's --hooks-service-account), which
// the cluster's administrators grant what hooks need: a pool's editor
// choosing another would run privileged pods with that account's token,
// whatever it may do.
//
// The rules are on the fields, not on the spec: the API server ratchets a
// rule (lets a pool stored before it be changed elsewhere) only over a
// value it can compare with the old one, and it compares no object that
// holds fields the schema does not declare, as a pod spec does.
// +kubebuilder:validation:Type=object
// +kubebuilder:pruning:PreserveUnknownFields
type HookPodSpecSchema struct {
	// ServiceAccountName may not be set.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self == ''",message="a hook's pod runs under the service account the install names (kmaint-operator --hooks-service-account); remove serviceAccountName from the template"
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// DeprecatedServiceAccount, serviceAccount, may not be set either: the
	// API server takes it for serviceAccountName when that is empty.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self == ''",message="a hook's pod runs under the service account the install names (kmaint-operator --hooks-service-account); remove serviceAccount, the deprecated serviceAccountName, from the template"
	// +optional
	DeprecatedServiceAccount string `json:"serviceAccount,omitempty"`
}

// hookJobWire is HookJob as it is stored.
type hookJobWire struct {
	Template corev1.PodTemplateSpec `json:"template"`
}

// UnmarshalJSON reads the field template into Template.
func (j *HookJob) UnmarshalJSON(data []byte) error {
	var w hookJobWire
	if err := kjson.UnmarshalCaseSensitivePreserveInts(data, &w); err != nil {
		return err
	}
	*j = HookJob{Template: w.Template}
	return nil
}

// MarshalJSON writes Template as the field template.
func (j HookJob) MarshalJSON() ([]byte, error) {
	return json.Marshal(hookJobWire{Template: j.Template})
}

// HookFailurePolicy is what a hook's failure does.
// +kubebuilder:validation:Enum=Halt;Release;Retry
type HookFailurePolicy string

// The failure policies.
const (
	HookHalt    HookFailurePolicy = "Halt"
	HookRelease HookFailurePolicy = "Release"
	HookRetry   HookFailurePolicy = "Retry"
)

// DefaultHookTimeout is a hook's timeout when it names none.
const DefaultHookTimeout = 30 * time.Minute

// DefaultHookRetries is a Retry hook's retries when it names none.
const DefaultHookRetries = 3

// TimeoutOrDefault returns the hook's timeout.
func (h *Hook) TimeoutOrDefault() time.Duration {
	if h.Timeout == nil || h.Timeout.Duration <= 0 {
		return DefaultHookTimeout
	}
	return h.Timeout.Duration
}

// FailurePolicy returns the hook's onFailure, Halt when unset.
func (h *Hook) FailurePolicy() HookFailurePolicy {
	if h.OnFailure == "" {
		return HookHalt
	}
	return h.OnFailure
}

// MaxAttempts is how many times the hook runs at most before its failure
// stands: 1 + retries with Retry, else 1.
func (h *Hook) MaxAttempts() int32 {
	if h.FailurePolicy() != HookRetry {
		return 1
	}
	if h.Retries == nil || *h.Retries < 1 {
		return 1 + DefaultHookRetries
	}
	return 1 + *h.Retries
}

// At returns the pool's hooks at a point: "beforeDrain", "beforeReboot"
// or "afterReboot"; nil for none.
func (h *Hooks) At(point string) []Hook {
	if h == nil {
		return nil
	}
	switch point {
	case "beforeDrain":
		return h.BeforeDrain
	case "beforeReboot":
		return h.BeforeReboot
	case "afterReboot":
		return h.AfterReboot
	}
	return nil
}
