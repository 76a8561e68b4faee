package alertwebhook_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	testingclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/operator/alertwebhook"
)

// The name Alertmanager reaches the webhook by in these tests.
const serviceHost = "kmaint-operator.default.svc"

// newSecretCertificates gives SecretCertificates for a Secret of a unique
// name in "default", not yet created, for the kmaint-operator Service's
// names there.
func newSecretCertificates(t *testing.T) *alertwebhook.SecretCertificates {
	t.Helper()
	c := apiServer(t)
	name := "alert-tls-" + rand.String(6)
	t.Cleanup(func() {
		_ = c.Delete(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}})
		_ = c.Delete(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name + "-ca"}})
	})
	return &alertwebhook.SecretCertificates{
		Client: c, Namespace: "default", Name: name, CAConfigMap: name + "-ca",
		Hosts:  alertwebhook.ServiceHosts("kmaint-operator", "default"),
		Logger: testr.New(t),
	}
}

// sameSecret is another replica's SecretCertificates for the same Secret.
func sameSecret(t *testing.T, s *alertwebhook.SecretCertificates) *alertwebhook.SecretCertificates {
	return &alertwebhook.SecretCertificates{Client: s.Client, Namespace: s.Namespace, Name: s.Name, CAConfigMap: s.CAConfigMap, Hosts: s.Hosts, Logger: testr.New(t)}
}

// publishedCA is the CA certificate in the ConfigMap, where people read it
// without the Secret's keys.
func publishedCA(g Gomega, s *alertwebhook.SecretCertificates) []byte {
	cm := &corev1.ConfigMap{}
	g.Expect(s.Client.Get(context.Background(), client.ObjectKey{Namespace: s.Namespace, Name: s.CAConfigMap}, cm)).To(Succeed())
	return []byte(cm.Data[alertwebhook.CACertKey])
}

func getSecret(t *testing.T, s *alertwebhook.SecretCertificates) *corev1.Secret {
	t.Helper()
	secret := &corev1.Secret{}
	if err := s.Client.Get(context.Background(), client.ObjectKey{Namespace: s.Namespace, Name: s.Name}, secret); err != nil {
		t.Fatalf("get secret %s/%s: %v", s.Namespace, s.Name, err)
	}
	return secret
}

// trusting is a client that trusts only the CA of the Secret, as
// Alertmanager is told to in its tls_config, and checks the name
// serviceHost, dialling the test's server.
func trusting(t *testing.T, caPEM []byte, now func() time.Time) *http.Client {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatalf("no CA certificate in %q", caPEM)
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: serviceHost, Time: now}}}
}

// servedLeaf is the certificate a TLS server at addr presents.
func servedLeaf(t *testing.T, addr string, caPEM []byte, now func() time.Time) *x509.Certificate {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, ServerName: serviceHost, Time: now})
	if err != nil {
		t.Fatalf("TLS handshake with %s: %v", addr, err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0]
}

func leafOf(t *testing.T, secret *corev1.Secret) *x509.Certificate {
	t.Helper()
	pair, err := tls.X509KeyPair(secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey])
	if err != nil {
		t.Fatalf("secret %s: %v", secret.Name, err)
	}
	return pair.Leaf
}

// postAlerts posts a payload of one firing alert and returns the code.
func postAlerts(t *testing.T, c *http.Client, url string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, bytes.NewReader(payload(t, firing("n1"))))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

// The server serves TLS with a certificate it generated into the Secret,
// which a client trusting the Secret's ca.crt accepts for the Service's
// name; a restarted server serves the same certificate, written once.
func TestSecretCertificatesServeAndSurviveRestart(t *testing.T) {
	certs := newSecretCertificates(t)
	sink := &recordingSink{}
	h := &alertwebhook.Handler{Tokens: staticToken(testToken), Sink: sink, Logger: testr.New(t), Clock: receiverClock()}
	s := &alertwebhook.Server{BindAddress: "127.0.0.1:0", Handler: h, Certificates: certs, Logger: testr.New(t)}
	base, stop := startServer(t, s, "https")

	secret := getSecret(t, certs)
	if secret.Type != corev1.SecretTypeTLS || secret.Annotations[alertwebhook.GeneratedByAnnotation] != "kmaint-operator" {
		t.Errorf("secret type %s, annotations %v; want %s made by kmaint-operator", secret.Type, secret.Annotations, corev1.SecretTypeTLS)
	}
	for _, k := range []string{corev1.TLSCertKey, corev1.TLSPrivateKeyKey, alertwebhook.CACertKey, alertwebhook.CAKeyKey} {
		if len(secret.Data[k]) == 0 {
			t.Errorf("secret has no %s", k)
		}
	}
	// The CA is published apart from the keys, and that is what a client
	// is given to trust.
	ca := publishedCA(NewWithT(t), certs)
	if !bytes.Equal(ca, secret.Data[alertwebhook.CACertKey]) {
		t.Errorf("the ConfigMap's ca.crt is not the Secret's")
	}
	if code := postAlerts(t, trusting(t, ca, nil), base+alertwebhook.AlertsPath); code != http.StatusOK {
		t.Errorf("POST over TLS: %d, want 200", code)
	}
	leaf := servedLeaf(t, s.Addr().String(), ca, nil)
	if want := leafOf(t, secret); !leaf.Equal(want) {
		t.Errorf("served certificate %s, want the Secret's %s", leaf.SerialNumber, want.SerialNumber)
	}
	for _, host := range alertwebhook.ServiceHosts("kmaint-operator", "default") {
		if err := leaf.VerifyHostname(host); err != nil {
			t.Errorf("certificate does not name %s: %v", host, err)
		}
	}
	if got := leaf.NotAfter.Sub(time.Now()); got < 360*24*time.Hour || got > 366*24*time.Hour {
		t.Errorf("certificate valid for %s more, want about a year", got)
	}

	// Another name, or plain HTTP on the TLS port, gets nothing.
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	if _, err := tls.Dial("tcp", s.Addr().String(), &tls.Config{RootCAs: pool, ServerName: "evil.example.com"}); err == nil {
		t.Error("the certificate passes for evil.example.com")
	}
	if code := postAlerts(t, http.DefaultClient, "http://"+s.Addr().String()+alertwebhook.AlertsPath); code != http.StatusBadRequest {
		t.Errorf("plain HTTP to the TLS port: %d, want Go's 400 for HTTP to an HTTPS server", code)
	}
	if n := len(sink.batches()); n != 1 {
		t.Errorf("sink called %d times, want once (the TLS request)", n)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	// A restart, with nothing in memory: the same certificate, the Secret
	// not written again.
	s2 := &alertwebhook.Server{BindAddress: "127.0.0.1:0", Handler: h, Certificates: sameSecret(t, certs), Logger: testr.New(t)}
	startServer(t, s2, "https")
	if again := servedLeaf(t, s2.Addr().String(), ca, nil); !again.Equal(leaf) {
		t.Errorf("after a restart the server presents certificate %s, want %s", again.SerialNumber, leaf.SerialNumber)
	}
	if rv := getSecret(t, certs).ResourceVersion; rv != secret.ResourceVersion {
		t.Errorf("the restart wrote the Secret (resourceVersion %s, was %s)", rv, secret.ResourceVersion)
	}
}

// Replicas starting at once on a missing Secret end up serving one
// certificate: the API server lets one create it, the others read it.
func TestSecretCertificatesReplicasShareOne(t *testing.T) {
	first := newSecretCertificates(t)
	replicas := []*alertwebhook.SecretCertificates{first, sameSecret(t, first), sameSecret(t, first)}
	var wg sync.WaitGroup
	errs := make([]error, len(replicas))
	for i, r := range replicas {
		wg.Go(func() { errs[i] = r.Load(t.Context()) })
	}
	wg.Wait()
	want := leafOf(t, getSecret(t, first))
	for i, r := range replicas {
		if errs[i] != nil {
			t.Errorf("replica %d: %v", i, errs[i])
			continue
		}
		c, err := r.GetCertificate(nil)
		if err != nil || !c.Leaf.Equal(want) {
			t.Errorf("replica %d serves %v (%v), want the Secret's certificate", i, c, err)
		}
	}
}

// A generated certificate a month from expiry is renewed by whichever
// replica checks first, with the same CA, so Alertmanager's copy of ca.crt
// still works; the other replica takes the new certificate at its next
// check.
func TestSecretCertificatesRenewBeforeExpiry(t *testing.T) {
	g := NewWithT(t)
	clk := testingclock.NewFakeClock(time.Now())
	a := newSecretCertificates(t)
	a.Clock, a.CheckInterval = clk, time.Minute
	b := sameSecret(t, a)
	b.Clock, b.CheckInterval = clk, time.Minute

	h := &alertwebhook.Handler{Tokens: staticToken(testToken), Sink: &recordingSink{}, Logger: testr.New(t), Clock: receiverClock()}
	s := &alertwebhook.Server{BindAddress: "127.0.0.1:0", Handler: h, Certificates: a, Logger: testr.New(t)}
	startServer(t, s, "https")
	g.Expect(b.Load(t.Context())).To(Succeed())
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() { _ = b.Start(ctx) }()

	before := getSecret(t, a)
	ca := before.Data[alertwebhook.CACertKey]
	old := servedLeaf(t, s.Addr().String(), ca, clk.Now)

	// Both replicas' checks wait on the clock; move it to 20 days before
	// the certificate's end.
	g.Eventually(clk.Waiters, 10*time.Second).Should(Equal(2))
	clk.SetTime(old.NotAfter.Add(-20 * 24 * time.Hour))
	g.Eventually(func(g Gomega) {
		after := getSecret(t, a)
		g.Expect(leafOf(t, after).Equal(old)).To(BeFalse(), "certificate not renewed")
		g.Expect(after.Data[alertwebhook.CACertKey]).To(Equal(ca), "the CA changed")
	}, 10*time.Second, 50*time.Millisecond).Should(Succeed())
	g.Expect(publishedCA(g, a)).To(Equal(ca), "the published CA changed")
	renewed := leafOf(t, getSecret(t, a))
	g.Expect(renewed.NotAfter).To(BeTemporally("~", clk.Now().Add(alertwebhook.DefaultCertValidity), time.Minute))

	g.Eventually(func() bool { return servedLeaf(t, s.Addr().String(), ca, clk.Now).Equal(renewed) }, 10*time.Second, 50*time.Millisecond).
		Should(BeTrue(), "the server still presents the old certificate")
	g.Eventually(func() bool {
		c, err := b.GetCertificate(nil)
		return err == nil && c.Leaf.Equal(renewed)
	}, 10*time.Second, 50*time.Millisecond).Should(BeTrue(), "the other replica still has the old certificate")
}

// A generated certificate that no longer serves (other hosts, a damaged
// Secret) is made anew at start; the CA is kept when it is sound.
func TestSecretCertificatesRepairAtStart(t *testing.T) {
	t.Run("other hosts", func(t *testing.T) {
		s := newSecretCertificates(t)
		other := sameSecret(t, s)
		other.Hosts = []string{"old-name.example.com"}
		if err := other.Load(t.Context()); err != nil {
			t.Fatal(err)
		}
		before := getSecret(t, s)
		if err := s.Load(t.Context()); err != nil {
			t.Fatal(err)
		}
		after := getSecret(t, s)
		if err := leafOf(t, after).VerifyHostname(serviceHost); err != nil {
			t.Errorf("renewed certificate: %v", err)
		}
		if !bytes.Equal(after.Data[alertwebhook.CACertKey], before.Data[alertwebhook.CACertKey]) {
			t.Error("the CA changed though it was sound")
		}
	})
	t.Run("damaged", func(t *testing.T) {
		s := newSecretCertificates(t)
		if err := s.Load(t.Context()); err != nil {
			t.Fatal(err)
		}
		secret := getSecret(t, s)
		secret.Data[corev1.TLSCertKey] = []byte("garbage")
		secret.Data[alertwebhook.CAKeyKey] = []byte("garbage")
		if err := s.Client.Update(t.Context(), secret); err != nil {
			t.Fatal(err)
		}
		if err := sameSecret(t, s).Load(t.Context()); err != nil {
			t.Fatal(err)
		}
		after := getSecret(t, s)
		if _, err := tls.X509KeyPair(after.Data[alertwebhook.CACertKey], after.Data[alertwebhook.CAKeyKey]); err != nil {
			t.Errorf("CA after the repair: %v", err)
		}
		if err := leafOf(t, after).VerifyHostname(serviceHost); err != nil {
			t.Errorf("certificate after the repair: %v", err)
		}
	})
}

// A Secret kmaint-operator did not make is served as it is and never
// written; one that holds nothing to serve is an error that says so.
func TestSecretCertificatesForeignSecret(t *testing.T) {
	certFile, keyFile, _ := selfSignedCert(t)
	for name, tc := range map[string]struct {
		data    map[string][]byte
		wantErr string
	}{
		"a certificate":    {data: map[string][]byte{corev1.TLSCertKey: readFile(t, certFile), corev1.TLSPrivateKeyKey: readFile(t, keyFile)}},
		"no certificate":   {data: map[string][]byte{"other": []byte("x")}, wantErr: "holds no certificate to serve"},
		"a broken pair":    {data: map[string][]byte{corev1.TLSCertKey: readFile(t, certFile), corev1.TLSPrivateKeyKey: []byte("x")}, wantErr: "was not made by kmaint-operator"},
		"an expired one":   {data: expiredPair(t), wantErr: "expired at"},
		"an empty secret ": {data: nil, wantErr: "holds no certificate to serve"},
	} {
		t.Run(name, func(t *testing.T) {
			s := newSecretCertificates(t)
			secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: s.Name}, Data: tc.data}
			if err := s.Client.Create(t.Context(), secret); err != nil {
				t.Fatal(err)
			}
			err := s.Load(t.Context())
			if tc.wantErr == "" && err != nil {
				t.Errorf("Load: %v", err)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), s.Namespace+"/"+s.Name)) {
				t.Errorf("Load error %v, want one naming the Secret and saying %q", err, tc.wantErr)
			}
			if after := getSecret(t, s); after.ResourceVersion != secret.ResourceVersion {
				t.Error("a Secret kmaint-operator did not make was written")
			}
			if tc.wantErr == "" {
				c, err := s.GetCertificate(nil)
				if err != nil || !bytes.Equal(c.Certificate[0], leafOf(t, secret).Raw) {
					t.Errorf("serves %v (%v), want the Secret's certificate", c, err)
				}
			}
		})
	}
}

// A server whose certificate cannot be had does not start.
func TestServerWithoutCertificateDoesNotStart(t *testing.T) {
	s := newSecretCertificates(t)
	if err := s.Client.Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: s.Name}}); err != nil {
		t.Fatal(err)
	}
	srv := &alertwebhook.Server{BindAddress: "127.0.0.1:0", Handler: &alertwebhook.Handler{}, Certificates: s}
	err := srv.Start(t.Context())
	if err == nil || !strings.Contains(err.Error(), "holds no certificate to serve") {
		t.Errorf("Start = %v, want the certificate's error", err)
	}
	if srv.Addr() != nil {
		t.Error("the server listened without a certificate")
	}
	for name, bad := range map[string]*alertwebhook.SecretCertificates{
		"no hosts":            {Client: s.Client, Namespace: "default", Name: "x"},
		"renewal beyond life": {Client: s.Client, Namespace: "default", Name: "x", Hosts: []string{"a"}, Validity: time.Hour, RenewBefore: 2 * time.Hour},
	} {
		if err := bad.Load(t.Context()); err == nil {
			t.Errorf("%s: Load succeeded", name)
		}
	}
}

// expiredPair is a certificate and key that expired an hour ago.
func expiredPair(t *testing.T) map[string][]byte {
	t.Helper()
	certPEM, keyPEM := certPair(t, time.Now().Add(-2*time.Hour), time.Now().Add(-time.Hour), net.ParseIP("127.0.0.1"))
	return map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM}
}
