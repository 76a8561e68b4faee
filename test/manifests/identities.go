package manifests

import (
	"context"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/test/testbed"
)

// Namespace is the namespace config/default installs kmaint into.
const Namespace = "kmaint-system"

// InstallIdentities applies config/default's namespace, service accounts,
// RBAC, admission policies and the hook pods' PriorityClass for real, and
// not its workloads: a test runs the operator itself, or none.
func InstallIdentities(t testing.TB, bed *testbed.Bed, owner string) {
	t.Helper()
	for _, u := range Kustomize(t, "default") {
		switch u.GetKind() {
		case "Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding",
			"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "PriorityClass":
			if err := Apply(context.Background(), bed.Client, owner, u); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// DaemonPod creates the pod the daemon of node runs in, as the DaemonSet
// would, for a token bound to it.
func DaemonPod(t testing.TB, bed *testbed.Bed, node string) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: "kmaint-daemon-" + node},
		Spec: corev1.PodSpec{
			ServiceAccountName: "kmaint-daemon",
			NodeName:           node,
			Containers:         []corev1.Container{{Name: "daemon", Image: "kmaint"}},
		},
	}
	if err := bed.Client.Create(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	return pod
}

// PodToken requests a token of the pod's service account bound to the pod,
// as the kubelet projects it: the API server adds the pod's node.
func PodToken(t testing.TB, bed *testbed.Bed, pod *corev1.Pod) string {
	t.Helper()
	tr, err := kubernetes.NewForConfigOrDie(bed.Config).CoreV1().ServiceAccounts(pod.Namespace).CreateToken(context.Background(),
		pod.Spec.ServiceAccountName, &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
			ExpirationSeconds: ptr.To[int64](3600),
			BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
		}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// TokenConfig is a client config of the bed's API server that
// authenticates with token alone.
func TokenConfig(bed *testbed.Bed, token string) *rest.Config {
	return &rest.Config{
		Host:            bed.Config.Host,
		TLSClientConfig: rest.TLSClientConfig{CAData: bed.Config.CAData},
		BearerToken:     token,
	}
}

// TokenClient is a client that authenticates with token alone.
func TokenClient(t testing.TB, bed *testbed.Bed, token string) client.Client {
	t.Helper()
	c, err := client.New(TokenConfig(bed, token), client.Options{Scheme: bed.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
