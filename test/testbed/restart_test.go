package testbed

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestAnAPIServerRestartedKeepsItsDataAndItsClients: what was written is
// there after the restart, clients configured before reach it, and an
// informer whose watch ended hears of what changed after.
func TestAnAPIServerRestartedKeepsItsDataAndItsClients(t *testing.T) {
	g := NewWithT(t)
	b, err := Start(WithCompactionEvery(time.Second))
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { g.Expect(b.Stop()).To(Succeed()) })
	ctx := t.Context()

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kept", Namespace: "default"}, Data: map[string]string{"a": "1"}}
	g.Expect(b.Client.Create(ctx, cm)).To(Succeed())
	informers, err := cache.New(b.Config, cache.Options{Scheme: b.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	inf, err := informers.GetInformer(ctx, &corev1.ConfigMap{})
	g.Expect(err).NotTo(HaveOccurred())
	seen := make(chan string, 100)
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj any) { seen <- obj.(*corev1.ConfigMap).Data["a"] },
	})
	g.Expect(err).NotTo(HaveOccurred())
	go func() { _ = informers.Start(ctx) }()
	g.Expect(informers.WaitForCacheSync(ctx)).To(BeTrue())

	for round := range 2 { // the second restarts the restarted one
		g.Expect(b.RestartAPIServer(ctx, time.Second)).To(Succeed(), "round %d", round)
		var got corev1.ConfigMap
		g.Expect(b.Client.Get(ctx, client.ObjectKeyFromObject(cm), &got)).To(Succeed())
		want := string(rune('2' + round))
		got.Data["a"] = want
		g.Expect(b.Client.Update(ctx, &got)).To(Succeed())
		g.Eventually(seen, time.Minute).Should(Receive(Equal(want)))
	}
}
