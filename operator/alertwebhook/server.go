package alertwebhook

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	stdlog "log"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// The paths Server serves.
const (
	AlertsPath  = "/alerts"
	HealthzPath = "/healthz"
)

// Server serves a Handler at AlertsPath, and a liveness probe at
// HealthzPath, until its context ends. It serves TLS with the certificate
// Certificates give (a generated one kept in a Secret, SecretCertificates,
// or mounted files, FileCertificates); without Certificates it serves plain
// HTTP, which is only for clusters where a mesh or a private network
// protects the traffic: the bearer token travels in the clear.
type Server struct {
	// BindAddress is the address to listen on, e.g. ":9443" or
	// "127.0.0.1:0".
	BindAddress string
	// Handler handles the alerts.
	Handler http.Handler
	// Certificates give the TLS certificate; nil serves plain HTTP.
	Certificates Certificates
	// Logger logs the server's start; unset means the logger of Start's
	// context.
	Logger logr.Logger

	mu   sync.Mutex
	addr net.Addr
}

// Certificates give a Server its serving certificate and keep it current.
type Certificates interface {
	// Load reads (or makes) the first certificate. The server listens only
	// once it has one, and fails to start when Load fails.
	Load(ctx context.Context) error
	// Start keeps the certificate current until ctx ends.
	Start(ctx context.Context) error
	// GetCertificate gives the current certificate, as tls.Config wants.
	GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error)
}

var (
	_ manager.Runnable               = (*Server)(nil)
	_ manager.LeaderElectionRunnable = (*Server)(nil)
)

// NeedLeaderElection is false: Alertmanager may post to any replica, and
// every replica can take alerts, since the sink writes to the API server.
func (s *Server) NeedLeaderElection() bool { return false }

// Addr is the address the server listens on, nil until it does. With a
// BindAddress of port 0 it tells which port was picked.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

// Start serves until ctx ends, then shuts down, letting requests in flight
// finish for a few seconds. It implements manager.Runnable.
func (s *Server) Start(ctx context.Context) error {
	if s.Handler == nil {
		return errors.New("alert webhook server: no handler")
	}
	logger := s.Logger
	if logger.GetSink() == nil {
		logger = log.FromContext(ctx)
	}
	mux := http.NewServeMux()
	mux.Handle(AlertsPath, s.Handler)
	mux.HandleFunc(HealthzPath, func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok\n")
	})
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		// Requests keep the context's values (the logger) but not its end,
		// so that those in flight at shutdown can finish within the grace.
		BaseContext: func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
		// Failed handshakes, such as Alertmanager sending plain HTTP to the
		// TLS port, in the operator's log rather than on stderr.
		ErrorLog: stdlog.New(logWriter{logger}, "", 0),
	}

	certs := s.Certificates
	if certs != nil {
		if err := certs.Load(ctx); err != nil {
			return fmt.Errorf("alert webhook server: %w", err)
		}
		srv.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: certs.GetCertificate}
	}

	ln, err := net.Listen("tcp", s.BindAddress)
	if err != nil {
		return fmt.Errorf("alert webhook server: listen on %s: %w", s.BindAddress, err)
	}
	s.mu.Lock()
	s.addr = ln.Addr()
	s.mu.Unlock()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	if certs != nil {
		wg.Go(func() {
			if err := certs.Start(ctx); err != nil {
				errs <- fmt.Errorf("alert webhook server: keep certificate current: %w", err)
				cancel()
			}
		})
	}
	wg.Go(func() {
		<-ctx.Done()
		// The manager's context has ended; give requests in flight a moment.
		shutdownCtx, done := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer done()
		if err := srv.Shutdown(shutdownCtx); err != nil {
			errs <- fmt.Errorf("alert webhook server: shut down: %w", err)
		}
	})

	logger.Info("Serving Alertmanager webhook", "address", ln.Addr().String(), "path", AlertsPath, "tls", certs != nil)
	if certs != nil {
		err = srv.ServeTLS(ln, "", "")
	} else {
		err = srv.Serve(ln)
	}
	cancel()
	wg.Wait()
	close(errs)
	var all []error
	if !errors.Is(err, http.ErrServerClosed) {
		all = append(all, fmt.Errorf("alert webhook server: %w", err))
	}
	for e := range errs {
		all = append(all, e)
	}
	return errors.Join(all...)
}

// logWriter turns what http.Server logs into log lines of the logger.
type logWriter struct{ logger logr.Logger }

func (w logWriter) Write(p []byte) (int, error) {
	w.logger.Info("Alert webhook connection failed", "error", strings.TrimSpace(string(p)))
	return len(p), nil
}
