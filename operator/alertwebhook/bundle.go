package alertwebhook

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"net"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// The keys of a generated certificate's Secret besides tls.crt and tls.key:
// the CA that signed it, which Alertmanager trusts (tls_config ca), and the
// CA's key, to sign the next certificate with the same CA.
const (
	CACertKey = "ca.crt"
	CAKeyKey  = "ca.key"
)

// bundle is a serving certificate with the CA that signed it.
type bundle struct {
	ca    *x509.Certificate
	caKey crypto.Signer
	leaf  *x509.Certificate
	pair  tls.Certificate
	data  map[string][]byte
}

// parseServing reads tls.crt and tls.key: the pair the server would serve.
func parseServing(data map[string][]byte) (*bundle, error) {
	pair, err := tls.X509KeyPair(data[corev1.TLSCertKey], data[corev1.TLSPrivateKeyKey])
	if err != nil {
		return nil, fmt.Errorf("%s and %s: %w", corev1.TLSCertKey, corev1.TLSPrivateKeyKey, err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", corev1.TLSCertKey, err)
	}
	return &bundle{leaf: leaf, pair: pair, data: data}, nil
}

// parseCA reads ca.crt and ca.key, which must be a pair.
func parseCA(data map[string][]byte) (*x509.Certificate, crypto.Signer, error) {
	certs, err := cert.ParseCertsPEM(data[CACertKey])
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", CACertKey, err)
	}
	key, err := keyutil.ParsePrivateKeyPEM(data[CAKeyKey])
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", CAKeyKey, err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, nil, fmt.Errorf("%s: not a signing key", CAKeyKey)
	}
	if _, err := tls.X509KeyPair(data[CACertKey], data[CAKeyKey]); err != nil {
		return nil, nil, fmt.Errorf("%s and %s: %w", CACertKey, CAKeyKey, err)
	}
	return certs[0], signer, nil
}

// renewal says why a generated certificate must be made anew at now, or ""
// when it serves as it is: it must name every host, chain to the stored CA,
// and have more than renewBefore left, and so must the CA.
func renewal(data map[string][]byte, hosts []string, now time.Time, renewBefore time.Duration) string {
	b, err := parseServing(data)
	if err != nil {
		return err.Error()
	}
	ca, _, err := parseCA(data)
	if err != nil {
		return err.Error()
	}
	for _, c := range []struct {
		what string
		cert *x509.Certificate
	}{{"certificate", b.leaf}, {"CA", ca}} {
		if now.Before(c.cert.NotBefore) {
			return fmt.Sprintf("the %s is valid only from %s", c.what, c.cert.NotBefore.UTC().Format(time.RFC3339))
		}
		if c.cert.NotAfter.Sub(now) <= renewBefore {
			return fmt.Sprintf("the %s expires at %s", c.what, c.cert.NotAfter.UTC().Format(time.RFC3339))
		}
	}
	if err := b.leaf.CheckSignatureFrom(ca); err != nil {
		return fmt.Sprintf("the certificate is not signed by %s: %v", CACertKey, err)
	}
	for _, h := range hosts {
		if err := b.leaf.VerifyHostname(h); err != nil {
			return fmt.Sprintf("the certificate does not name %s", h)
		}
	}
	return ""
}

// issue makes a serving certificate for hosts valid from now for validity,
// signed by the CA in data when that CA is sound and outlives the new
// certificate by renewBefore; otherwise by a new CA, which Alertmanager
// must then be given. Keeping the CA is what lets a renewal go unnoticed by
// Alertmanager, which is why this is not cert.GenerateSelfSignedCertKey:
// that makes a new CA every time.
func issue(data map[string][]byte, hosts []string, now time.Time, validity, renewBefore time.Duration) (*bundle, error) {
	ca, caKey, err := parseCA(data)
	if err != nil || now.Before(ca.NotBefore) || ca.NotAfter.Sub(now) <= validity+renewBefore {
		if caKey, err = newKey(); err != nil {
			return nil, err
		}
		// Ten years, client-go's choice for a self-signed CA.
		if ca, err = cert.NewSelfSignedCACert(cert.Config{CommonName: "kmaint-alert-webhook-ca", NotBefore: now.Add(-time.Hour)}, caKey); err != nil {
			return nil, fmt.Errorf("make CA: %w", err)
		}
	}
	key, err := newKey()
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("serial number: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: hosts[0]},
		// An hour back, as client-go does, for clocks a little behind.
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}
	if tmpl.NotAfter.After(ca.NotAfter) {
		tmpl.NotAfter = ca.NotAfter
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, key.Public(), caKey)
	if err != nil {
		return nil, fmt.Errorf("sign certificate: %w", err)
	}
	out := map[string][]byte{}
	for name, v := range map[string]any{corev1.TLSCertKey: der, CACertKey: ca.Raw, corev1.TLSPrivateKeyKey: key, CAKeyKey: caKey} {
		if out[name], err = encodePEM(v); err != nil {
			return nil, fmt.Errorf("encode %s: %w", name, err)
		}
	}
	b, err := parseServing(out)
	if err != nil {
		return nil, err
	}
	b.ca, b.caKey = ca, caKey
	return b, nil
}

func newKey() (*ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate key: %w", err)
	}
	return key, nil
}

// encodePEM encodes a DER certificate or a private key.
func encodePEM(v any) ([]byte, error) {
	switch v := v.(type) {
	case []byte:
		return cert.EncodeCertificates(&x509.Certificate{Raw: v})
	case crypto.Signer:
		return keyutil.MarshalPrivateKeyToPEM(v)
	}
	return nil, errors.New("neither a certificate nor a key")
}
