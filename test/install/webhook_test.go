package install

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/test/harness"
	"github.com/kmaint/kmaint/test/manifests"
	"github.com/kmaint/kmaint/test/testbed"
)

// TestDefaultWebhookServesTLS runs the operator with the arguments of
// config/default's Deployment (ports moved to free ones), as the operator's
// service account under config/default's RBAC: its Alertmanager webhook
// serves HTTPS with the certificate it generated into
// kmaint-system/kmaint-alert-webhook-tls, which a client trusting that
// Secret's ca.crt accepts for the Service's name, and nothing over plain
// HTTP.
func TestDefaultWebhookServesTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the operator")
	}
	g := NewWithT(t)
	ctx := context.Background()
	installIdentities(t)
	// The operator makes its certificate Secret and CA ConfigMap under the
	// policy that confines what it creates.
	waitForPolicy(t, "kmaint-operator-creates", func() error {
		probe := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: fmt.Sprintf("probe-%d", time.Now().UnixNano())}}
		return clientWithToken(t, operatorToken(t)).Create(ctx, probe, client.DryRunAll)
	})
	token := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "kmaint-alert-webhook"},
		StringData: map[string]string{"token": "install-test-token"},
	}
	g.Expect(client.IgnoreAlreadyExists(bed.Client.Create(ctx, token))).To(Succeed())
	t.Cleanup(func() { _ = bed.Client.Delete(context.Background(), token) })

	var deploy appsv1.Deployment
	for _, u := range manifests.Kustomize(t, "default") {
		if u.GetKind() == "Deployment" {
			fromUnstructured(t, u, &deploy)
		}
	}
	ctr := deploy.Spec.Template.Spec.Containers[0]
	webhookAddr, metricsAddr := harness.FreeAddr(t), harness.FreeAddr(t)
	args := []string{"--leader-election-namespace=" + namespace}
	for _, arg := range ctr.Args {
		switch {
		case strings.HasPrefix(arg, "--metrics-bind-address="):
			arg = "--metrics-bind-address=" + metricsAddr
		case strings.HasPrefix(arg, "--health-probe-bind-address="):
			arg = arg[:strings.Index(arg, "=")+1] + "0"
		case strings.HasPrefix(arg, "--alert-webhook-bind-address="):
			arg = "--alert-webhook-bind-address=" + webhookAddr
		case arg == "--alert-webhook-insecure-http":
			t.Errorf("config/default serves the webhook over plain HTTP (%s)", arg)
		}
		args = append(args, arg)
	}

	dir := t.TempDir()
	bin := filepath.Join(dir, "kmaint-operator")
	build := exec.Command("go", "build", "-o", bin, "./cmd/kmaint-operator")
	build.Dir = testbed.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := bed.WriteKubeconfig(kubeconfig, "system:serviceaccount:"+namespace+":kmaint-operator",
		"system:serviceaccounts", "system:serviceaccounts:"+namespace); err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var logs bytes.Buffer
	op := exec.CommandContext(runCtx, bin, args...)
	op.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	op.Stdout, op.Stderr = &logs, &logs
	if err := op.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stop()
		_ = op.Wait()
		if t.Failed() {
			t.Logf("operator output:\n%s", logs.String())
		}
	})

	secret := &corev1.Secret{}
	g.Eventually(func() error {
		return bed.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "kmaint-alert-webhook-tls"}, secret)
	}, 60*time.Second, 200*time.Millisecond).Should(Succeed(), "the operator made no certificate Secret")
	t.Cleanup(func() { _ = bed.Client.Delete(context.Background(), secret) })
	// The CA alone is published in a ConfigMap, which is what people and
	// Alertmanager read: the Secret holds the keys.
	published := &corev1.ConfigMap{}
	g.Eventually(func() error {
		return bed.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "kmaint-alert-webhook-ca"}, published)
	}, 60*time.Second, 200*time.Millisecond).Should(Succeed(), "the operator published no CA")
	t.Cleanup(func() { _ = bed.Client.Delete(context.Background(), published) })
	g.Expect(published.Data).To(Equal(map[string]string{"ca.crt": string(secret.Data["ca.crt"])}), "the ConfigMap holds the CA's certificate and nothing else")
	pool := x509.NewCertPool()
	g.Expect(pool.AppendCertsFromPEM([]byte(published.Data["ca.crt"]))).To(BeTrue(), "no ca.crt in the ConfigMap")

	// The operator reads its Secrets by name, and no other.
	other := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "someone-elses"}, StringData: map[string]string{"k": "v"}}
	g.Expect(bed.Client.Create(ctx, other)).To(Succeed())
	t.Cleanup(func() { _ = bed.Client.Delete(context.Background(), other) })
	g.Expect(clientWithToken(t, operatorToken(t)).Get(ctx, client.ObjectKeyFromObject(other), &corev1.Secret{})).To(
		MatchError(ContainSubstring("forbidden")), "the operator reads a Secret not its own")

	https := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "kmaint-operator." + namespace + ".svc"}}}
	g.Eventually(func() (int, error) { return post(https, "https://"+webhookAddr+"/alerts") }, 60*time.Second, 200*time.Millisecond).
		Should(Equal(http.StatusOK))
	g.Expect(post(http.DefaultClient, "http://"+webhookAddr+"/alerts")).To(Equal(http.StatusBadRequest),
		"plain HTTP is answered by Go's TLS server, which refuses it")

	// The metrics go only to callers the API server knows and allows:
	// Prometheus's account, bound to kmaint-metrics-reader; not to
	// anyone who reaches the port, nor to an account without the role.
	reader := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "test-prometheus"}}
	g.Expect(bed.Client.Create(ctx, reader)).To(Succeed())
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "test-prometheus-metrics"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "kmaint-metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: namespace, Name: reader.Name}},
	}
	g.Expect(bed.Client.Create(ctx, binding)).To(Succeed())
	t.Cleanup(func() {
		_ = bed.Client.Delete(context.Background(), binding)
		_ = bed.Client.Delete(context.Background(), reader)
	})
	insecure := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	scrape := func(token string) (int, error) {
		req, err := http.NewRequest(http.MethodGet, "https://"+metricsAddr+"/metrics", nil)
		if err != nil {
			return 0, err
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := insecure.Do(req)
		if err != nil {
			return 0, err
		}
		_ = resp.Body.Close()
		return resp.StatusCode, nil
	}
	readerToken := serviceAccountToken(t, namespace, reader.Name)
	g.Eventually(func() (int, error) { return scrape(readerToken) }, 60*time.Second, 200*time.Millisecond).Should(Equal(http.StatusOK))
	g.Expect(scrape("")).To(Equal(http.StatusUnauthorized), "metrics without a token")
	g.Expect(scrape(serviceAccountToken(t, namespace, "kmaint-daemon"))).To(Equal(http.StatusForbidden), "metrics for an account without the role")
	g.Expect(post(http.DefaultClient, "http://"+metricsAddr+"/metrics")).To(Equal(http.StatusBadRequest), "metrics over plain HTTP")
}

// serviceAccountToken is a token of the named service account.
func serviceAccountToken(t *testing.T, ns, name string) string {
	t.Helper()
	tr, err := kubernetes.NewForConfigOrDie(bed.Config).CoreV1().ServiceAccounts(ns).CreateToken(context.Background(), name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// post sends an empty Alertmanager payload with the test's token.
func post(c *http.Client, url string) (int, error) {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"version":"4","alerts":[]}`))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer install-test-token")
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}
