package drain

import (
	"cmp"
	"context"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"
)

// NodePods is what one drain's steps know of its node's pods. The first
// step lists them (no older than the version read after the cordon,
// podsince.go) and watches them from that list's version; every later step
// reads the pods the watch keeps instead of listing again. A drain whose
// pods take a minute to terminate listed them at every poll, thirty times
// at the default two seconds; now it lists once and watches once. And
// when the last pod a step left goes away, the drain need not wait for
// its next poll to see it (Gone).
//
// What a step reads from the watch is what a List from the watch cache
// would have said at some version no older than the first list's: a watch
// delivers every change after its version, in order, and can only lag. A
// watch that ends (the API server restarts, its version is too old, the
// operator may not watch pods) leaves the next step to list again, and to
// watch from there.
type NodePods struct {
	// ctx bounds the watch: the drain steps' run, and Close.
	ctx    context.Context
	cancel context.CancelFunc

	mu    sync.Mutex
	since string
	// watched is true while a watch keeps pods up to date; selector is
	// the label selector it watches with, which a step's List must ask
	// for to be answered from it.
	watched  bool
	selector string
	pods     map[types.NamespacedName]*corev1.Pod
	// awaited are the pods the last step left on the node, that gone
	// waits for.
	awaited map[types.NamespacedName]bool
	gone    chan struct{}
	closed  bool
	// refused is true once the API server refused a watch (the operator
	// may not watch pods): every step lists, as without one.
	refused bool
}

// NewNodePods returns what a drain's steps know of its node's pods before
// the first: they are to be listed no older than since ("" has the first
// step read the version). The watch the first step starts ends with ctx,
// or Close.
func NewNodePods(ctx context.Context, since string) *NodePods {
	ctx, cancel := context.WithCancel(ctx)
	return &NodePods{ctx: ctx, cancel: cancel, since: since}
}

// Since is the resource version of pods every step lists no older than.
func (p *NodePods) Since() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.since
}

// sinceOrRead returns the version the steps list from, read through c at
// the first step when none was given.
func (p *NodePods) sinceOrRead(ctx context.Context, c kubernetes.Interface) (string, error) {
	if since := p.Since(); since != "" {
		return since, nil
	}
	since, err := PodsVersion(ctx, c)
	if err != nil {
		return "", err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.since == "" {
		p.since = since
	}
	return p.since, nil
}

// Close ends the watch; a step after it lists the pods again.
func (p *NodePods) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	p.cancel()
	p.stopLocked()
	if p.gone != nil && !isClosed(p.gone) {
		close(p.gone)
	}
}

// Gone returns a channel that is closed once no pod the last step left on
// the node is there any more, by the watch, or once the pods are closed:
// the drain's next step may then find it done. Nil when no watch follows
// the pods, or the last step left none.
func (p *NodePods) Gone() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.watched {
		return nil
	}
	return p.gone
}

// await has Gone wait for the pods that a step left on the node.
func (p *NodePods) await(left []corev1.Pod) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.watched {
		return
	}
	p.awaited = make(map[types.NamespacedName]bool, len(left))
	for i := range left {
		key := types.NamespacedName{Namespace: left[i].Namespace, Name: left[i].Name}
		if _, there := p.pods[key]; there {
			p.awaited[key] = true
		}
	}
	if len(p.awaited) == 0 {
		// Nothing left to wait for; whoever still waits on an earlier
		// step's pods is let go.
		if p.gone != nil && !isClosed(p.gone) {
			close(p.gone)
		}
		p.gone = nil
		return
	}
	// The channel stays while it waits: a later step's wait goes on with
	// it rather than waking whoever waited on the last.
	if p.gone == nil || isClosed(p.gone) {
		p.gone = make(chan struct{})
	}
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// list answers a step's List of the node's pods from the watch, when one
// follows them with the same selectors.
func (p *NodePods) list(opts metav1.ListOptions) (*corev1.PodList, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.watched || opts.LabelSelector != p.selector || opts.Continue != "" || opts.ResourceVersion != "" {
		return nil, false
	}
	list := &corev1.PodList{Items: make([]corev1.Pod, 0, len(p.pods))}
	for _, pod := range p.pods {
		list.Items = append(list.Items, *pod)
	}
	// In the API server's order, so that a step's blockers and messages
	// read the same whichever way it got its pods.
	slices.SortFunc(list.Items, func(a, b corev1.Pod) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return list, true
}

// listed starts the watch from a List the step made of the node's pods,
// unless one runs already or the pods were closed.
func (p *NodePods) listed(c kubernetes.Interface, opts metav1.ListOptions, list *corev1.PodList) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.watched || p.refused || opts.Continue != "" || list.Continue != "" || list.ResourceVersion == "" {
		return
	}
	p.watched, p.selector = true, opts.LabelSelector
	p.pods = make(map[types.NamespacedName]*corev1.Pod, len(list.Items))
	for i := range list.Items {
		pod := slimPod(&list.Items[i])
		p.pods[types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}] = pod
	}
	go p.follow(c, metav1.ListOptions{LabelSelector: opts.LabelSelector, FieldSelector: opts.FieldSelector, ResourceVersion: list.ResourceVersion})
}

// follow watches the pods from the List's version and applies the events
// until the watch ends, however it ends: the API server's timeout, too old
// a version, a refusal, Close. The next step then lists, and watches from
// there. A watch that took up where one ended would be cheaper, but one
// that cannot (client-go's RetryWatcher asks again, forever, when the
// version is too old to start from) would leave the drain reading pods
// that no longer change; a List per watch timeout (half an hour or more)
// costs nothing in a drain.
func (p *NodePods) follow(c kubernetes.Interface, opts metav1.ListOptions) {
	refused := false
	w, err := c.CoreV1().Pods(metav1.NamespaceAll).Watch(p.ctx, opts)
	if err == nil {
		for ev := range w.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if ev.Type == watch.Error || !ok {
				err = apierrors.FromObject(ev.Object)
				break
			}
			if ev.Type != watch.Bookmark {
				p.apply(ev.Type, pod)
			}
		}
		w.Stop()
	}
	if err != nil && p.ctx.Err() == nil {
		ctrl.LoggerFrom(p.ctx).V(1).Info("Watch of a draining node's pods ended; its next step lists them", "error", err.Error())
		refused = apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refused = p.refused || refused
	p.stopLocked()
}

func (p *NodePods) apply(t watch.EventType, pod *corev1.Pod) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.watched {
		return
	}
	pod = slimPod(pod)
	key := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
	if t == watch.Deleted {
		delete(p.pods, key)
		if p.awaited[key] {
			delete(p.awaited, key)
			if len(p.awaited) == 0 && !isClosed(p.gone) {
				close(p.gone)
			}
		}
		return
	}
	p.pods[key] = pod
}

// stopLocked forgets the watched pods: the next step lists. Whoever waits
// on Gone goes on waiting, on the watch the next step starts: woken now, a
// watch that ends at once (too old a version, a flapping API server) would
// step the drain over and over.
func (p *NodePods) stopLocked() {
	p.watched, p.pods, p.awaited = false, nil, nil
}

// client returns c with its Lists of all pods answered from p where it
// can, and watched through c from where they are not: the drain helper's
// client.
func (p *NodePods) client(c kubernetes.Interface) kubernetes.Interface {
	return withPodLists(c, func(namespace string, list listPods) listPods {
		if namespace != metav1.NamespaceAll {
			return list
		}
		return func(ctx context.Context, opts metav1.ListOptions) (*corev1.PodList, error) {
			return p.answer(ctx, c, opts, list)
		}
	})
}

// answer answers a List of all pods from the watch, or lists through list
// and starts one through c.
func (p *NodePods) answer(ctx context.Context, c kubernetes.Interface, opts metav1.ListOptions, list listPods) (*corev1.PodList, error) {
	if kept, ok := p.list(opts); ok {
		return kept, nil
	}
	listed, err := list(ctx, opts)
	if err != nil {
		return nil, err
	}
	p.listed(c, opts, listed)
	// The step reads the pods as the watch keeps them, from the first:
	// every step sees the same fields of them.
	if kept, ok := p.list(opts); ok {
		return kept, nil
	}
	return listed, nil
}

// slimPod is what a drain reads of a pod: what kubectl's drain filters
// look at (its owners, the mirror pod annotation, its emptyDir volumes,
// its phase, its deletion), what selects it (labels) and what evicts it
// (name and namespace). A whole pod is several kilobytes, most of them its
// containers and status; a drain of each of 250 nodes at once held 43 MB
// of them in a 5000-node rollout.
func slimPod(pod *corev1.Pod) *corev1.Pod {
	slim := &corev1.Pod{
		TypeMeta: pod.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID, ResourceVersion: pod.ResourceVersion,
			Labels: pod.Labels, OwnerReferences: pod.OwnerReferences,
			DeletionTimestamp: pod.DeletionTimestamp, DeletionGracePeriodSeconds: pod.DeletionGracePeriodSeconds,
		},
		Spec:   corev1.PodSpec{NodeName: pod.Spec.NodeName},
		Status: corev1.PodStatus{Phase: pod.Status.Phase},
	}
	if v, ok := pod.Annotations[corev1.MirrorPodAnnotationKey]; ok {
		slim.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: v}
	}
	for _, v := range pod.Spec.Volumes {
		if v.EmptyDir != nil {
			slim.Spec.Volumes = append(slim.Spec.Volumes, corev1.Volume{Name: v.Name, VolumeSource: corev1.VolumeSource{EmptyDir: v.EmptyDir}})
		}
	}
	return slim
}
