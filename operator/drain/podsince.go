package drain

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// A node's pods, read from the API server's watch cache.
//
// kubectl's drain lists a node's pods with a consistent read (no
// resourceVersion). The API server serves such a read from its watch
// cache once the cache has caught up with etcd; when the cache does not
// catch up within a few seconds (an API server short of CPU), it reads the
// list from etcd instead: every pod of the cluster, filtered on
// spec.nodeName only after the read. At 2000 nodes of 20 pods each, the
// drain steps falling back together grew etcd to 15 GB, until the kernel
// killed it. (Kubernetes 1.37 has an alpha gate,
// ConsistentListFromCacheSkipTimeoutFallback, for the same reason.)
//
// So a drain reads the pods' resource version once, at its first step,
// with a consistent List of one pod (its fallback reads one key), and lists
// the node's pods not older than that version (then watches them from that
// List, nodepods.go; a step lists again only when the watch ended). Such a List is
// always served from the watch cache: when the cache lags, the API server
// answers with an error after a few seconds, and the step fails and is
// taken again; it never reads every pod. The version is read after the
// cordon, so every step sees each pod bound to the node before the cordon,
// as a consistent read would. Drains and the gate's pod checks share these
// reads where one serves several (Versions).

// PodsVersion reads the current resource version of the cluster's pods.
func PodsVersion(ctx context.Context, c kubernetes.Interface) (string, error) {
	list, err := c.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return "", fmt.Errorf("read the resource version of pods: %w", err)
	}
	return list.ResourceVersion, nil
}

// podsSince returns c listing pods not older than version, unless the
// caller asked for a version itself or continues a list (whose token holds
// its version).
func podsSince(c kubernetes.Interface, version string) kubernetes.Interface {
	return withPodLists(c, func(_ string, list listPods) listPods {
		return func(ctx context.Context, opts metav1.ListOptions) (*corev1.PodList, error) {
			if opts.ResourceVersion == "" && opts.Continue == "" {
				opts.ResourceVersion = version
				opts.ResourceVersionMatch = metav1.ResourceVersionMatchNotOlderThan
			}
			return list(ctx, opts)
		}
	})
}
