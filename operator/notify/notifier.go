package notify

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/nicholas-fedor/shoutrrr/pkg/types"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
)

// EventNamespace is where the events of cluster-scoped objects, all of
// kmaint's, are stored.
const EventNamespace = metav1.NamespaceDefault

// FollowedControllers are the event recorders (reportingController) whose
// events the notifier follows: all of kmaint's but the NodeMaintenance
// lifecycle's (UnfollowedController), whose events repeat, once per
// request, what the gate, aftercare and the daemon say of the node.
func FollowedControllers() []string {
	return []string{"kmaint-gate", "kmaint-aftercare", "kmaint-daemon", "kmaint-policy", "kmaint-unreadable", "kmaint-alert-webhook", "kmaint-silences"}
}

// UnfollowedController is the one recorder of kmaint's that the notifier
// does not follow.
const UnfollowedController = "kmaint-maintenance"

// The notifier reads kmaint's events, in namespace default only.
// +kubebuilder:rbac:groups=events.k8s.io,namespace=default,resources=events,verbs=list;watch

// Notifier sends chat messages about kmaint's events. It is a
// controller-runtime Runnable that runs on the leader only.
type Notifier struct {
	client   kubernetes.Interface
	opts     Options
	clock    clock.WithTicker
	metrics  *Metrics
	log      logr.Logger
	selector Selector

	// start is when the notifier started: events stored before it are not
	// sent.
	start time.Time

	mu    sync.Mutex
	batch *Batch
	// informers are the watches, once started.
	informers []cache.SharedIndexInformer
	// wake tells the sender that a line was added.
	wake chan struct{}

	// The sender's own, touched by its goroutine only.
	pacer     Pacer
	receivers []*receiver
	urls      string
	readErr   string
}

// New makes a notifier; opts must be valid (Options.Validate).
func New(client kubernetes.Interface, opts Options, m *Metrics, log logr.Logger, clk clock.WithTicker) *Notifier {
	opts = opts.withDefaults()
	return &Notifier{
		client: client, opts: opts, clock: clk, metrics: m, log: log,
		selector: NewSelector(opts.Reasons),
		batch:    NewBatch(opts.MaxLines),
		wake:     make(chan struct{}, 1),
		pacer:    Pacer{Interval: opts.Interval},
	}
}

// NeedLeaderElection makes the notifier run on the leader only: one
// message per event, whatever the replicas.
func (n *Notifier) NeedLeaderElection() bool { return true }

// Start follows kmaint's events and sends messages until ctx is done.
func (n *Notifier) Start(ctx context.Context) error {
	n.start = n.clock.Now()
	n.reload()
	n.log.Info("Notifications on", "receivers", n.receiverNames(), "reasons", n.opts.Reasons, "interval", n.opts.Interval)
	for _, c := range FollowedControllers() {
		lw := cache.NewFilteredListWatchFromClient(n.client.EventsV1().RESTClient(), "events", EventNamespace, func(o *metav1.ListOptions) {
			// The API server sends this controller's events only; a
			// field selector takes one value per field, hence one watch
			// per controller.
			o.FieldSelector = fields.OneTermEqualSelector("reportingController", c).String()
		})
		inf := cache.NewSharedIndexInformer(lw, &eventsv1.Event{}, 0, cache.Indexers{})
		if err := inf.SetTransform(slimEvent); err != nil {
			return fmt.Errorf("notifier: %w", err)
		}
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{AddFunc: n.onAdd}); err != nil {
			return fmt.Errorf("notifier: %w", err)
		}
		n.mu.Lock()
		n.informers = append(n.informers, inf)
		n.mu.Unlock()
		go inf.RunWithContext(ctx)
	}
	n.send(ctx)
	return nil
}

// Synced reports whether the notifier has started and read the events
// stored before it: from then on every new event is seen.
func (n *Notifier) Synced() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.informers) < len(FollowedControllers()) {
		return false
	}
	for _, inf := range n.informers {
		if !inf.HasSynced() {
			return false
		}
	}
	return true
}

// onAdd takes a new event. It never blocks: the informer that calls it
// must keep up, whatever the receivers do.
func (n *Notifier) onAdd(obj any, inInitialList bool) {
	ev, ok := obj.(*eventsv1.Event)
	if !ok {
		return
	}
	if inInitialList && recorded(ev).Before(n.start) {
		return // stored before this notifier started: sent by an earlier one, or lost with it
	}
	line, ok := n.selector.Line(FromAPI(ev))
	if !ok {
		return
	}
	n.metrics.events.WithLabelValues(line.Reason).Inc()
	n.mu.Lock()
	counted := n.batch.Add(line)
	n.mu.Unlock()
	if counted {
		n.metrics.summarized.Inc()
	}
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

// recorded is when an event was recorded: its eventTime, to the
// microsecond, or else its creation, to the second.
func recorded(ev *eventsv1.Event) time.Time {
	if !ev.EventTime.IsZero() {
		return ev.EventTime.Time
	}
	return ev.CreationTimestamp.Add(time.Second - time.Nanosecond)
}

// slimEvent keeps of a cached event what the notifier reads, so that the
// informer's cache stays small.
func slimEvent(obj any) (any, error) {
	ev, ok := obj.(*eventsv1.Event)
	if !ok {
		return obj, nil
	}
	slim := &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: ev.Name, Namespace: ev.Namespace, ResourceVersion: ev.ResourceVersion, CreationTimestamp: ev.CreationTimestamp},
		EventTime:  ev.EventTime,
		Reason:     ev.Reason,
		Type:       ev.Type,
		Note:       ev.Note,
	}
	slim.Regarding.Kind, slim.Regarding.Name = ev.Regarding.Kind, ev.Regarding.Name
	if ev.Related != nil {
		slim.Related = &corev1.ObjectReference{Kind: ev.Related.Kind, Name: ev.Related.Name}
	}
	return slim, nil
}

// send delivers the batch whenever it has lines and the pacer allows.
func (n *Notifier) send(ctx context.Context) {
	for {
		n.mu.Lock()
		empty := n.batch.Empty()
		n.mu.Unlock()
		if empty {
			select {
			case <-ctx.Done():
				return
			case <-n.wake:
			}
			continue
		}
		if wait := n.pacer.Wait(n.clock.Now()); wait > 0 {
			t := n.clock.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C():
			}
			continue
		}
		n.mu.Lock()
		msg := n.batch.Take()
		n.mu.Unlock()
		n.pacer.Sent(n.clock.Now())
		n.deliver(ctx, msg)
	}
}

// deliver sends one message to every receiver, waiting at most the send
// timeout. A receiver still busy with an earlier message is skipped.
func (n *Notifier) deliver(ctx context.Context, msg Message) {
	n.reload()
	text := msg.Text()
	var started []*receiver
	for _, r := range n.receivers {
		if r.pending != nil {
			select {
			case err := <-r.pending:
				r.pending = nil
				n.log.Info("A late notification ended", "receiver", r.name, "after", n.clock.Since(r.busySince), "error", errText(err))
			default:
				n.metrics.messages.WithLabelValues(r.name, resultSkipped).Inc()
				n.log.Error(nil, "Notification dropped: the receiver still hangs on an earlier one", "receiver", r.name, "since", r.busySince, "events", msg.Events())
				continue
			}
		}
		done := make(chan error, 1)
		params := types.Params{types.TitleKey: n.opts.Title}
		svc := r.service
		go func() { done <- svc.Send(text, &params) }()
		r.pending, r.busySince = done, n.clock.Now()
		started = append(started, r)
	}
	timer := n.clock.NewTimer(n.opts.SendTimeout)
	defer timer.Stop()
	timedOut := false
	for _, r := range started {
		var err error
		if timedOut {
			select {
			case err = <-r.pending:
			default:
				n.timedOut(r, msg)
				continue
			}
		} else {
			select {
			case err = <-r.pending:
			case <-timer.C():
				timedOut = true
				n.timedOut(r, msg)
				continue
			case <-ctx.Done():
				return
			}
		}
		r.pending = nil
		if err != nil {
			n.metrics.messages.WithLabelValues(r.name, resultFailed).Inc()
			n.log.Error(nil, "Notification failed", "receiver", r.name, "events", msg.Events(), "error", redact(err.Error()))
			continue
		}
		n.metrics.messages.WithLabelValues(r.name, resultSent).Inc()
		n.log.V(1).Info("Notification sent", "receiver", r.name, "events", msg.Events())
	}
}

func (n *Notifier) timedOut(r *receiver, msg Message) {
	n.metrics.messages.WithLabelValues(r.name, resultFailed).Inc()
	n.log.Error(nil, "Notification failed: the receiver did not answer in time; it is skipped until it does", "receiver", r.name, "timeout", n.opts.SendTimeout, "events", msg.Events())
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return redact(err.Error())
}

// reload reads the URLs file and, when it changed, makes the receivers
// anew, reporting the URLs that cannot be used. A Secret mounted as a file
// changes in place, so a fixed typo needs no restart.
func (n *Notifier) reload() {
	raw, err := os.ReadFile(n.opts.URLsFile)
	if err != nil {
		if msg := err.Error(); msg != n.readErr {
			n.readErr = msg
			n.log.Error(err, "Cannot read the notification URLs; nothing is sent until it can be read", "file", n.opts.URLsFile)
		}
		n.receivers, n.urls = nil, ""
		n.setReceivers(0, 1)
		return
	}
	n.readErr = ""
	if string(raw) == n.urls && n.receivers != nil {
		return
	}
	n.urls = string(raw)
	rs, problems := parseURLs(n.urls)
	for _, p := range problems {
		n.log.Error(p, "A notification URL cannot be used and is left out", "file", n.opts.URLsFile)
	}
	if len(rs) == 0 {
		n.log.Error(nil, "No notification URL can be used: nothing is sent", "file", n.opts.URLsFile)
	}
	n.receivers = rs
	n.setReceivers(len(rs), len(problems))
}

func (n *Notifier) setReceivers(valid, invalid int) {
	n.metrics.receivers.WithLabelValues("valid").Set(float64(valid))
	n.metrics.receivers.WithLabelValues("invalid").Set(float64(invalid))
}

func (n *Notifier) receiverNames() []string {
	names := make([]string, 0, len(n.receivers))
	for _, r := range n.receivers {
		names = append(names, r.name)
	}
	return names
}
