package alertwebhook

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DefaultTokenCacheTTL is how long SecretToken keeps what it read.
const DefaultTokenCacheTTL = 10 * time.Second

// SecretToken reads the webhook token from a key of a Secret. It reads
// through a client.Reader, meant to be the manager's APIReader, so that the
// operator needs only get on this one Secret rather than a cluster-wide
// watch of Secrets. What it reads, a token or an error, is kept for TTL: a
// webhook call costs no API call, a rotated or newly created token is picked
// up within TTL, and a flood of requests while the Secret is missing costs
// one API call per TTL.
type SecretToken struct {
	// Reader reads the Secret.
	Reader client.Reader
	// Namespace and Name name the Secret.
	Namespace, Name string
	// Key is the Secret's data key holding the token. Surrounding white
	// space is trimmed, as Alertmanager trims its credentials_file.
	Key string
	// TTL is how long a read is kept; 0 means DefaultTokenCacheTTL.
	TTL time.Duration
	// Clock is the time source; nil means the real clock.
	Clock clock.PassiveClock

	mu      sync.Mutex
	read    bool
	readAt  time.Time
	token   string
	readErr error
}

var _ TokenSource = (*SecretToken)(nil)

// Token returns the token, reading the Secret when the last read is older
// than TTL. A missing Secret, a missing key or an empty token is an error.
func (s *SecretToken) Token(ctx context.Context) (string, error) {
	clk := s.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	ttl := s.TTL
	if ttl <= 0 {
		ttl = DefaultTokenCacheTTL
	}
	// Held across the read so that concurrent requests share one API call.
	s.mu.Lock()
	defer s.mu.Unlock()
	now := clk.Now()
	if s.read && now.Sub(s.readAt) < ttl {
		return s.token, s.readErr
	}
	token, err := s.get(ctx)
	if ctx.Err() != nil {
		// The caller gave up; its cancellation says nothing about the Secret.
		return "", err
	}
	s.read, s.readAt, s.token, s.readErr = true, now, token, err
	return token, err
}

func (s *SecretToken) get(ctx context.Context) (string, error) {
	var secret corev1.Secret
	if err := s.Reader.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: s.Name}, &secret); err != nil {
		return "", fmt.Errorf("read webhook token secret %s/%s: %w", s.Namespace, s.Name, err)
	}
	value, ok := secret.Data[s.Key]
	if !ok {
		return "", fmt.Errorf("webhook token secret %s/%s has no key %q", s.Namespace, s.Name, s.Key)
	}
	token := strings.TrimSpace(string(value))
	if token == "" {
		return "", fmt.Errorf("webhook token in key %q of secret %s/%s is empty", s.Key, s.Namespace, s.Name)
	}
	return token, nil
}
