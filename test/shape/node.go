package shape

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kmaint/kmaint/test/gen"
)

// A realistic Node is modelled on an EKS managed node group's m5.2xlarge
// worker (Amazon Linux 2, containerd, the VPC CNI with Calico for network
// policy, the EBS CSI driver), as `kubectl get node -o json` shows one. The
// numbers are picked to match such a node, not copied from a source:
//   - status.images: the kubelet reports at most 50 images, largest first
//     (--node-status-max-images, 50 by default); a node that has run a
//     while has more than that cached, so it reports 50, half under two
//     names (repo@digest and repo:tag), half pulled by digest only (pinned
//     by an image automation tool or a chart) under one;
//   - about 25 labels, as the kubelet (kubernetes.io/*, the deprecated
//     beta.kubernetes.io/*), the cloud provider (topology.*,
//     failure-domain.*, node.kubernetes.io/instance-type), EKS
//     (eks.amazonaws.com/*), the CSI driver and the cluster's owners set
//     them;
//   - the annotations the kubelet, the CSI node plugin and the CNI write;
//   - five addresses (InternalIP, ExternalIP, Hostname, InternalDNS,
//     ExternalDNS), capacity and allocatable of an 8-CPU 32 GiB machine
//     with the VPC CNI's 58 pods, five conditions with the kubelet's and
//     Calico's messages, nodeInfo, providerID, podCIDRs, daemonEndpoints.
//
// Served without managedFields, one is 12-16 KB of JSON (14.4 KB on
// average; TestRealisticNodeSurvivesReboot checks the band).
const (
	realisticMaxImages   = 50
	realisticCatalogSize = 80
	// Region is the cloud region the nodes (and the pods' images) are in.
	Region            = "us-east-1"
	realisticInstance = "m5.2xlarge"
	realisticKubelet  = "v1.29.3-eks-ae9a62a"
)

var realisticZones = []string{"us-east-1a", "us-east-1b", "us-east-1c"}

// NodeRand is a node's own random source: the same name gives the same
// node, so a test sees what a bench sees.
func NodeRand(name string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(name))
	return rand.New(rand.NewPCG(h.Sum64(), 0x6b6d61696e74))
}

// Hex is n hex digits derived from s, for digests and ids that look real
// and stay the same for one name.
func Hex(s string, n int) string {
	sum := sha256.Sum256([]byte(s))
	out := hex.EncodeToString(sum[:])
	for len(out) < n {
		sum = sha256.Sum256(sum[:])
		out += hex.EncodeToString(sum[:])
	}
	return out[:n]
}

// RealisticNode is the i-th Node of a pool as the simulated cluster
// registers it with Config.Realistic set, before its daemon writes its
// annotations: for benchmarks of what such a node costs.
func RealisticNode(name, pool string, i int, addr, bootID string) *corev1.Node {
	n := gen.Node(name, gen.Labels("pool", pool), gen.BootID(bootID))
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: addr}, {Type: corev1.NodeHostName, Address: name}}
	shapeNode(n, i, addr)
	return n
}

// shapeNode dresses a Node the way a cloud node's kubelet, cloud provider
// and CNI leave it. i is the node's index in the cluster, addr its
// InternalIP; the boot ID and the pool label are the simulation's and are
// not touched.
func shapeNode(n *corev1.Node, i int, addr string) {
	r := NodeRand(n.Name)
	zone := realisticZones[i%len(realisticZones)]
	instanceID := "i-0" + Hex("instance/"+n.Name, 16)
	internalDNS := fmt.Sprintf("ip-%s.ec2.internal", dashed(addr))
	external := fmt.Sprintf("198.18.%d.%d", i>>8&255, i&255)
	externalDNS := fmt.Sprintf("ec2-%s.compute-1.amazonaws.com", dashed(external))
	pool := n.Labels["pool"]

	for k, v := range map[string]string{
		"beta.kubernetes.io/arch":                       "amd64",
		"beta.kubernetes.io/instance-type":              realisticInstance,
		"beta.kubernetes.io/os":                         "linux",
		"eks.amazonaws.com/capacityType":                "ON_DEMAND",
		"eks.amazonaws.com/nodegroup":                   pool,
		"eks.amazonaws.com/nodegroup-image":             "ami-0" + Hex("ami/"+pool, 16),
		"eks.amazonaws.com/sourceLaunchTemplateId":      "lt-0" + Hex("lt/"+pool, 16),
		"eks.amazonaws.com/sourceLaunchTemplateVersion": "7",
		"failure-domain.beta.kubernetes.io/region":      Region,
		"failure-domain.beta.kubernetes.io/zone":        zone,
		"k8s.io/cloud-provider-aws":                     Hex("cluster", 32),
		"kubernetes.io/arch":                            "amd64",
		"kubernetes.io/hostname":                        n.Name,
		"kubernetes.io/os":                              "linux",
		"node.kubernetes.io/instance-type":              realisticInstance,
		"topology.ebs.csi.aws.com/zone":                 zone,
		"topology.k8s.aws/zone-id":                      fmt.Sprintf("use1-az%d", i%len(realisticZones)+1),
		"topology.kubernetes.io/region":                 Region,
		"topology.kubernetes.io/zone":                   zone,
		"alpha.eksctl.io/cluster-name":                  "prod-main",
		"alpha.eksctl.io/nodegroup-name":                pool,
		"vpc.amazonaws.com/has-trunk-attached":          "false",
		"node.kubernetes.io/lifecycle":                  "normal",
		"example.com/team":                              "platform",
		"example.com/workload-class":                    "general",
		"example.com/cost-center":                       "cc-4711",
	} {
		n.Labels[k] = v
	}
	for k, v := range map[string]string{
		"alpha.kubernetes.io/provided-node-ip":                   addr,
		"csi.volume.kubernetes.io/nodeid":                        fmt.Sprintf(`{"ebs.csi.aws.com":"%s"}`, instanceID),
		"node.alpha.kubernetes.io/ttl":                           "0",
		"volumes.kubernetes.io/controller-managed-attach-detach": "true",
		"projectcalico.org/IPv4Address":                          addr + "/19",
		"projectcalico.org/IPv4VXLANTunnelAddr":                  fmt.Sprintf("100.64.%d.%d", i>>6&255, (i&63)<<2|1),
		"cluster-autoscaler.kubernetes.io/scale-down-disabled":   "false",
	} {
		n.Annotations[k] = v
	}

	podCIDR := fmt.Sprintf("100.64.%d.%d/26", i>>2&255, (i&3)<<6)
	n.Spec.PodCIDR, n.Spec.PodCIDRs = podCIDR, []string{podCIDR}
	n.Spec.ProviderID = fmt.Sprintf("aws:///%s/%s", zone, instanceID)

	s := &n.Status
	s.Capacity = corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("8"),
		corev1.ResourceMemory:           resource.MustParse("32386524Ki"),
		corev1.ResourceEphemeralStorage: resource.MustParse("104845292Ki"),
		corev1.ResourcePods:             resource.MustParse("58"),
		"hugepages-1Gi":                 resource.MustParse("0"),
		"hugepages-2Mi":                 resource.MustParse("0"),
	}
	s.Allocatable = corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("7910m"),
		corev1.ResourceMemory:           resource.MustParse("31369692Ki"),
		corev1.ResourceEphemeralStorage: resource.MustParse("95551679124"),
		corev1.ResourcePods:             resource.MustParse("58"),
		"hugepages-1Gi":                 resource.MustParse("0"),
		"hugepages-2Mi":                 resource.MustParse("0"),
	}
	s.Addresses = []corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: addr},
		{Type: corev1.NodeExternalIP, Address: external},
		{Type: corev1.NodeHostName, Address: n.Name},
		{Type: corev1.NodeInternalDNS, Address: internalDNS},
		{Type: corev1.NodeExternalDNS, Address: externalDNS},
	}
	s.Conditions = realisticConditions(s.Conditions, time.Now())
	s.DaemonEndpoints = corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: 10250}}
	s.NodeInfo = corev1.NodeSystemInfo{
		MachineID:               "ec2" + Hex("machine/"+n.Name, 29),
		SystemUUID:              "ec2" + Hex("uuid/"+n.Name, 5) + "-" + Hex("uuid2/"+n.Name, 4) + "-" + Hex("uuid3/"+n.Name, 4) + "-" + Hex("uuid4/"+n.Name, 4) + "-" + Hex("uuid5/"+n.Name, 12),
		BootID:                  s.NodeInfo.BootID,
		KernelVersion:           "5.10.217-205.860.amzn2.x86_64",
		OSImage:                 "Amazon Linux 2",
		ContainerRuntimeVersion: "containerd://1.7.11",
		KubeletVersion:          realisticKubelet,
		KubeProxyVersion:        realisticKubelet,
		OperatingSystem:         "linux",
		Architecture:            "amd64",
	}
	s.Images = realisticImages(r)
	s.RuntimeHandlers = []corev1.NodeRuntimeHandler{
		{Name: "runc", Features: &corev1.NodeRuntimeHandlerFeatures{RecursiveReadOnlyMounts: ptr.To(true), UserNamespaces: ptr.To(false)}},
	}
	vol := corev1.UniqueVolumeName("kubernetes.io/csi/ebs.csi.aws.com^vol-0" + Hex("vol/"+n.Name, 16))
	s.VolumesInUse = []corev1.UniqueVolumeName{vol}
	s.VolumesAttached = []corev1.AttachedVolume{{Name: vol}}
}

// realisticConditions returns the node's conditions as a kubelet and a CNI
// report them, keeping the Ready condition's status from ready (the
// simulation's). The kubelet's own four come in its order.
func realisticConditions(ready []corev1.NodeCondition, now time.Time) []corev1.NodeCondition {
	t := metav1.NewTime(now.Truncate(time.Second))
	readyStatus := corev1.ConditionTrue
	for _, c := range ready {
		if c.Type == corev1.NodeReady {
			readyStatus = c.Status
		}
	}
	cond := func(typ corev1.NodeConditionType, status corev1.ConditionStatus, reason, msg string) corev1.NodeCondition {
		return corev1.NodeCondition{Type: typ, Status: status, Reason: reason, Message: msg, LastHeartbeatTime: t, LastTransitionTime: t}
	}
	return []corev1.NodeCondition{
		cond(corev1.NodeNetworkUnavailable, corev1.ConditionFalse, "CalicoIsUp", "Calico is running on this node"),
		cond(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
		cond(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
		cond(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
		cond(corev1.NodeReady, readyStatus, "KubeletReady", "kubelet is posting ready status"),
	}
}

// realisticImages are the images a node reports: 50 of a catalog of 80,
// the node's own pick, largest first as the kubelet sorts them.
func realisticImages(r *rand.Rand) []corev1.ContainerImage {
	catalog := imageCatalog()
	r.Shuffle(len(catalog), func(a, b int) { catalog[a], catalog[b] = catalog[b], catalog[a] })
	images := catalog[:realisticMaxImages]
	slices.SortStableFunc(images, func(a, b corev1.ContainerImage) int { return cmp.Compare(b.SizeBytes, a.SizeBytes) })
	return images
}

// systemImages are what every EKS node runs or has pulled: the add-ons'
// images, with a size of the order the registry shows.
var systemImages = []struct {
	repo, tag string
	size      int64
}{
	{"602401143452.dkr.ecr.us-east-1.amazonaws.com/eks/pause", "3.5", 298689},
	{"602401143452.dkr.ecr.us-east-1.amazonaws.com/eks/kube-proxy", "v1.29.3-minimal-eksbuild.2", 34712567},
	{"602401143452.dkr.ecr.us-east-1.amazonaws.com/amazon-k8s-cni", "v1.18.1-eksbuild.1", 45103820},
	{"602401143452.dkr.ecr.us-east-1.amazonaws.com/amazon-k8s-cni-init", "v1.18.1-eksbuild.1", 58270511},
	{"602401143452.dkr.ecr.us-east-1.amazonaws.com/amazon/aws-network-policy-agent", "v1.1.1-eksbuild.1", 33190212},
	{"602401143452.dkr.ecr.us-east-1.amazonaws.com/eks/aws-ebs-csi-driver", "v1.30.0", 31766734},
	{"602401143452.dkr.ecr.us-east-1.amazonaws.com/eks/csi-node-driver-registrar", "v2.10.1-eks-1-30-4", 9814563},
	{"602401143452.dkr.ecr.us-east-1.amazonaws.com/eks/livenessprobe", "v2.12.0-eks-1-30-4", 9201318},
	{"602401143452.dkr.ecr.us-east-1.amazonaws.com/eks/coredns", "v1.11.1-eksbuild.9", 16213845},
	{"quay.io/prometheus/node-exporter", "v1.8.1", 12331452},
	{"public.ecr.aws/aws-observability/aws-for-fluent-bit", "2.32.2", 127302140},
	{"docker.io/calico/node", "v3.27.3", 117013426},
	{"docker.io/calico/cni", "v3.27.3", 94612218},
	{"ghcr.io/kmaint/kmaint", "v0.9.0", 21337120},
	{"registry.k8s.io/ingress-nginx/controller", "v1.10.1", 105420133},
	{"quay.io/jetstack/cert-manager-cainjector", "v1.14.5", 13104223},
	{"docker.io/grafana/promtail", "2.9.3", 84015522},
	{"docker.io/istio/proxyv2", "1.21.2", 94417650},
}

// imageCatalog is every image a node of the cluster may have cached: the
// system images and the teams' service images, a few versions each.
func imageCatalog() []corev1.ContainerImage {
	out := make([]corev1.ContainerImage, 0, realisticCatalogSize)
	add := func(repo, tag string, size int64) {
		digest := repo + "@sha256:" + Hex(repo+":"+tag, 64)
		names := []string{digest, repo + ":" + tag}
		if len(out)%2 == 1 {
			names = names[:1]
		}
		out = append(out, corev1.ContainerImage{Names: names, SizeBytes: size})
	}
	for _, im := range systemImages {
		add(im.repo, im.tag, im.size)
	}
	services := []string{"checkout", "payments", "search-api", "catalog", "recommendations", "user-profile", "notifications",
		"inventory", "shipping", "auth-gateway", "reporting-worker", "image-resizer", "pricing", "session-store", "audit-log"}
	for i := 0; len(out) < realisticCatalogSize; i++ {
		svc := services[i%len(services)]
		tag := fmt.Sprintf("v2.%d.%d-%s", 10+i/len(services), i%9, Hex(fmt.Sprint(svc, i), 7))
		add("123456789012.dkr.ecr.us-east-1.amazonaws.com/shop/"+svc, tag, 60_000_000+int64(i)*7_919_113%400_000_000)
	}
	return out
}

// dashed writes an IPv4 address as EC2 host names do: 10.0.1.2 as 10-0-1-2.
func dashed(ip string) string {
	out := []byte(ip)
	for i, c := range out {
		if c == '.' {
			out[i] = '-'
		}
	}
	return string(out)
}
