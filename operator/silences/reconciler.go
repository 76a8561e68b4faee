package silences

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/index"
	"github.com/kmaint/kmaint/operator/metrics"
	"github.com/kmaint/kmaint/operator/poolnodes"
)

// CreatedBy is the author of kmaint's silences. It proves nothing (anyone
// who may make silences may name it): kmaint adopts a silence by the key
// its node's record holds, never by its author.
const CreatedBy = "kmaint"

// DefaultMargin is how far a silence's end lies ahead of the last pass that
// saw its node in flight, when the operator is given none.
const DefaultMargin = 10 * time.Minute

// retryAfter is how soon a pass whose calls failed is tried again.
const retryAfter = 30 * time.Second

// Alertmanager is one Alertmanager the operator holds silences in.
type Alertmanager struct {
	// Name identifies it in records, metrics and events: its URL, without
	// credentials.
	Name string
	API  *Client
}

// Reconciler holds each node's silences while it is in flight: one pass
// per node reads its record, its maintenance and its pool's sets, decides
// (Decide), writes what it will make before making it, calls Alertmanager,
// and writes the record once more with what it answered (Settle).
type Reconciler struct {
	Client        client.Client
	Recorder      events.EventRecorder
	Clock         clock.PassiveClock
	Metrics       *metrics.Recorder
	Alertmanagers []Alertmanager
	// Margin is how far ahead of a pass a silence ends; 0 means
	// DefaultMargin.
	Margin time.Duration
	// NewKey makes a record's key; nil makes 16 random hex digits.
	NewKey func() string

	mu   sync.Mutex
	held map[string]map[string]int // node → Alertmanager → silences held
}

// SetupWithManager registers the controller: a pass per node whose
// protocol annotations, boot or readiness change, and for the nodes in
// flight in a pool whose spec changes.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.Margin <= 0 {
		r.Margin = DefaultMargin
	}
	if r.NewKey == nil {
		r.NewKey = randomKey
	}
	r.held = map[string]map[string]int{}
	for _, am := range r.Alertmanagers {
		r.Metrics.InitSilences(am.Name)
	}
	return ctrl.NewControllerManagedBy(mgr).Named("silences").WithOptions(opts).
		For(&corev1.Node{}, builder.WithPredicates(poolnodes.NodeChanged(false), inMaintenance())).
		Watches(&v1alpha1.MaintenancePool{}, handler.EnqueueRequestsFromMapFunc(r.poolNodes),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Complete(r)
}

// inMaintenance passes the events of a node that is, or was until this
// update, admitted, settling or silenced: no other node has silences to
// hold, and a rollout of thousands of nodes updates each many times
// before its turn comes.
func inMaintenance() predicate.Predicate {
	concerned := func(o client.Object) bool {
		a := o.GetAnnotations()
		return a[protocol.Admitted] != "" || a[protocol.Settling] != "" || a[protocol.Silenced] != ""
	}
	return predicate.Funcs{
		CreateFunc:  func(e event.CreateEvent) bool { return concerned(e.Object) },
		UpdateFunc:  func(e event.UpdateEvent) bool { return concerned(e.ObjectOld) || concerned(e.ObjectNew) },
		DeleteFunc:  func(e event.DeleteEvent) bool { return concerned(e.Object) },
		GenericFunc: func(e event.GenericEvent) bool { return concerned(e.Object) },
	}
}

// Reconcile holds the silences of one node.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var node corev1.Node
	if err := r.Client.Get(ctx, req.NamespacedName, &node); err != nil {
		if apierrors.IsNotFound(err) {
			// Its silences end at their end, within the margin.
			r.setHeld(req.Name, nil)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	st, _ := protocol.Read(&node)
	if _, present := node.Annotations[protocol.Silenced]; present && st.Silences == nil {
		// Only the operator writes it: what it held cannot be told,
		// and those silences end at their end, within the margin.
		ctrl.LoggerFrom(ctx).Info("Silence record unreadable; its silences end on their own", "node", node.Name)
		return reconcile.Result{}, nil
	}
	f, err := r.facts(ctx, &st)
	if err != nil {
		return reconcile.Result{}, err
	}
	p := Decide(f)
	if p.Record == nil {
		r.setHeld(node.Name, nil)
		return reconcile.Result{}, nil
	}
	written := &node
	if p.Intent {
		// What will be made is recorded before it is (invariant 12).
		if written, err = poolnodes.Patch(ctx, r.Client, written, true, protocol.RecordSilences(*p.Record)); err != nil {
			return conflictAgain(err)
		}
	}
	o := r.call(ctx, &node, f, p)
	w := Settle(f, p, o)
	if err := r.write(ctx, written, w); err != nil {
		// What was made and not recorded, the next pass finds by its key.
		return conflictAgain(err)
	}
	r.tell(ctx, &node, f, p, o, w)
	return reconcile.Result{RequeueAfter: r.next(f, w, o)}, nil
}

// facts gathers what decides the node's silences.
func (r *Reconciler) facts(ctx context.Context, st *protocol.NodeState) (Facts, error) {
	f := Facts{Now: r.Clock.Now(), Record: st.Silences, Margin: r.Margin, Lifetime: v1alpha1.DefaultSilenceMaxDuration}
	for _, am := range r.Alertmanagers {
		f.Alertmanagers = append(f.Alertmanagers, am.Name)
	}
	m, ok := st.Silenceable()
	if !ok {
		return f, nil
	}
	f.Maintenance, f.node = &m, st.Name()
	if st.Admission != nil {
		f.requests = st.Admission.Requests
	} else if st.Settle != nil {
		f.requests = st.Settle.Requests
	}
	if st.Silences == nil || !st.Silences.For(m) {
		f.Key = r.NewKey()
	}
	if m.Pool == "" || m.PoolUID == "" {
		// The built-in default pool, or a record written before records
		// named their pool: no silences.
		return f, nil
	}
	var pool v1alpha1.MaintenancePool
	switch err := r.Client.Get(ctx, types.NamespacedName{Name: m.Pool}, &pool); {
	case apierrors.IsNotFound(err):
		f.SetsErr = fmt.Sprintf("pool %s, which admitted the node, is gone", m.Pool)
		return f, nil
	case err != nil:
		return f, err
	case pool.UID != m.PoolUID:
		f.SetsErr = fmt.Sprintf("pool %s was made anew since it admitted the node", m.Pool)
		return f, nil
	case pool.Unreadable() != nil:
		f.SetsErr = fmt.Sprintf("pool %s cannot be read: %v", m.Pool, pool.Unreadable())
		return f, nil
	}
	s := pool.Spec.Silences
	f.Sets, f.Proceed, f.Lifetime, f.spec = setsOf(s), s.Proceeds(), s.Lifetime(), s
	if err := s.Validate(); err != nil {
		f.SetsErr = fmt.Sprintf("pool %s's silences cannot be used: %v", m.Pool, err)
	}
	return f, nil
}

// write makes the pass's one write: the record, when it differs from the
// node's, or its removal.
func (r *Reconciler) write(ctx context.Context, node *corev1.Node, w Write) error {
	var t protocol.Transition
	switch {
	case w.Forget:
		t = protocol.ForgetSilences()
	case w.Record != nil && protocol.Encode(*w.Record) != node.Annotations[protocol.Silenced]:
		t = protocol.RecordSilences(*w.Record)
	default:
		return nil
	}
	_, err := poolnodes.Patch(ctx, r.Client, node, true, t)
	if err == nil {
		held := map[string]int{}
		if w.Record != nil && !w.Forget {
			for _, h := range w.Record.Silences {
				if h.Held() {
					held[h.Alertmanager]++
				}
			}
		}
		r.setHeld(node.Name, held)
	}
	return err
}

// conflictAgain takes a write that lost to another writer of the node for
// a pass to make again, from the node as it is now; any other error is
// the reconcile's.
func conflictAgain(err error) (reconcile.Result, error) {
	if apierrors.IsConflict(err) {
		return reconcile.Result{RequeueAfter: time.Second}, nil
	}
	return reconcile.Result{}, err
}

// next is when the node's pass comes again: when its first silence needs
// extending, or soon after a call that failed.
func (r *Reconciler) next(f Facts, w Write, o Outcome) time.Duration {
	if len(o.Errors) > 0 || w.Record != nil && w.Record.Unavailable != nil {
		return retryAfter
	}
	if w.Record == nil || w.Forget || f.Maintenance == nil {
		return 0
	}
	var soonest time.Duration
	for _, h := range w.Record.Silences {
		if !h.Held() {
			continue
		}
		d := max(h.EndsAt.Add(-r.Margin/2).Sub(f.Now), time.Second)
		if soonest == 0 || d < soonest {
			soonest = d
		}
	}
	return soonest
}

// setHeld records how many silences the node holds in each Alertmanager
// (nil: none) and sets the gauge.
func (r *Reconciler) setHeld(node string, held map[string]int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.held == nil {
		r.held = map[string]map[string]int{}
	}
	if len(held) == 0 {
		delete(r.held, node)
	} else {
		r.held[node] = held
	}
	for _, am := range r.Alertmanagers {
		n := 0
		for _, h := range r.held {
			n += h[am.Name]
		}
		r.Metrics.SilencesHeld(am.Name, n)
	}
}

// poolNodes maps a pool's spec change to its nodes in flight: their
// silences follow the pool's sets.
func (r *Reconciler) poolNodes(ctx context.Context, o client.Object) []reconcile.Request {
	var nodes corev1.NodeList
	if err := r.Client.List(ctx, &nodes); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "List nodes for a pool's silences", "pool", o.GetName())
		return nil
	}
	var out []reconcile.Request
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if pool, uid := protocol.InFlightPool(n); pool == o.GetName() && uid == o.GetUID() || n.Annotations[protocol.Silenced] != "" {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: n.Name}})
		}
	}
	return out
}

// requestNames names the node's NodeMaintenances whose requests the
// maintenance carries, for a silence's comment; their request ids where
// none is found.
func (r *Reconciler) requestNames(ctx context.Context, node string, ids []string) []string {
	var list v1alpha1.NodeMaintenanceList
	names := slices.Clone(ids)
	if err := r.Client.List(ctx, &list, client.MatchingFields{index.NodeName: node}); err != nil {
		return names
	}
	for i, id := range ids {
		for j := range list.Items {
			if list.Items[j].RequestID() == id {
				names[i] = list.Items[j].Name
			}
		}
	}
	return names
}

func randomKey() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// keyMark is what a silence's comment says of its record: the key and the
// set, which find it again.
func keyMark(key, set string) string { return "kmaint-key=" + key + "/" + set }

// mine reports whether s is the silence of the record's key and set: made
// by kmaint, marked so, and not expired.
func mine(s Silence, key, set string) bool {
	return s.CreatedBy == CreatedBy && !s.Expired() && strings.HasSuffix(s.Comment, "("+keyMark(key, set)+")")
}

var errUnknownAlertmanager = errors.New("this Alertmanager is no longer configured")
