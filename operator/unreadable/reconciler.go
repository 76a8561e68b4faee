package unreadable

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

// Object is a kmaint object whose stored body may not fit its Go type.
type Object interface {
	client.Object
	Unreadable() error
}

// Kind is a kind of kmaint object the reporter watches.
type Kind struct {
	// Name is the kind, e.g. "MaintenancePool".
	Name string
	// New returns an empty object of the kind.
	New func() Object
	// Conditions returns the object's status conditions, to remove the
	// Unreadable condition once it reads.
	Conditions func(Object) *[]metav1.Condition
	// Consequence says what kmaint does about an object of the kind it
	// cannot read, after the field at fault.
	Consequence string
	// ZeroStatus is the kind's empty status. Its fields that the stored
	// status lacks are written with it, because the schema requires them
	// (a pool's counts, before the gate ever counted).
	ZeroStatus any
}

// Kinds returns kmaint's kinds.
func Kinds() []Kind {
	return []Kind{
		{
			Name: "MaintenancePool",
			New:  func() Object { return &v1alpha1.MaintenancePool{} },
			Conditions: func(o Object) *[]metav1.Condition {
				return &o.(*v1alpha1.MaintenancePool).Status.Conditions
			},
			Consequence: "no pool admits, drains or approves a node until it can be read or is deleted, since the nodes it selects cannot be told",
			ZeroStatus:  v1alpha1.MaintenancePoolStatus{},
		},
		{
			Name: "RebootPolicy",
			New:  func() Object { return &v1alpha1.RebootPolicy{} },
			Conditions: func(o Object) *[]metav1.Condition {
				return &o.(*v1alpha1.RebootPolicy).Status.Conditions
			},
			Consequence: "it raises no requests until it can be read",
			ZeroStatus:  v1alpha1.RebootPolicyStatus{},
		},
		{
			Name: "NodeMaintenance",
			New:  func() Object { return &v1alpha1.NodeMaintenance{} },
			Conditions: func(o Object) *[]metav1.Condition {
				return &o.(*v1alpha1.NodeMaintenance).Status.Conditions
			},
			Consequence: "its request is never admitted, and no RebootPolicy raises requests, until it can be read or is deleted",
			ZeroStatus:  v1alpha1.NodeMaintenanceStatus{},
		},
		{
			Name: "MaintenanceGate",
			New:  func() Object { return &v1alpha1.MaintenanceGate{} },
			Conditions: func(o Object) *[]metav1.Condition {
				return &o.(*v1alpha1.MaintenanceGate).Status.Conditions
			},
			Consequence: "no pool admits a node until it can be read or is deleted, since whether it stops them cannot be told",
			ZeroStatus:  v1alpha1.MaintenanceGateStatus{},
		},
	}
}

// Reconciler reports the objects of one kind that cannot be read.
type Reconciler struct {
	client.Client
	// APIReader reads an unreadable object's stored status as it is, which
	// the typed cache cannot.
	APIReader client.Reader
	Recorder  events.EventRecorder
	Clock     clock.PassiveClock
	Kind      Kind

	mu sync.Mutex
	// reported is what was last reported per object, so that an object is
	// reported once, not at every change.
	reported map[types.UID]report
}

// report is what was said of one object: the message of its event, and
// whether its condition says the same.
type report struct {
	message string
	written bool
}

// +kubebuilder:rbac:groups=kmaint.io,resources=maintenancepools;rebootpolicies;nodemaintenances;maintenancegates,verbs=get;list;watch
// +kubebuilder:rbac:groups=kmaint.io,resources=maintenancepools/status;rebootpolicies/status;nodemaintenances/status;maintenancegates/status,verbs=get;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile reports an object that cannot be read, or clears the report
// once it can.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := r.Kind.New()
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	why := obj.Unreadable()
	if why == nil {
		r.forget(obj.GetUID())
		return ctrl.Result{}, r.clear(ctx, obj)
	}
	msg := v1alpha1.FitMessage(fmt.Sprintf("%s %s cannot be read: %v; %s", r.Kind.Name, obj.GetName(), why, r.Kind.Consequence))
	last := r.last(obj.GetUID())
	if last.message == msg && last.written {
		return ctrl.Result{}, nil
	}
	if last.message != msg {
		ctrl.LoggerFrom(ctx).Info("Object cannot be read", "kind", r.Kind.Name, "name", obj.GetName(), "error", why.Error())
		r.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, v1alpha1.UnreadableReason, "Read", "%s", msg)
		r.remember(obj.GetUID(), report{message: msg})
	}
	// A condition that cannot be written is retried; the event is not
	// sent again.
	if err := r.setCondition(ctx, obj, msg); err != nil {
		return ctrl.Result{}, err
	}
	r.remember(obj.GetUID(), report{message: msg, written: true})
	return ctrl.Result{}, nil
}

// setCondition writes the Unreadable condition into the stored status as it
// is: read as unstructured, since the Go type cannot hold it, and patched
// with the conditions and nothing else (but the fields the schema requires
// when the stored status lacks them). The resource version makes a write
// that raced another fail and retry.
func (r *Reconciler) setCondition(ctx context.Context, obj Object, msg string) error {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind(r.Kind.Name))
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(obj), live); err != nil {
		return client.IgnoreNotFound(err)
	}
	stored, _ := live.Object["status"].(map[string]any)
	status := map[string]any{}
	zero, err := asMap(r.Kind.ZeroStatus)
	if err != nil {
		return err
	}
	for k, v := range zero {
		if _, ok := stored[k]; !ok {
			status[k] = v
		}
	}
	cond := map[string]any{
		"type": v1alpha1.UnreadableCondition, "status": string(metav1.ConditionTrue), "reason": v1alpha1.DecodeFailedReason,
		"message": msg, "observedGeneration": live.GetGeneration(),
		"lastTransitionTime": r.Clock.Now().UTC().Format(time.RFC3339),
	}
	conds := []any{cond}
	if old, ok := stored["conditions"].([]any); ok {
		for _, c := range old {
			if m, ok := c.(map[string]any); ok && m["type"] == v1alpha1.UnreadableCondition {
				if m["status"] == cond["status"] && m["lastTransitionTime"] != nil {
					cond["lastTransitionTime"] = m["lastTransitionTime"]
				}
				continue
			}
			conds = append(conds, c)
		}
	}
	status["conditions"] = conds
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": live.GetResourceVersion()},
		"status":   status,
	})
	if err != nil {
		return fmt.Errorf("condition patch of %s %s: %w", r.Kind.Name, obj.GetName(), err)
	}
	if err := r.Status().Patch(ctx, live, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("write the Unreadable condition of %s %s: %w", r.Kind.Name, obj.GetName(), err))
	}
	return nil
}

// clear removes the Unreadable condition of an object that reads again.
func (r *Reconciler) clear(ctx context.Context, obj Object) error {
	if meta.FindStatusCondition(*r.Kind.Conditions(obj), v1alpha1.UnreadableCondition) == nil {
		return nil
	}
	base := obj.DeepCopyObject().(Object)
	meta.RemoveStatusCondition(r.Kind.Conditions(obj), v1alpha1.UnreadableCondition)
	if err := r.Status().Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("clear the Unreadable condition of %s %s: %w", r.Kind.Name, obj.GetName(), err))
	}
	return nil
}

func asMap(v any) (map[string]any, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("zero status: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("zero status: %w", err)
	}
	return m, nil
}

func (r *Reconciler) last(uid types.UID) report {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reported[uid]
}

func (r *Reconciler) remember(uid types.UID, rep report) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.reported == nil {
		r.reported = map[types.UID]report{}
	}
	r.reported[uid] = rep
}

func (r *Reconciler) forget(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.reported, uid)
}

// SetupWithManager registers the reporter for its kind. Only objects that
// cannot be read, or carry the condition still, are reconciled.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	concerned := predicate.NewPredicateFuncs(func(o client.Object) bool {
		obj, ok := o.(Object)
		if !ok {
			return false
		}
		return obj.Unreadable() != nil || meta.FindStatusCondition(*r.Kind.Conditions(obj), v1alpha1.UnreadableCondition) != nil
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("unreadable-"+r.Kind.Name).
		WithOptions(opts).
		For(r.Kind.New(), builder.WithPredicates(concerned)).
		Complete(r)
}
