package drain

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
)

// listPods is a pod List: a namespace's pod client's, or a wrapper of one.
type listPods func(ctx context.Context, opts metav1.ListOptions) (*corev1.PodList, error)

// withPodLists returns c with the List of each of its pod clients replaced
// by wrap's, given the namespace and the List it wraps; every other call
// goes to c. The drain helper reads pods only by List, through a stack of
// these: not older than a version (podsince.go), from the drain's watch
// (nodepods.go), without kmaint's hook pods (hookpods.go).
func withPodLists(c kubernetes.Interface, wrap func(namespace string, list listPods) listPods) kubernetes.Interface {
	return podListsClient{Interface: c, wrap: wrap}
}

type podListsClient struct {
	kubernetes.Interface
	wrap func(namespace string, list listPods) listPods
}

func (c podListsClient) CoreV1() corev1client.CoreV1Interface {
	return podListsCore{CoreV1Interface: c.Interface.CoreV1(), wrap: c.wrap}
}

type podListsCore struct {
	corev1client.CoreV1Interface
	wrap func(namespace string, list listPods) listPods
}

func (c podListsCore) Pods(namespace string) corev1client.PodInterface {
	pods := c.CoreV1Interface.Pods(namespace)
	return podListsOf{PodInterface: pods, list: c.wrap(namespace, pods.List)}
}

type podListsOf struct {
	corev1client.PodInterface
	list listPods
}

func (p podListsOf) List(ctx context.Context, opts metav1.ListOptions) (*corev1.PodList, error) {
	return p.list(ctx, opts)
}
