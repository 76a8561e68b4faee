package eventrec

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	eventsv1client "k8s.io/client-go/kubernetes/typed/events/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/record/util"
	"k8s.io/client-go/tools/reference"
	"k8s.io/utils/clock"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

// Defaults of a Sender.
const (
	// DefaultQueue is how many events may wait to be written: client-go's
	// broadcaster keeps as many.
	DefaultQueue = 1000
	// DefaultWorkers write side by side, so that one slow write does not
	// hold the others back.
	DefaultWorkers = 4
	// DefaultGrace bounds what Stop spends writing what is queued: well
	// within the 30 seconds a pod is given to stop.
	DefaultGrace = 10 * time.Second
	// maxTries and the backoff between them bound what an event costs an
	// API server that refuses it: about a minute in all.
	maxTries     = 8
	firstBackoff = 200 * time.Millisecond
	maxBackoff   = 15 * time.Second
	// maxNote is the API's limit on an event's note, in bytes.
	maxNote = 1024
	// RepeatWindow is how long after an event the same one is folded into
	// it rather than written again: client-go's series last as long.
	RepeatWindow = 6 * time.Minute
)

// Sender writes the events its recorders make. Make it with New, start it
// with Start before the first event is to be written, and call Stop once
// nothing records any more.
type Sender struct {
	client   eventsv1client.EventsGetter
	scheme   *runtime.Scheme
	log      logr.Logger
	clock    clock.PassiveClock
	host     string
	workers  int
	queue    chan *eventsv1.Event
	stopping chan struct{}
	cancel   context.CancelFunc
	done     sync.WaitGroup
	once     sync.Once
	// abandoned counts the events whose write the stop's grace cut short.
	abandoned atomic.Int64

	mu sync.Mutex
	// told is when each event was last recorded, to fold a repeat into
	// the first (fold); swept is when told was last swept of old ones.
	told  map[eventKey]time.Time
	swept time.Time
}

// eventKey is what makes two events the same, as client-go's series have
// it: the object (at its version), the related one, the reason, action,
// note and reporting controller.
type eventKey struct {
	regarding, related       corev1.ObjectReference
	reason, action, note, by string
}

// Option changes a Sender from its defaults.
type Option func(*Sender)

// WithQueue sets how many events may wait to be written.
func WithQueue(n int) Option { return func(s *Sender) { s.queue = make(chan *eventsv1.Event, n) } }

// WithWorkers sets how many events are written side by side.
func WithWorkers(n int) Option { return func(s *Sender) { s.workers = max(1, n) } }

// WithClock sets the clock that stamps events.
func WithClock(c clock.PassiveClock) Option { return func(s *Sender) { s.clock = c } }

// New returns a Sender that writes through client, naming the objects
// events regard by scheme.
func New(client eventsv1client.EventsGetter, scheme *runtime.Scheme, log logr.Logger, opts ...Option) *Sender {
	host, _ := os.Hostname()
	s := &Sender{
		client: client, scheme: scheme, log: log, clock: clock.RealClock{}, host: host,
		workers: DefaultWorkers, queue: make(chan *eventsv1.Event, DefaultQueue), stopping: make(chan struct{}),
		told: map[eventKey]time.Time{},
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Recorder returns a recorder whose events name controller as the one
// reporting them, as controller-runtime's GetEventRecorder does.
func (s *Sender) Recorder(controller string) events.EventRecorder {
	return &recorder{sender: s, controller: controller, instance: controller + "-" + s.host}
}

// Start starts writing. What was recorded before waits in the queue. Call
// it once.
func (s *Sender) Start() {
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	for range s.workers {
		s.done.Go(func() { s.work(ctx) })
	}
}

// Stop writes what is queued, for at most grace, then stops writing. It
// returns an error saying how many events it could not write.
func (s *Sender) Stop(grace time.Duration) error {
	s.once.Do(func() { close(s.stopping) })
	if s.cancel == nil {
		return unwritten(len(s.queue), grace)
	}
	finished := make(chan struct{})
	go func() {
		s.done.Wait()
		close(finished)
	}()
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-finished:
	case <-timer.C:
		s.cancel()
		<-finished
	}
	s.cancel()
	return unwritten(len(s.queue)+int(s.abandoned.Load()), grace)
}

func unwritten(n int, grace time.Duration) error {
	if n == 0 {
		return nil
	}
	return fmt.Errorf("%d events not written within %s of the stop", n, grace)
}

// work writes events until Stop, then what is left in the queue.
func (s *Sender) work(ctx context.Context) {
	for {
		select {
		case e := <-s.queue:
			s.write(ctx, e)
		case <-s.stopping:
			for {
				select {
				case e := <-s.queue:
					s.write(ctx, e)
				default:
					return
				}
			}
		}
	}
}

// write creates e, trying again while the API server's refusal may pass.
func (s *Sender) write(ctx context.Context, e *eventsv1.Event) {
	wait := firstBackoff
	for try := 1; ; try++ {
		_, err := s.client.Events(e.Namespace).Create(ctx, e, metav1.CreateOptions{})
		if err == nil || apierrors.IsAlreadyExists(err) {
			return
		}
		if ctx.Err() != nil {
			s.abandoned.Add(1) // Stop tells how many
			return
		}
		if !retriable(err) || try == maxTries {
			s.log.Error(err, "Event not written", "reason", e.Reason, "regarding", e.Regarding.Kind+"/"+e.Regarding.Name, "note", e.Note, "tries", try)
			return
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			s.abandoned.Add(1)
			return
		case <-timer.C:
		}
		wait = min(2*wait, maxBackoff)
	}
}

// retriable reports whether a refused write may succeed later: not an
// event the API finds invalid, nor one in a namespace being deleted.
func retriable(err error) bool {
	switch {
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err),
		apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause), apierrors.IsNotFound(err):
		return false
	case errors.Is(err, context.Canceled):
		return false
	}
	return true
}

// recorder makes events and queues them for its Sender.
type recorder struct {
	sender     *Sender
	controller string
	instance   string
}

// Eventf queues an event regarding an object, as client-go's recorder
// would make it. A full queue drops it, saying so in the log: a recorder
// never blocks the controller that tells.
func (r *recorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	s := r.sender
	message := fmt.Sprintf(note, args...)
	ref, err := reference.GetReference(s.scheme, regarding)
	if err != nil {
		s.log.Error(err, "Event not recorded: no reference to its object", "reason", reason, "note", message)
		return
	}
	if !util.ValidateEventType(eventtype) {
		s.log.Error(nil, "Event not recorded: unknown type", "type", eventtype, "reason", reason, "note", message)
		return
	}
	var relatedRef *corev1.ObjectReference
	if related != nil {
		// As client-go's: an event whose related object cannot be named is
		// still told, without it.
		relatedRef, _ = reference.GetReference(s.scheme, related)
	}
	now := s.clock.Now()
	namespace := ref.Namespace
	if namespace == "" {
		namespace = metav1.NamespaceDefault
	}
	e := &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: util.GenerateEventName(ref.Name, now.UnixNano()), Namespace: namespace},
		EventTime:           metav1.NewMicroTime(now),
		ReportingController: r.controller,
		ReportingInstance:   r.instance,
		Action:              action,
		Reason:              reason,
		Regarding:           *ref,
		Related:             relatedRef,
		Note:                v1alpha1.CutAt(message, maxNote),
		Type:                eventtype,
	}
	key := eventKey{regarding: e.Regarding, reason: reason, action: action, note: e.Note, by: r.controller}
	if relatedRef != nil {
		key.related = *relatedRef
	}
	if s.fold(key, now) {
		return
	}
	select {
	case s.queue <- e:
	default:
		// Not told: a repeat is not folded into it.
		s.forget(key)
		s.log.Error(nil, "Event dropped: too many waiting to be written", "reason", reason, "regarding", ref.Kind+"/"+ref.Name, "note", message)
	}
}

// fold reports whether the same event was recorded within RepeatWindow,
// and notes this one. A controller that tells a thing once by what it reads
// (a condition, an annotation) may tell it again before its own write
// reaches its cache; with client-go's recorder the repeat became the
// first's series, and people were told once. A repeat keeps the first one
// standing: the window runs from the last.
func (s *Sender) fold(key eventKey, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if now.Sub(s.swept) > RepeatWindow {
		for k, at := range s.told {
			if now.Sub(at) > RepeatWindow {
				delete(s.told, k)
			}
		}
		s.swept = now
	}
	last, seen := s.told[key]
	s.told[key] = now
	return seen && now.Sub(last) <= RepeatWindow
}

// forget forgets that an event was told: it was dropped, not queued.
func (s *Sender) forget(key eventKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.told, key)
}
