package alertwebhook

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
)

// FileCertificates serve a PEM certificate and key from files, reloaded
// when they change: a Secret mounted into the pod, such as the one
// cert-manager writes and renews in place.
type FileCertificates struct {
	// CertFile and KeyFile are the PEM certificate (chain) and its key.
	CertFile, KeyFile string

	watcher *certwatcher.CertWatcher
}

var _ Certificates = (*FileCertificates)(nil)

// Load implements Certificates.
func (f *FileCertificates) Load(context.Context) error {
	if f.CertFile == "" || f.KeyFile == "" {
		return errors.New("set both a certificate and a key file")
	}
	w, err := certwatcher.New(f.CertFile, f.KeyFile)
	if err != nil {
		return fmt.Errorf("load certificate %s and key %s: %w", f.CertFile, f.KeyFile, err)
	}
	f.watcher = w
	return nil
}

// Start implements Certificates: it watches the files until ctx ends.
func (f *FileCertificates) Start(ctx context.Context) error {
	if f.watcher == nil {
		return errors.New("certificate files not loaded")
	}
	return f.watcher.Start(ctx)
}

// GetCertificate implements Certificates.
func (f *FileCertificates) GetCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	if f.watcher == nil {
		return nil, errors.New("certificate files not loaded")
	}
	return f.watcher.GetCertificate(hello)
}
