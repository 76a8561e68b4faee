package alertwebhook_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	. "github.com/onsi/gomega"

	"github.com/kmaint/kmaint/operator/alertwebhook"
)

// startServer runs s until the test ends, and returns its base URL and a
// function that stops it and returns what Start returned.
func startServer(t *testing.T, s *alertwebhook.Server, scheme string) (string, func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Start(ctx) }()
	stop := func() error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(10 * time.Second):
			t.Fatal("server did not stop")
			return nil
		}
	}
	t.Cleanup(func() { cancel() })
	g := NewWithT(t)
	g.Eventually(s.Addr).WithTimeout(5 * time.Second).ShouldNot(BeNil())
	return scheme + "://" + s.Addr().String(), stop
}

func post(t *testing.T, c *http.Client, url, token string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, bytes.NewReader(payload(t, firing("n1"), resolved("n2"))))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

func TestServer(t *testing.T) {
	sink := &recordingSink{}
	s := &alertwebhook.Server{
		BindAddress: "127.0.0.1:0",
		Handler:     &alertwebhook.Handler{Tokens: staticToken(testToken), Sink: sink, Logger: testr.New(t), Clock: receiverClock()},
		Logger:      testr.New(t),
	}
	if s.NeedLeaderElection() {
		t.Error("NeedLeaderElection() = true; every replica must take alerts")
	}
	base, stop := startServer(t, s, "http")

	if resp := post(t, http.DefaultClient, base+alertwebhook.AlertsPath, testToken); resp.StatusCode != http.StatusOK {
		t.Errorf("POST %s: %s", alertwebhook.AlertsPath, resp.Status)
	}
	if n := len(sink.batches()); n != 1 || len(sink.batches()[0]) != 2 {
		t.Errorf("sink got %v, want one batch of two alerts", sink.batches())
	}
	if resp := post(t, http.DefaultClient, base+alertwebhook.AlertsPath, "wrong"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("POST with a wrong token: %s, want 401", resp.Status)
	}
	if resp := post(t, http.DefaultClient, base+"/other", testToken); resp.StatusCode != http.StatusNotFound {
		t.Errorf("POST /other: %s, want 404", resp.Status)
	}
	resp, err := http.Get(base + alertwebhook.HealthzPath)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET %s: %s", alertwebhook.HealthzPath, resp.Status)
	}
	if n := len(sink.batches()); n != 1 {
		t.Errorf("sink called %d times, want 1", n)
	}

	if err := stop(); err != nil {
		t.Errorf("Start returned %v after its context ended, want nil", err)
	}
	if _, err := http.Get(base + alertwebhook.HealthzPath); err == nil {
		t.Error("server still answers after it stopped")
	}
}

func TestServerTLS(t *testing.T) {
	certFile, keyFile, pool := selfSignedCert(t)
	sink := &recordingSink{}
	s := &alertwebhook.Server{
		BindAddress:  "127.0.0.1:0",
		Handler:      &alertwebhook.Handler{Tokens: staticToken(testToken), Sink: sink, Logger: testr.New(t), Clock: receiverClock()},
		Certificates: &alertwebhook.FileCertificates{CertFile: certFile, KeyFile: keyFile},
		Logger:       testr.New(t),
	}
	base, stop := startServer(t, s, "https")
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	if resp := post(t, c, base+alertwebhook.AlertsPath, testToken); resp.StatusCode != http.StatusOK {
		t.Errorf("POST over TLS: %s", resp.Status)
	}
	if n := len(sink.batches()); n != 1 {
		t.Errorf("sink called %d times, want 1", n)
	}
	if err := stop(); err != nil {
		t.Errorf("Start returned %v after its context ended, want nil", err)
	}
}

func TestServerConfigErrors(t *testing.T) {
	h := &alertwebhook.Handler{Tokens: staticToken(testToken), Sink: &recordingSink{}}
	for name, s := range map[string]*alertwebhook.Server{
		"no handler":       {BindAddress: "127.0.0.1:0"},
		"cert without key": {BindAddress: "127.0.0.1:0", Handler: h, Certificates: &alertwebhook.FileCertificates{CertFile: "tls.crt"}},
		"missing files": {BindAddress: "127.0.0.1:0", Handler: h,
			Certificates: &alertwebhook.FileCertificates{CertFile: "/nonexistent/tls.crt", KeyFile: "/nonexistent/tls.key"}},
		"bad address": {BindAddress: "127.0.0.1:notaport", Handler: h},
	} {
		t.Run(name, func(t *testing.T) {
			if err := s.Start(t.Context()); err == nil {
				t.Error("Start succeeded")
			}
		})
	}
}

// selfSignedCert writes a certificate for 127.0.0.1 and its key, and returns
// their paths and a pool that trusts the certificate.
func selfSignedCert(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	certPEM, keyPEM := certPair(t, time.Now().Add(-time.Hour), time.Now().Add(time.Hour), net.ParseIP("127.0.0.1"))
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	return certFile, keyFile, pool
}

// certPair is a self-signed certificate for ip, valid from notBefore to
// notAfter, and its key, in PEM.
func certPair(t *testing.T, notBefore, notAfter time.Time, ip net.IP) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "kmaint-alerts"},
		IPAddresses:  []net.IP{ip},
		NotBefore:    notBefore,
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
