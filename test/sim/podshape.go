package sim

import (
	"fmt"
	"hash/fnv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kmaint/kmaint/test/shape"
)

// Realistic pods are shaped like a Deployment's pod as the API server
// holds it after admission and after its kubelet reported it running:
// resources, env, probes, the projected service-account volume the
// admission plugin adds, the default tolerations, and a status with
// container statuses and IPs. Served without managedFields, one is 3-5 KB
// of JSON (TestRealisticPodSizes measures it): the drain lists them, and
// etcd and every pod informer hold them.

// shapeWorkloadPod dresses a workload pod (gen.Pod's) of app on the node
// at hostIP.
func shapeWorkloadPod(p *corev1.Pod, app, hostIP string) {
	hash := shape.Hex("rs/"+app, 10)
	p.Labels["pod-template-hash"] = hash
	p.Labels["app.kubernetes.io/name"] = app
	p.Labels["app.kubernetes.io/version"] = "2.14.3"
	p.Labels["example.com/team"] = "checkout"
	p.Annotations = map[string]string{
		"kubectl.kubernetes.io/restartedAt": "2026-11-03T09:12:44Z",
		"prometheus.io/scrape":              "true",
		"prometheus.io/port":                "9090",
	}
	p.OwnerReferences[0].Name = app + "-" + hash
	image := "123456789012.dkr.ecr.us-east-1.amazonaws.com/shop/" + app + ":v2.14.3-" + shape.Hex(app, 7)
	env := []corev1.EnvVar{
		{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}},
		{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}},
		{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "spec.nodeName"}}},
		{Name: "GOMAXPROCS", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "app", Resource: "limits.cpu", Divisor: resource.MustParse("1")}}},
		{Name: "LOG_LEVEL", Value: "info"},
		{Name: "HTTP_ADDR", Value: ":8080"},
		{Name: "METRICS_ADDR", Value: ":9090"},
		{Name: "DATABASE_URL", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: app + "-db"}, Key: "url"}}},
	}
	probe := func(path string, delay int32) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler:        corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromString("http"), Scheme: corev1.URISchemeHTTP}},
			InitialDelaySeconds: delay, TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3,
		}
	}
	p.Spec.Containers = []corev1.Container{{
		Name:  "app",
		Image: image,
		Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}, {Name: "metrics", ContainerPort: 9090, Protocol: corev1.ProtocolTCP}},
		Env:   env,
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("512Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")},
		},
		VolumeMounts: []corev1.VolumeMount{
			{Name: "config", MountPath: "/etc/" + app, ReadOnly: true},
			{Name: "kube-api-access", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true},
		},
		ReadinessProbe:           probe("/readyz", 5),
		TerminationMessagePath:   "/dev/termination-log",
		TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		ImagePullPolicy:          corev1.PullIfNotPresent,
		SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true), RunAsNonRoot: ptr.To(true),
			Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		},
	}}
	p.Spec.Volumes = []corev1.Volume{
		{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: app + "-config"}, DefaultMode: ptr.To[int32](0o644)}}},
		serviceAccountVolume(),
	}
	p.Spec.ServiceAccountName = app
	p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
		Weight:          100,
		PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: "topology.kubernetes.io/zone", LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}},
	}}}}
	podDefaults(&p.Spec)
	p.Spec.Tolerations = defaultTolerations()
	p.Status = runningStatus(p, hostIP, false)
}

// serviceAccountVolume is the volume the ServiceAccount admission plugin
// adds to every pod.
func serviceAccountVolume() corev1.Volume {
	return corev1.Volume{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		DefaultMode: ptr.To[int32](0o644),
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{ExpirationSeconds: ptr.To[int64](3607), Path: "token"}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
		},
	}}}
}

// podDefaults are the fields the API server defaults in every pod.
func podDefaults(s *corev1.PodSpec) {
	s.RestartPolicy = corev1.RestartPolicyAlways
	s.DNSPolicy = corev1.DNSClusterFirst
	s.SchedulerName = corev1.DefaultSchedulerName
	s.SecurityContext = &corev1.PodSecurityContext{FSGroup: ptr.To[int64](65532), RunAsUser: ptr.To[int64](65532), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
	s.EnableServiceLinks = ptr.To(true)
	s.PreemptionPolicy = ptr.To(corev1.PreemptLowerPriority)
	if s.TerminationGracePeriodSeconds == nil {
		s.TerminationGracePeriodSeconds = ptr.To[int64](30)
	}
}

// defaultTolerations are the ones the DefaultTolerationSeconds admission
// plugin adds.
func defaultTolerations() []corev1.Toleration {
	return []corev1.Toleration{
		{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
		{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
	}
}

// runningStatus is the status a kubelet reports for the pod once its
// containers run. A pod on the host network has the node's IP.
func runningStatus(p *corev1.Pod, hostIP string, hostNetwork bool) corev1.PodStatus {
	h := fnv.New32a()
	h.Write([]byte(p.Name))
	sum := h.Sum32()
	podIP := fmt.Sprintf("100.64.%d.%d", sum>>8&255, sum&255)
	if hostNetwork {
		podIP = hostIP
	}
	started := metav1.NewTime(time.Now().Truncate(time.Second))
	cond := func(t corev1.PodConditionType) corev1.PodCondition {
		return corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: started}
	}
	st := corev1.PodStatus{
		Phase: corev1.PodRunning,
		Conditions: []corev1.PodCondition{
			cond("PodReadyToStartContainers"), cond(corev1.PodInitialized), cond(corev1.PodReady),
			cond(corev1.ContainersReady), cond(corev1.PodScheduled),
		},
		HostIP: hostIP, HostIPs: []corev1.HostIP{{IP: hostIP}},
		PodIP: podIP, PodIPs: []corev1.PodIP{{IP: podIP}},
		StartTime: &started,
	}
	for _, c := range p.Spec.Containers {
		st.ContainerStatuses = append(st.ContainerStatuses, corev1.ContainerStatus{
			Name:         c.Name,
			State:        corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}},
			Ready:        true,
			Started:      ptr.To(true),
			Image:        c.Image,
			ImageID:      c.Image[:strings.LastIndexByte(c.Image, ':')] + "@sha256:" + shape.Hex(c.Image, 64),
			ContainerID:  "containerd://" + shape.Hex(p.Name+"/"+c.Name, 64),
			RestartCount: 0,
		})
	}
	return st
}
