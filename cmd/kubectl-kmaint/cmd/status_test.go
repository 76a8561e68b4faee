package cmd_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/cmd/kubectl-kmaint/cmd"
	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/harness"
)

// A pool with one node held draining by a PodDisruptionBudget and another
// waiting for budget, made for real by the operator: status shows both,
// the pool blocked with its budget spent; once the budget lets go both
// reboot, and the node's history lists its requests newest first.
func TestStatusAndHistoryOfARealRollout(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	harness.CreateNamespace(t, bed, "st")
	harness.CreateTemporary(t, bed, gen.Pool("st", intstr.FromInt32(1)))
	nodes := harness.CreateNodes(t, bed, "st", "st", 3)
	g.Expect(gen.CreatePod(ctx, bed.Client, gen.Pod("st", "db-0", nodes[0], map[string]string{"app": "db"}))).To(Succeed())
	g.Expect(gen.PDB(ctx, bed.Client, "st", "db", map[string]string{"app": "db"}, 0)).To(Succeed())
	harness.RaiseMaintenances(t, bed, nodes...)
	harness.RunDaemons(t, bed, "st", true)
	harness.StartOperator(t, bed)

	out, err := run(t, "request", nodes[0], "--reason", "kernel 6.12.9")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(MatchRegexp(`nodemaintenance/st-0-\w+ created`))
	g.Eventually(func(g Gomega) {
		var buf bytes.Buffer
		g.Expect(cmd.Status(ctx, bed.Client, &buf, cmd.StatusOptions{Pool: "st"})).To(Succeed())
		g.Expect(buf.String()).To(MatchRegexp(`st-0\s+st\s+Draining\s+api: `))
	}, timeout).Should(Succeed())
	_, err = cmd.Request(ctx, bed.Client, &bytes.Buffer{}, cmd.RequestOptions{Node: nodes[1], Reason: "firmware"})
	g.Expect(err).NotTo(HaveOccurred())

	g.Eventually(func(g Gomega) {
		out, err := run(t, "status", "--pool", "st")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(out).To(MatchRegexp(`(?m)^st\s+3\s+\[-{20}\] 0/2 rebooted\s+1/1\s+1\s+Blocked: BudgetExhausted`))
		g.Expect(out).To(MatchRegexp(`st-0\s+st\s+Draining\s+api: `))
		g.Expect(out).To(MatchRegexp(`st-1\s+st\s+Requested\s+api: `))
		g.Expect(out).To(MatchRegexp(`st-2\s+st\s+Idle\s+-`))
	}, timeout).Should(Succeed())
	t.Log(run(t, "status", "--pool", "st"))

	// -o wide adds the boot ID and how long each node has been so.
	out, err = run(t, "status", "--pool", "st", "-o", "wide")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(MatchRegexp(`st-0\s+st\s+Draining\s+api: test \S+\s+true\s+boot-0\s+\d+s`))
	g.Expect(out).To(ContainSubstring("BOOT ID"))

	// -o json and -o yaml parse back into the objects they came from.
	for _, format := range []string{"json", "yaml"} {
		out, err := run(t, "status", "--pool", "st", "-o", format)
		g.Expect(err).NotTo(HaveOccurred())
		_, kinds := parseList(g, []byte(out))
		g.Expect(kinds).To(ContainElements("MaintenancePool/st", "Node/st-0", "Node/st-1", "Node/st-2"), format)
		g.Expect(kinds).To(ContainElement(MatchRegexp(`NodeMaintenance/st-1-`)), format)
	}

	// Let the drain through: both nodes reboot, one after the other.
	g.Expect(bed.Client.Delete(ctx, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "st", Name: "db"}})).To(Succeed())
	g.Eventually(func(g Gomega) {
		var list v1alpha1.NodeMaintenanceList
		g.Expect(bed.Client.List(ctx, &list, client.MatchingFields{"spec.nodeName": nodes[1]})).To(Succeed())
		g.Expect(list.Items).To(HaveLen(1))
		g.Expect(list.Items[0].Status.Phase).To(Equal(v1alpha1.PhaseSucceeded))
	}, timeout).Should(Succeed())
	// The pool's counts follow the NodeMaintenance's phase a moment later
	// (the gate writes them when it next sees the node).
	g.Eventually(func(g Gomega) {
		out, err := run(t, "status", "--pool", "st")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(out).To(MatchRegexp(`(?m)^st\s+3\s+nothing to reboot\s+0/1\s+0\s+OK`))
	}, timeout).Should(Succeed())

	// A second request for st-0, a second later: history lists it first.
	var first v1alpha1.NodeMaintenanceList
	g.Expect(bed.Client.List(ctx, &first, client.MatchingFields{"spec.nodeName": nodes[0]})).To(Succeed())
	g.Expect(first.Items).To(HaveLen(1))
	g.Eventually(func() bool {
		return time.Now().Truncate(time.Second).After(first.Items[0].CreationTimestamp.Time)
	}, timeout, 50*time.Millisecond).Should(BeTrue())
	second, err := cmd.Request(ctx, bed.Client, &bytes.Buffer{}, cmd.RequestOptions{Node: nodes[0], Reason: "again"})
	g.Expect(err).NotTo(HaveOccurred())
	out, err = run(t, "history", nodes[0])
	g.Expect(err).NotTo(HaveOccurred())
	t.Log(out)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	g.Expect(lines).To(HaveLen(3))
	g.Expect(lines[0]).To(MatchRegexp(`^NAME\s+CREATED\s+SOURCE\s+PHASE\s+REASON`))
	g.Expect(lines[1]).To(HavePrefix(second.Name))
	g.Expect(lines[2]).To(HavePrefix(first.Items[0].Name))
	g.Expect(lines[2]).To(MatchRegexp(`api\s+Succeeded\s+kernel 6.12.9\s+boot-0 -> boot-0-r1\s+Pending \d\d:\d\d:\d\d \d+s, .*Draining \d\d:\d\d:\d\d \d+s, (Approved \d\d:\d\d:\d\d \d+s, )?Rebooting \d\d:\d\d:\d\d \d+s, Succeeded \d\d:\d\d:\d\d$`))

	// -o yaml is the NodeMaintenances, newest first.
	out, err = run(t, "history", nodes[0], "-o", "yaml")
	g.Expect(err).NotTo(HaveOccurred())
	objs, _ := parseList(g, []byte(out))
	g.Expect(objs).To(HaveLen(2))
	g.Expect(objs[0].(*v1alpha1.NodeMaintenance).Name).To(Equal(second.Name))
	g.Expect(objs[1].(*v1alpha1.NodeMaintenance).Status.Phase).To(Equal(v1alpha1.PhaseSucceeded))
}

// parseList decodes a List printed as JSON or YAML into typed objects, and
// names each as Kind/name.
func parseList(g Gomega, data []byte) ([]client.Object, []string) {
	j, err := yaml.YAMLToJSON(data)
	g.Expect(err).NotTo(HaveOccurred())
	var list corev1.List
	g.Expect(json.Unmarshal(j, &list)).To(Succeed())
	g.Expect(list.Kind).To(Equal("List"))
	dec := serializer.NewCodecFactory(bed.Scheme).UniversalDeserializer()
	var objs []client.Object
	var names []string
	for _, item := range list.Items {
		obj, gvk, err := dec.Decode(item.Raw, nil, nil)
		g.Expect(err).NotTo(HaveOccurred())
		objs = append(objs, obj.(client.Object))
		names = append(names, gvk.Kind+"/"+obj.(client.Object).GetName())
	}
	return objs, names
}
