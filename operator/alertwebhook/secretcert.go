package alertwebhook

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// GeneratedByAnnotation marks a certificate Secret that SecretCertificates
// made, and so may renew. A Secret without it is someone else's: it is
// served as it is and never written.
const GeneratedByAnnotation = "kmaint.io/generated-by"

// generatedBy is the annotation's value.
const generatedBy = "kmaint-operator"

// Defaults of SecretCertificates.
const (
	// DefaultCertValidity is how long a generated certificate is valid.
	DefaultCertValidity = 365 * 24 * time.Hour
	// DefaultRenewBefore is how long before its expiry a generated
	// certificate is made anew: a month, so that a renewal that keeps
	// failing is seen (logs, the operator's restarts) long before Alertmanager
	// would see an expired certificate.
	DefaultRenewBefore = 30 * 24 * time.Hour
	// DefaultCertCheckInterval is how often the Secret is read again, to
	// take a certificate another replica renewed, or to renew one.
	DefaultCertCheckInterval = 10 * time.Minute
)

// ServiceHosts are the names by which clients in the cluster reach a
// Service: name, name.namespace, name.namespace.svc and the fully qualified
// name.namespace.svc.cluster.local.
func ServiceHosts(service, namespace string) []string {
	n := service + "." + namespace
	return []string{service, n, n + ".svc", n + ".svc.cluster.local"}
}

// SecretCertificates serve a certificate kept in a Secret of kubernetes.io/tls
// type, which they make when it is missing: a self-signed CA (ca.crt, the
// one Alertmanager trusts, and ca.key) and a certificate it signed for Hosts
// (tls.crt, tls.key). Every replica and every restart of the operator reads
// the same Secret, so they all serve the same certificate; the first to
// find it missing creates it, and the API server refuses the others'
// creates, which then read the winner's. A generated certificate is renewed
// RenewBefore its expiry (or when it does not name Hosts) with the same CA,
// so Alertmanager's trust in ca.crt outlives renewals; whoever renews first
// wins, the others read the result at their next check.
//
// A Secret that exists without GeneratedByAnnotation (one a person or
// another tool wrote) is served as it is and never changed.
type SecretCertificates struct {
	// Client reads and writes the Secret; it must read from the API server,
	// not a cache, so that the operator needs no watch on Secrets.
	Client client.Client
	// Namespace and Name name the Secret.
	Namespace, Name string
	// Hosts are the DNS names and IP addresses the certificate names: how
	// Alertmanager reaches the webhook. Required.
	Hosts []string
	// Validity is how long a new certificate is valid; 0 means
	// DefaultCertValidity.
	Validity time.Duration
	// RenewBefore is how long before expiry it is renewed; 0 means
	// DefaultRenewBefore.
	RenewBefore time.Duration
	// CheckInterval is how often the Secret is read again; 0 means
	// DefaultCertCheckInterval.
	CheckInterval time.Duration
	// Clock dates certificates and runs the checks; nil means the real
	// clock.
	Clock clock.WithTicker
	// Logger logs what happens to the certificate; unset means the logger
	// of the context.
	Logger logr.Logger
	// CAConfigMap, when set, names a ConfigMap in Namespace where a
	// generated CA's certificate is published (key ca.crt), for
	// Alertmanager's tls_config: whoever needs the CA reads it there, and
	// needs no read of the Secret, which holds the CA's key and the
	// serving key too.
	CAConfigMap string

	current atomic.Pointer[tls.Certificate]
}

var _ Certificates = (*SecretCertificates)(nil)

// Load implements Certificates: it reads the Secret, making or renewing the
// certificate when needed.
func (s *SecretCertificates) Load(ctx context.Context) error {
	if len(s.Hosts) == 0 {
		return errors.New("certificate secret: no hosts for the certificate to name")
	}
	if s.validity() <= s.renewBefore() {
		return fmt.Errorf("certificate secret: a validity of %s is not longer than the renewal %s before expiry", s.validity(), s.renewBefore())
	}
	return s.sync(ctx)
}

// Start implements Certificates: it reads the Secret every CheckInterval
// until ctx ends. A failed check is logged and the current certificate
// kept: a certificate has a month left when its renewal is due.
func (s *SecretCertificates) Start(ctx context.Context) error {
	interval := s.CheckInterval
	if interval <= 0 {
		interval = DefaultCertCheckInterval
	}
	ticker := s.clock().NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C():
			if err := s.sync(ctx); err != nil && ctx.Err() == nil {
				s.logger(ctx).Error(err, "Cannot check the alert webhook's certificate; serving the current one")
			}
		}
	}
}

// GetCertificate implements Certificates.
func (s *SecretCertificates) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	if c := s.current.Load(); c != nil {
		return c, nil
	}
	return nil, errors.New("no certificate loaded")
}

// sync reads the Secret and serves what it holds, making or renewing it
// first when needed. A write that loses a race with another replica is
// followed by a read of what the winner wrote.
func (s *SecretCertificates) sync(ctx context.Context) error {
	var err error
	for range 3 {
		var pair *tls.Certificate
		var ca []byte
		if pair, ca, err = s.syncOnce(ctx); err == nil {
			if ca != nil {
				// Serving goes on without it: the CA is published at the
				// next check.
				if err := s.publishCA(ctx, ca); err != nil {
					s.logger(ctx).Error(err, "Cannot publish the alert webhook's CA", "configMap", s.Namespace+"/"+s.CAConfigMap)
				}
			}
			if old := s.current.Swap(pair); old == nil || !old.Leaf.Equal(pair.Leaf) {
				s.logger(ctx).Info("Serving the alert webhook's certificate", "secret", s.Namespace+"/"+s.Name,
					"serial", pair.Leaf.SerialNumber.String(), "notAfter", pair.Leaf.NotAfter)
			}
			return nil
		}
		if !apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err) {
			break
		}
	}
	return fmt.Errorf("certificate secret %s/%s: %w", s.Namespace, s.Name, err)
}

// syncOnce returns the certificate to serve and, for a Secret kmaint made,
// its CA's certificate to publish.
func (s *SecretCertificates) syncOnce(ctx context.Context) (*tls.Certificate, []byte, error) {
	now := s.clock().Now()
	secret := &corev1.Secret{}
	err := s.Client.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: s.Name}, secret)
	if apierrors.IsNotFound(err) {
		b, err := issue(nil, s.Hosts, now, s.validity(), s.renewBefore())
		if err != nil {
			return nil, nil, err
		}
		secret = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{
				Namespace:   s.Namespace,
				Name:        s.Name,
				Labels:      map[string]string{"app.kubernetes.io/name": "kmaint-operator", "app.kubernetes.io/component": "alert-webhook"},
				Annotations: map[string]string{GeneratedByAnnotation: generatedBy},
			},
			Type: corev1.SecretTypeTLS,
			Data: b.data,
		}
		if err := s.Client.Create(ctx, secret); err != nil {
			return nil, nil, fmt.Errorf("create: %w", err)
		}
		s.logger(ctx).Info("Created the alert webhook's certificate", "secret", s.Namespace+"/"+s.Name)
		return &b.pair, b.data[CACertKey], nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read: %w", err)
	}

	if secret.Annotations[GeneratedByAnnotation] != generatedBy {
		b, err := parseServing(secret.Data)
		if err != nil {
			return nil, nil, fmt.Errorf("holds no certificate to serve (%w); it was not made by kmaint-operator (annotation %s), "+
				"which does not overwrite it: fix it, delete it to have one made, or name another Secret", err, GeneratedByAnnotation)
		}
		if !now.Before(b.leaf.NotAfter) {
			return nil, nil, fmt.Errorf("its certificate expired at %s; it was not made by kmaint-operator, which does not renew it",
				b.leaf.NotAfter.UTC().Format(time.RFC3339))
		}
		return &b.pair, nil, nil
	}

	why := renewal(secret.Data, s.Hosts, now, s.renewBefore())
	if why == "" {
		b, err := parseServing(secret.Data)
		if err != nil {
			return nil, nil, err
		}
		return &b.pair, secret.Data[CACertKey], nil
	}
	b, err := issue(secret.Data, s.Hosts, now, s.validity(), s.renewBefore())
	if err != nil {
		return nil, nil, err
	}
	secret.Type = corev1.SecretTypeTLS
	secret.Data = b.data
	// The update carries the resourceVersion read: of two replicas renewing
	// at once, one gets a conflict and reads the other's.
	if err := s.Client.Update(ctx, secret); err != nil {
		return nil, nil, fmt.Errorf("renew (%s): %w", why, err)
	}
	s.logger(ctx).Info("Renewed the alert webhook's certificate", "secret", s.Namespace+"/"+s.Name, "why", why)
	return &b.pair, b.data[CACertKey], nil
}

// publishCA writes the CA's certificate into CAConfigMap, when it is set
// and does not hold it already.
func (s *SecretCertificates) publishCA(ctx context.Context, ca []byte) error {
	if s.CAConfigMap == "" {
		return nil
	}
	cm := &corev1.ConfigMap{}
	err := s.Client.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: s.CAConfigMap}, cm)
	switch {
	case apierrors.IsNotFound(err):
		cm = &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: s.Namespace, Name: s.CAConfigMap,
				Labels:      map[string]string{"app.kubernetes.io/name": "kmaint-operator", "app.kubernetes.io/component": "alert-webhook"},
				Annotations: map[string]string{GeneratedByAnnotation: generatedBy},
			},
			Data: map[string]string{CACertKey: string(ca)},
		}
		if err := s.Client.Create(ctx, cm); err != nil {
			return fmt.Errorf("create: %w", err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("read: %w", err)
	case cm.Data[CACertKey] == string(ca):
		return nil
	}
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	cm.Data[CACertKey] = string(ca)
	if err := s.Client.Update(ctx, cm); err != nil {
		return fmt.Errorf("update: %w", err)
	}
	return nil
}

func (s *SecretCertificates) clock() clock.WithTicker {
	if s.Clock == nil {
		return clock.RealClock{}
	}
	return s.Clock
}

func (s *SecretCertificates) logger(ctx context.Context) logr.Logger {
	if s.Logger.GetSink() != nil {
		return s.Logger
	}
	return log.FromContext(ctx)
}

func (s *SecretCertificates) validity() time.Duration {
	if s.Validity > 0 {
		return s.Validity
	}
	return DefaultCertValidity
}

func (s *SecretCertificates) renewBefore() time.Duration {
	if s.RenewBefore > 0 {
		return s.RenewBefore
	}
	return DefaultRenewBefore
}
