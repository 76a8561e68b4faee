package drain

import (
	"context"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	appsv1client "k8s.io/client-go/kubernetes/typed/apps/v1"
)

// daemonSetTTL is how long the drain trusts that a DaemonSet it found
// exists.
const daemonSetTTL = time.Minute

// knownDaemonSets remembers the DaemonSets the drain found. kubectl's drain
// asks the API server, for every DaemonSet pod of the node at every step,
// whether its DaemonSet exists (a pod whose DaemonSet is gone is an orphan,
// deleted under drain.force): a node's half-dozen agents times a step every
// couple of seconds was most of a drain's requests, for an answer that
// does not change. A DaemonSet found is trusted for daemonSetTTL; one not
// found is asked again at the next step, so an orphan is never taken for a
// managed pod, and a DaemonSet deleted meanwhile is noticed within the TTL.
type knownDaemonSets struct {
	mu    sync.Mutex
	found map[string]time.Time
}

// client returns c answering DaemonSet Gets from what is known, and
// learning from those it passes on.
func (k *knownDaemonSets) client(c kubernetes.Interface) kubernetes.Interface {
	return knownDaemonSetsClient{Interface: c, known: k}
}

func (k *knownDaemonSets) fresh(key string, now time.Time) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	at, ok := k.found[key]
	if ok && now.Sub(at) >= daemonSetTTL {
		delete(k.found, key)
		return false
	}
	return ok
}

func (k *knownDaemonSets) learn(key string, now time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.found == nil {
		k.found = map[string]time.Time{}
	}
	k.found[key] = now
}

type knownDaemonSetsClient struct {
	kubernetes.Interface
	known *knownDaemonSets
}

func (c knownDaemonSetsClient) AppsV1() appsv1client.AppsV1Interface {
	return knownDaemonSetsApps{AppsV1Interface: c.Interface.AppsV1(), known: c.known}
}

type knownDaemonSetsApps struct {
	appsv1client.AppsV1Interface
	known *knownDaemonSets
}

func (a knownDaemonSetsApps) DaemonSets(namespace string) appsv1client.DaemonSetInterface {
	return knownDaemonSetsOf{DaemonSetInterface: a.AppsV1Interface.DaemonSets(namespace), namespace: namespace, known: a.known}
}

type knownDaemonSetsOf struct {
	appsv1client.DaemonSetInterface
	namespace string
	known     *knownDaemonSets
}

// Get answers a DaemonSet known to exist with a stub that names it (the
// drain only asks whether it exists), and asks the API server otherwise.
func (d knownDaemonSetsOf) Get(ctx context.Context, name string, opts metav1.GetOptions) (*appsv1.DaemonSet, error) {
	key := d.namespace + "/" + name
	if d.known.fresh(key, time.Now()) {
		return &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: d.namespace, Name: name}}, nil
	}
	ds, err := d.DaemonSetInterface.Get(ctx, name, opts)
	if err == nil {
		d.known.learn(key, time.Now())
	}
	return ds, err
}
