package realkmaint

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/realcluster"
)

// logLinesOnFailure is how much of each kmaint container's log a failed
// run shows.
const logLinesOnFailure = 200

// diagnoseOnFailure, when t fails, logs what a person would look at first:
// each node's kmaint annotations, cordon, readiness and boot, the pools'
// conditions, the open NodeMaintenances, the events of kmaint's namespace
// and the end of every kmaint container's log. The cluster is gone once the
// test ends, and CI keeps only the test's output. With
// KMAINT_REALKMAINT_DIAGNOSE=always it logs them after a passing run too,
// for whoever looks into a slow one.
func diagnoseOnFailure(t *testing.T, cs kubernetes.Interface, kc client.Client) {
	t.Cleanup(func() {
		if !t.Failed() && os.Getenv("KMAINT_REALKMAINT_DIAGNOSE") != "always" {
			return
		}
		ctx := context.Background()
		var b strings.Builder
		if nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err != nil {
			fmt.Fprintf(&b, "nodes: %v\n", err)
		} else {
			for i := range nodes.Items {
				n := &nodes.Items[i]
				fmt.Fprintf(&b, "node %s: unschedulable=%t ready=%t boot=%s\n", n.Name, n.Spec.Unschedulable, realcluster.NodeReady(n), n.Status.NodeInfo.BootID)
				var keys []string
				for k := range n.Annotations {
					if strings.HasPrefix(k, protocol.Prefix) {
						keys = append(keys, k)
					}
				}
				sort.Strings(keys)
				for _, k := range keys {
					fmt.Fprintf(&b, "  %s=%s\n", k, n.Annotations[k])
				}
			}
		}
		var pools v1alpha1.MaintenancePoolList
		if err := kc.List(ctx, &pools); err != nil {
			fmt.Fprintf(&b, "pools: %v\n", err)
		}
		for _, p := range pools.Items {
			fmt.Fprintf(&b, "pool %s: unavailable %d of %d\n", p.Name, p.Status.Unavailable, p.Status.MaxUnavailable)
			for _, c := range p.Status.Conditions {
				fmt.Fprintf(&b, "  %s=%s %s: %s\n", c.Type, c.Status, c.Reason, c.Message)
			}
		}
		var nms v1alpha1.NodeMaintenanceList
		if err := kc.List(ctx, &nms); err != nil {
			fmt.Fprintf(&b, "node maintenances: %v\n", err)
		}
		for _, nm := range nms.Items {
			if !nm.Status.Phase.Done() {
				fmt.Fprintf(&b, "open NodeMaintenance %s (node %s): %s: %s\n", nm.Name, nm.Spec.NodeName, nm.Status.Phase, nm.Status.Message)
			}
		}
		if events, err := cs.CoreV1().Events(Namespace).List(ctx, metav1.ListOptions{}); err != nil {
			fmt.Fprintf(&b, "events of %s: %v\n", Namespace, err)
		} else {
			sort.Slice(events.Items, func(i, j int) bool { return eventTime(&events.Items[i]).Before(eventTime(&events.Items[j])) })
			for _, e := range events.Items {
				fmt.Fprintf(&b, "event %s %s/%s %s x%d: %s\n", eventTime(&e).Format(time.TimeOnly), e.InvolvedObject.Kind, e.InvolvedObject.Name,
					e.Reason, max(e.Count, 1), e.Message)
			}
		}
		t.Logf("state of the cluster at the end:\n%s", b.String())
		logKmaintContainers(t, ctx, cs)
	})
}

// eventTime is when an event last happened, whichever API wrote it.
func eventTime(e *corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

// logKmaintContainers logs the end of every container's log in kmaint's
// namespace: both operator replicas and every daemon.
func logKmaintContainers(t *testing.T, ctx context.Context, cs kubernetes.Interface) {
	pods, err := cs.CoreV1().Pods(Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Logf("pods of %s: %v", Namespace, err)
		return
	}
	tail := int64(logLinesOnFailure)
	for _, pod := range pods.Items {
		for _, c := range pod.Spec.Containers {
			log, err := cs.CoreV1().Pods(Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{Container: c.Name, TailLines: &tail}).DoRaw(ctx)
			if err != nil {
				t.Logf("log of %s/%s (node %s): %v", pod.Name, c.Name, pod.Spec.NodeName, err)
				continue
			}
			t.Logf("log of %s/%s (node %s), last %d lines:\n%s", pod.Name, c.Name, pod.Spec.NodeName, logLinesOnFailure, log)
		}
	}
}

// logRequestTimes logs, when t ends, each NodeMaintenance created since
// began with the time it entered each phase, counted from its creation:
// where a reboot's time went (waiting, draining, down, back), for whoever
// looks into a slow run.
func logRequestTimes(t *testing.T, kc client.Client, began time.Time) {
	t.Cleanup(func() {
		var nms v1alpha1.NodeMaintenanceList
		if err := kc.List(context.Background(), &nms); err != nil {
			t.Logf("node maintenances: %v", err)
			return
		}
		sort.Slice(nms.Items, func(i, j int) bool {
			return nms.Items[i].CreationTimestamp.Before(&nms.Items[j].CreationTimestamp)
		})
		for _, nm := range nms.Items {
			created := nm.CreationTimestamp.Time
			if created.Before(began.Truncate(time.Second)) {
				continue
			}
			var b strings.Builder
			fmt.Fprintf(&b, "%s (%s, %s) created %s:", nm.Spec.NodeName, nm.Spec.Source, nm.Name, created.Format(time.TimeOnly))
			for _, p := range []v1alpha1.Phase{v1alpha1.PhasePending, v1alpha1.PhaseRequested, v1alpha1.PhaseDraining,
				v1alpha1.PhaseApproved, v1alpha1.PhaseRebooting, v1alpha1.PhaseSettling, v1alpha1.PhaseSucceeded, v1alpha1.PhaseFailed} {
				if at := nm.Status.PhaseTimes.Get(p); at != nil {
					fmt.Fprintf(&b, " %s +%s", p, at.Sub(created).Round(time.Second))
				}
			}
			t.Log(b.String())
		}
	})
}
