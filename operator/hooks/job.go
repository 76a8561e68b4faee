package hooks

import (
	"math"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
)

// Labels and annotations on a hook's Job. The token label lets a person
// (and the gate's tests) find the Jobs of one point of one node's
// admission; the pool annotation wakes the pool when the Job changes.
const (
	TokenLabel     = "kmaint.io/hook-token"
	HookLabel      = "kmaint.io/hook"
	ManagedByLabel = "app.kubernetes.io/managed-by"
	PoolAnnotation = "kmaint.io/pool"
	NodeAnnotation = "kmaint.io/node"
)

// FinishedJobTTL is how long a finished Job is kept, for its logs: the
// gate has recorded its outcome on the node long before.
const FinishedJobTTL = 24 * time.Hour

// JobContext is what a hook's Job is told of its node.
type JobContext struct {
	Namespace string
	Pool      string
	Node      string
	Point     protocol.HookPoint
	BootID    string
	Token     string
	Attempt   int32
	// Sources and Reasons are the node's requests', in their order.
	Sources, Reasons []string
	// DesiredConfig is the pool's desiredConfig, CurrentConfig what the
	// node's daemon says it runs.
	DesiredConfig, CurrentConfig string
	// Deadline is when the attempt fails; the Job stops itself then.
	Deadline time.Time
	Now      time.Time
	// ServiceAccount is the service account the install names for hook
	// pods; empty runs them under the namespace's default one. The
	// template's is never used.
	ServiceAccount string
	// PriorityClass is the priority class the install names for hook
	// pods; empty leaves the template's.
	PriorityClass string
}

// NewJob builds the Job of one attempt of a Job hook: the pool's template
// pinned to the node, tolerating every taint, never restarted, under the
// install's service account and priority class, with what it is for in
// its environment.
func NewJob(h *v1alpha1.Hook, c JobContext) *batchv1.Job {
	tpl := *h.Job.Template.DeepCopy()
	spec := &tpl.Spec
	spec.RestartPolicy = corev1.RestartPolicyNever
	spec.NodeName = ""
	// The API refuses a template that names a service account; one stored
	// before that rule is overridden all the same. Whoever may edit a pool
	// would otherwise run privileged pods with any account's token in the
	// hooks namespace.
	spec.ServiceAccountName, spec.DeprecatedServiceAccount = c.ServiceAccount, ""
	if c.PriorityClass != "" {
		// The class gives the priority and the preemption policy; a pod
		// that states others than the class's is refused.
		spec.PriorityClassName, spec.Priority, spec.PreemptionPolicy = c.PriorityClass, nil, nil
	}
	if spec.Affinity == nil {
		spec.Affinity = &corev1.Affinity{}
	}
	// Pinned as a DaemonSet's pods are: by the node's name, through the
	// scheduler, so that the pod's admission and preemption stay the
	// cluster's.
	spec.Affinity.NodeAffinity = &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{
			Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{c.Node},
		}}}},
	}}
	spec.Tolerations = append(spec.Tolerations, corev1.Toleration{Operator: corev1.TolerationOpExists})
	env := c.env(h.Name)
	for i := range spec.InitContainers {
		spec.InitContainers[i].Env = append(spec.InitContainers[i].Env, env...)
	}
	for i := range spec.Containers {
		spec.Containers[i].Env = append(spec.Containers[i].Env, env...)
	}
	labels := map[string]string{TokenLabel: c.Token, HookLabel: h.Name, ManagedByLabel: "kmaint"}
	if tpl.Labels == nil {
		tpl.Labels = map[string]string{}
	}
	for k, v := range labels {
		tpl.Labels[k] = v
	}
	active := int64(math.Ceil(c.Deadline.Sub(c.Now).Seconds()))
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name:        protocol.HookJobName(h.Name, c.Token, c.Attempt),
			Namespace:   c.Namespace,
			Labels:      labels,
			Annotations: map[string]string{PoolAnnotation: c.Pool, NodeAnnotation: c.Node},
		},
		Spec: batchv1.JobSpec{
			BackoffLimit:            ptr.To[int32](0),
			ActiveDeadlineSeconds:   ptr.To(max(active, 1)),
			TTLSecondsAfterFinished: ptr.To(int32(FinishedJobTTL.Seconds())),
			Template:                tpl,
		},
	}
}

func (c JobContext) env(hook string) []corev1.EnvVar {
	vars := [][2]string{
		{"KMAINT_NODE", c.Node}, {"KMAINT_BOOT_ID", c.BootID}, {"KMAINT_POOL", c.Pool},
		{"KMAINT_HOOK", hook}, {"KMAINT_POINT", string(c.Point)}, {"KMAINT_TOKEN", c.Token},
		{"KMAINT_ATTEMPT", strconv.Itoa(int(c.Attempt))},
		{"KMAINT_REQUEST_SOURCES", strings.Join(c.Sources, ",")},
		{"KMAINT_REQUEST_REASONS", strings.Join(c.Reasons, "\n")},
		{"KMAINT_DESIRED_CONFIG", c.DesiredConfig}, {"KMAINT_CURRENT_CONFIG", c.CurrentConfig},
	}
	out := make([]corev1.EnvVar, 0, len(vars))
	for _, v := range vars {
		out = append(out, corev1.EnvVar{Name: v[0], Value: v[1]})
	}
	return out
}

// PhaseOf reads where a Job's attempt stands from the Job's conditions.
func PhaseOf(job *batchv1.Job) Observation {
	for _, c := range job.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return Observation{State: AttemptPassed}
		case batchv1.JobFailed:
			msg := c.Reason
			if c.Message != "" {
				msg += ": " + c.Message
			}
			return Observation{State: AttemptFailed, Reason: ReasonJobFailed, Message: "Job " + job.Name + " failed: " + msg}
		}
	}
	return Observation{State: AttemptWaiting}
}
