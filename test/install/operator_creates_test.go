package install

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/operator"
)

// TestOperatorCreatesOnlyItsObjects installs kmaint's RBAC and admission
// policies for real and creates, with the operator's token and a dry run,
// what a thief of that token would: its Role lets it create any Secret and
// ConfigMap in kmaint-system, and the policy lets through only the two the
// operator makes, the webhook's certificate Secret (of the certificate's
// type) and its CA's ConfigMap. TestDefaultWebhookServesTLS runs the
// operator itself under the same policy.
func TestOperatorCreatesOnlyItsObjects(t *testing.T) {
	ctx := context.Background()
	installIdentities(t)
	const policy = "kmaint-operator-creates"
	op := clientWithToken(t, operatorToken(t))
	create := func(o client.Object) error { return op.Create(ctx, o, client.DryRunAll) }
	secret := func(name string, typ corev1.SecretType, annotations map[string]string) *corev1.Secret {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Annotations: annotations}, Type: typ}
		if typ == corev1.SecretTypeTLS {
			s.Data = map[string][]byte{corev1.TLSCertKey: []byte("cert"), corev1.TLSPrivateKeyKey: []byte("key")}
		}
		return s
	}
	configMap := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Data: map[string]string{"ca.crt": "x"}}
	}
	waitForPolicy(t, policy, func() error {
		return create(secret(fmt.Sprintf("probe-%d", time.Now().UnixNano()), corev1.SecretTypeOpaque, nil))
	})

	// What the operator makes (operator/alertwebhook, SecretCertificates).
	cert := operator.DefaultAlertCertSecret
	for name, o := range map[string]client.Object{
		"the certificate Secret": secret(cert, corev1.SecretTypeTLS, nil),
		"the CA's ConfigMap":     configMap(operator.AlertCAConfigMap(cert)),
	} {
		if err := create(o); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}

	const otherSecret = "kmaint: the operator creates one Secret, its alert webhook certificate kmaint-system/kmaint-alert-webhook-tls of type kubernetes.io/tls, not "
	// A Secret the API server fills with a token of the service account it
	// names, which never expires: under the certificate's name the
	// operator could read it back.
	saToken := map[string]string{corev1.ServiceAccountNameKey: "kmaint-operator"}
	for name, tc := range map[string]struct {
		obj client.Object
		why string
	}{
		"a token Secret under the certificate's name": {secret(cert, corev1.SecretTypeServiceAccountToken, saToken),
			otherSecret + "kmaint-system/kmaint-alert-webhook-tls of type kubernetes.io/service-account-token"},
		"a token Secret of another name": {secret("kmaint-operator-token", corev1.SecretTypeServiceAccountToken, saToken),
			otherSecret + "kmaint-system/kmaint-operator-token of type kubernetes.io/service-account-token"},
		"an Opaque Secret under the certificate's name": {secret(cert, corev1.SecretTypeOpaque, nil), otherSecret},
		"a Secret of another name":                      {secret("someone-elses", corev1.SecretTypeTLS, nil), otherSecret + "kmaint-system/someone-elses"},
		"the webhook's token Secret":                    {secret("kmaint-alert-webhook", corev1.SecretTypeOpaque, nil), otherSecret},
		"a generated name": {&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, GenerateName: cert + "-"}, Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{corev1.TLSCertKey: nil, corev1.TLSPrivateKeyKey: nil}}, otherSecret},
		"a ConfigMap of another name": {configMap("kmaint-operator-config"),
			"kmaint: the operator creates one ConfigMap, its alert webhook CA kmaint-system/kmaint-alert-webhook-ca, not kmaint-system/kmaint-operator-config"},
	} {
		expectRefusedBy(t, policy, name, create(tc.obj), tc.why)
	}

	// Others are not the operator: their Secrets are RBAC's business.
	if err := bed.Client.Create(ctx, secret("someone-elses", corev1.SecretTypeOpaque, nil), client.DryRunAll); err != nil {
		t.Errorf("a Secret of an administrator's: %v", err)
	}
}
