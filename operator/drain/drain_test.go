package drain_test

import (
	"context"
	"os"
	"slices"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/drain"
	"github.com/kmaint/kmaint/operator/hooks"
	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/harness"
	"github.com/kmaint/kmaint/test/testbed"
)

var bed *testbed.Bed

func TestMain(m *testing.M) { os.Exit(harness.Main(m, &bed)) }

// pod variants the drain options treat differently.
func daemonSetPod(t *testing.T, ns, node string) *corev1.Pod {
	ctx := context.Background()
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agent"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "agent"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Image: "registry.invalid/a:1"}}},
			},
		},
	}
	if err := bed.Client.Create(ctx, ds); err != nil {
		t.Fatal(err)
	}
	p := gen.Pod(ns, "agent-"+node, node, map[string]string{"app": "agent"})
	p.OwnerReferences[0].Kind, p.OwnerReferences[0].Name, p.OwnerReferences[0].UID = "DaemonSet", ds.Name, ds.UID
	return p
}

func withEmptyDir(p *corev1.Pod) *corev1.Pod {
	p.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	return p
}

func unmanaged(p *corev1.Pod) *corev1.Pod {
	p.OwnerReferences = nil
	return p
}

// hookPod is a running pod of one of kmaint's hook Jobs, with scratch
// space as an upgrade's may have.
func hookPod(ns, node string) *corev1.Pod {
	p := withEmptyDir(gen.Pod(ns, "kmaint-upgrade-1a2b3c-x7k2p", node, map[string]string{
		hooks.ManagedByLabel: "kmaint", hooks.TokenLabel: "1a2b3c", hooks.HookLabel: "upgrade"}))
	p.OwnerReferences[0].Kind, p.OwnerReferences[0].APIVersion = "Job", "batch/v1"
	return p
}

func TestStepFollowsTheDrainOptions(t *testing.T) {
	cs := kubernetes.NewForConfigOrDie(bed.Config)
	cases := map[string]struct {
		// pods to put on the node, besides nothing.
		pods func(t *testing.T, ns, node string) []*corev1.Pod
		opts v1alpha1.DrainOptions
		// hooksElsewhere runs kmaint's hook Jobs in another namespace
		// than the pods'; else in theirs.
		hooksElsewhere bool
		// wantGone are the pods the drain evicts; the rest stay.
		wantGone []string
		// wantBlocker is a substring of a blocker; empty means none.
		wantBlocker string
	}{
		"DaemonSet pods stay, others go": {
			pods: func(t *testing.T, ns, node string) []*corev1.Pod {
				return []*corev1.Pod{daemonSetPod(t, ns, node), gen.Pod(ns, "web", node, nil)}
			},
			wantGone: []string{"web"},
		},
		"emptyDir data blocks the drain unless allowed": {
			pods: func(t *testing.T, ns, node string) []*corev1.Pod {
				return []*corev1.Pod{withEmptyDir(gen.Pod(ns, "cache", node, nil)), gen.Pod(ns, "web", node, nil)}
			},
			wantBlocker: "local storage",
		},
		"emptyDir data goes when allowed": {
			pods: func(t *testing.T, ns, node string) []*corev1.Pod {
				return []*corev1.Pod{withEmptyDir(gen.Pod(ns, "cache", node, nil))}
			},
			opts:     v1alpha1.DrainOptions{DeleteEmptyDirData: true},
			wantGone: []string{"cache"},
		},
		"unmanaged pods block the drain unless forced": {
			pods: func(t *testing.T, ns, node string) []*corev1.Pod {
				return []*corev1.Pod{unmanaged(gen.Pod(ns, "bare", node, nil))}
			},
			wantBlocker: "declare no controller",
		},
		"unmanaged pods go when forced": {
			pods: func(t *testing.T, ns, node string) []*corev1.Pod {
				return []*corev1.Pod{unmanaged(gen.Pod(ns, "bare", node, nil))}
			},
			opts:     v1alpha1.DrainOptions{Force: true},
			wantGone: []string{"bare"},
		},
		"kmaint's hook Job pods stay, their scratch space blocking nothing": {
			pods: func(t *testing.T, ns, node string) []*corev1.Pod {
				return []*corev1.Pod{hookPod(ns, node), gen.Pod(ns, "web", node, nil)}
			},
			wantGone: []string{"web"},
		},
		"a hook Job pod's labels outside the hooks namespace spare nothing": {
			pods: func(t *testing.T, ns, node string) []*corev1.Pod {
				return []*corev1.Pod{hookPod(ns, node)}
			},
			hooksElsewhere: true,
			wantBlocker:    "local storage",
		},
		"a pod selector limits the drain": {
			pods: func(t *testing.T, ns, node string) []*corev1.Pod {
				return []*corev1.Pod{gen.Pod(ns, "batch", node, map[string]string{"tier": "batch"}), gen.Pod(ns, "db", node, map[string]string{"tier": "db"})}
			},
			opts:     v1alpha1.DrainOptions{PodSelector: "tier=batch", GracePeriodSeconds: ptr.To[int64](0)},
			wantGone: []string{"batch"},
		},
	}
	i := 0
	for name, tc := range cases {
		i++
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			ns := "drain-" + string(rune('a'+i))
			node := "drain-node-" + string(rune('a'+i))
			g.Expect(bed.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
			g.Expect(gen.CreateNode(ctx, bed.Client, gen.Node(node))).To(Succeed())
			d := &drain.Drainer{Client: cs, HooksNamespace: ns}
			if tc.hooksElsewhere {
				d.HooksNamespace = "kmaint-hooks"
			}
			var all []string
			for _, p := range tc.pods(t, ns, node) {
				g.Expect(gen.CreatePod(ctx, bed.Client, p)).To(Succeed())
				all = append(all, p.Name)
			}

			pods := drain.NewNodePods(t.Context(), "")
			p, err := d.Step(ctx, node, tc.opts, pods)
			g.Expect(err).NotTo(HaveOccurred())
			if tc.wantBlocker != "" {
				g.Expect(p.Done).To(BeFalse())
				g.Expect(p.Blockers).To(ContainElement(ContainSubstring(tc.wantBlocker)))
				g.Expect(p.Evicted).To(Equal(0), "nothing is evicted while a pod blocks the drain")
				return
			}
			g.Expect(p.Blockers).To(BeEmpty())
			g.Expect(p.Evicted).To(Equal(len(tc.wantGone)))
			// The simulated kubelets finish the deletions; the next step sees
			// the node drained.
			g.Eventually(func(g Gomega) bool {
				p, err := d.Step(ctx, node, tc.opts, pods)
				g.Expect(err).NotTo(HaveOccurred())
				return p.Done
			}).Should(BeTrue())
			for _, name := range all {
				err := bed.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &corev1.Pod{})
				if slices.Contains(tc.wantGone, name) {
					g.Expect(err).To(HaveOccurred(), "pod %s evicted", name)
				} else {
					g.Expect(err).NotTo(HaveOccurred(), "pod %s stays", name)
				}
			}
		})
	}
}

// A forced drain deletes what must leave, and never kmaint's own hook
// Job's pod: it may be the work the node waits for.
func TestForceLeavesHookPodsBe(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, node := "drain-force-hooks", "drain-force-hooks-node"
	g.Expect(bed.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	g.Expect(gen.CreateNode(ctx, bed.Client, gen.Node(node))).To(Succeed())
	hook, web := hookPod(ns, node), gen.Pod(ns, "web", node, nil)
	hook.Spec.Volumes = nil // emptyDir data alone would keep it
	for _, p := range []*corev1.Pod{hook, web} {
		g.Expect(gen.CreatePod(ctx, bed.Client, p)).To(Succeed())
	}
	d := &drain.Drainer{Client: kubernetes.NewForConfigOrDie(bed.Config), HooksNamespace: ns}
	var recorded []string
	deleted, err := d.Force(ctx, node, v1alpha1.DrainOptions{}, func(pods []string) error { recorded = pods; return nil })
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(recorded).To(Equal([]string{ns + "/web"}))
	g.Expect(deleted).To(Equal([]string{ns + "/web"}))
	g.Expect(bed.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: hook.Name}, &corev1.Pod{})).To(Succeed(), "the hook's pod stays")
}
