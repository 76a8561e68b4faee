package sim

import (
	"errors"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/shape"
)

// nodeAgent is a DaemonSet every node of a cloud cluster runs: a drain
// leaves its pod where it is (kubectl's drain skips a pod whose DaemonSet
// exists, and asks the API server whether it does).
type nodeAgent struct {
	namespace, name string
	hostNetwork     bool
	containers      []agentContainer
}

type agentContainer struct {
	name, image string
	cpu, memory string
}

// nodeAgents are those of an EKS cluster like the one realistic nodes are
// modelled on, in the order a node gets them: the proxy, the CNI, the CSI
// node plugin, the metrics and log agents, kmaint's own daemon, and
// Calico for network policy. More than these repeat the list.
var nodeAgents = []nodeAgent{
	{"kube-system", "kube-proxy", true, []agentContainer{{"kube-proxy", "602401143452.dkr.ecr.us-east-1.amazonaws.com/eks/kube-proxy:v1.29.3-minimal-eksbuild.2", "100m", "64Mi"}}},
	{"kube-system", "aws-node", true, []agentContainer{
		{"aws-node", "602401143452.dkr.ecr.us-east-1.amazonaws.com/amazon-k8s-cni:v1.18.1-eksbuild.1", "25m", "64Mi"},
		{"aws-eks-nodeagent", "602401143452.dkr.ecr.us-east-1.amazonaws.com/amazon/aws-network-policy-agent:v1.1.1-eksbuild.1", "25m", "64Mi"},
	}},
	{"kube-system", "ebs-csi-node", false, []agentContainer{
		{"ebs-plugin", "602401143452.dkr.ecr.us-east-1.amazonaws.com/eks/aws-ebs-csi-driver:v1.30.0", "10m", "40Mi"},
		{"node-driver-registrar", "602401143452.dkr.ecr.us-east-1.amazonaws.com/eks/csi-node-driver-registrar:v2.10.1-eks-1-30-4", "10m", "40Mi"},
		{"liveness-probe", "602401143452.dkr.ecr.us-east-1.amazonaws.com/eks/livenessprobe:v2.12.0-eks-1-30-4", "10m", "40Mi"},
	}},
	{"monitoring", "node-exporter", true, []agentContainer{{"node-exporter", "quay.io/prometheus/node-exporter:v1.8.1", "50m", "64Mi"}}},
	{"logging", "fluent-bit", false, []agentContainer{{"fluent-bit", "public.ecr.aws/aws-observability/aws-for-fluent-bit:2.32.2", "100m", "200Mi"}}},
	{"kmaint-system", "kmaint-daemon", false, []agentContainer{{"daemon", "ghcr.io/kmaint/kmaint:v0.9.0", "10m", "32Mi"}}},
	{"calico-system", "calico-node", true, []agentContainer{{"calico-node", "docker.io/calico/node:v3.27.3", "250m", "128Mi"}}},
}

// agents are the first n node agents, the list repeated under numbered
// names when n is larger.
func agents(n int) []nodeAgent {
	out := make([]nodeAgent, 0, n)
	for i := range n {
		a := nodeAgents[i%len(nodeAgents)]
		if k := i / len(nodeAgents); k > 0 {
			a.name = fmt.Sprintf("%s-%d", a.name, k)
		}
		out = append(out, a)
	}
	return out
}

// template is the pod template of the agent's DaemonSet.
func (a nodeAgent) template() corev1.PodTemplateSpec {
	t := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app.kubernetes.io/name": a.name}},
		Spec: corev1.PodSpec{
			HostNetwork:        a.hostNetwork,
			PriorityClassName:  "system-node-critical",
			Priority:           ptr.To[int32](2000001000),
			ServiceAccountName: a.name,
			Tolerations:        []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Volumes: []corev1.Volume{
				{Name: "host-root", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/", Type: ptr.To(corev1.HostPathDirectory)}}},
				{Name: "var-log", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/log", Type: ptr.To(corev1.HostPathDirectoryOrCreate)}}},
				{Name: "run", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/run", Type: ptr.To(corev1.HostPathDirectory)}}},
				serviceAccountVolume(),
			},
		},
	}
	for _, c := range a.containers {
		t.Spec.Containers = append(t.Spec.Containers, corev1.Container{
			Name: c.name, Image: c.image,
			Args: []string{"--v=2", "--hostname-override=$(NODE_NAME)"},
			Env: []corev1.EnvVar{
				{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "spec.nodeName"}}},
				{Name: "AWS_REGION", Value: shape.Region},
			},
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(c.cpu), corev1.ResourceMemory: resource.MustParse(c.memory)},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(c.memory)},
			},
			VolumeMounts: []corev1.VolumeMount{
				{Name: "host-root", MountPath: "/host", ReadOnly: true, MountPropagation: ptr.To(corev1.MountPropagationHostToContainer)},
				{Name: "var-log", MountPath: "/var/log"},
				{Name: "run", MountPath: "/run"},
				{Name: "kube-api-access", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true},
			},
			SecurityContext:          &corev1.SecurityContext{Privileged: ptr.To(true)},
			TerminationMessagePath:   "/dev/termination-log",
			TerminationMessagePolicy: corev1.TerminationMessageReadFile,
			ImagePullPolicy:          corev1.PullIfNotPresent,
		})
	}
	podDefaults(&t.Spec)
	return t
}

// createNodeAgents creates the namespaces and DaemonSets of the first n
// node agents, and returns the DaemonSets, which the nodes' agent pods
// name as their owner. Clusters on one API server share them.
func (c *Cluster) createNodeAgents(n int) ([]*appsv1.DaemonSet, error) {
	var out []*appsv1.DaemonSet
	for _, a := range agents(n) {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: a.namespace}}
		if err := c.Bed.Client.Create(c.ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("create namespace %s: %w", a.namespace, err)
		}
		t := a.template()
		ds := &appsv1.DaemonSet{
			ObjectMeta: metav1.ObjectMeta{Namespace: a.namespace, Name: a.name, Labels: t.Labels},
			Spec: appsv1.DaemonSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: t.Labels},
				Template: t,
			},
		}
		err := c.Bed.Client.Create(c.ctx, ds)
		if apierrors.IsAlreadyExists(err) {
			err = c.Bed.Client.Get(c.ctx, client.ObjectKey{Namespace: a.namespace, Name: a.name}, ds)
		}
		if err != nil {
			return nil, fmt.Errorf("create daemonset %s/%s: %w", a.namespace, a.name, err)
		}
		out = append(out, ds)
	}
	return out, nil
}

// createAgentPods creates the node's pod of each DaemonSet, as the
// DaemonSet controller and the node's kubelet would.
func (c *Cluster) createAgentPods(node, hostIP string) error {
	var errs []error
	for _, ds := range c.daemonSets {
		t := ds.Spec.Template.DeepCopy()
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: ds.Namespace, Name: ds.Name + "-" + shape.Hex(node+"/"+ds.Name, 10),
				Labels: t.Labels, Annotations: map[string]string{"kubectl.kubernetes.io/default-container": t.Spec.Containers[0].Name},
				OwnerReferences: []metav1.OwnerReference{{
					APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name, UID: ds.UID,
					Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
				}},
			},
			Spec: t.Spec,
		}
		p.Labels["controller-revision-hash"] = shape.Hex("rev/"+ds.Name, 10)
		p.Labels["pod-template-generation"] = "1"
		p.Spec.NodeName = node
		// The DaemonSet controller pins each pod to its node.
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}}}},
		}}}
		p.Status = runningStatus(p, hostIP, p.Spec.HostNetwork)
		errs = append(errs, gen.CreatePod(c.ctx, c.Bed.Client, p))
	}
	return errors.Join(errs...)
}

// PodNamespaces are the namespaces the cluster's pods run in: its
// workload's and its DaemonSets'.
func (c *Cluster) PodNamespaces() []string {
	var out []string
	if c.Config.PodsPerNode > 0 {
		ns, _ := c.workload()
		out = append(out, ns)
	}
	for _, ds := range c.daemonSets {
		if !slices.Contains(out, ds.Namespace) {
			out = append(out, ds.Namespace)
		}
	}
	return out
}
