package silences

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Options say which Alertmanagers hold the pools' silences and how the
// operator reaches them.
type Options struct {
	// URLs are the Alertmanagers, e.g. https://alertmanager.monitoring:9093;
	// each gets every silence. An Alertmanager cluster shares its
	// silences: give one URL for it (its Service), not one per replica.
	URLs []string
	// CredentialsDir holds the credentials sent to every Alertmanager,
	// read again at each call (a mounted Secret's files): a file "token"
	// (sent as a bearer token), or files "username" and "password"
	// (basic auth). Empty: none.
	CredentialsDir string
	// CAFile verifies the Alertmanagers' certificates instead of the
	// system's roots; CertFile and KeyFile are the operator's client
	// certificate, when they ask for one.
	CAFile, CertFile, KeyFile string
	// Timeout bounds each call; 0 means 10s.
	Timeout time.Duration
	// Margin is how far a silence's end lies ahead of the last pass that
	// saw its node in flight; 0 means DefaultMargin. At least 2m.
	Margin time.Duration
}

// MinMargin is the least margin: a silence is extended when half of it is
// left, and a pass that fails is tried again within a minute.
const MinMargin = 2 * time.Minute

// Alertmanagers returns a client of each Alertmanager the options name.
func (o Options) Alertmanagers() ([]Alertmanager, error) {
	if len(o.URLs) == 0 {
		return nil, nil
	}
	if o.Margin != 0 && o.Margin < MinMargin {
		return nil, fmt.Errorf("silence margin %s: want at least %s", o.Margin, MinMargin)
	}
	tlsConfig, err := o.tls()
	if err != nil {
		return nil, err
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.TLSClientConfig = tlsConfig
	httpClient := &http.Client{Timeout: timeout, Transport: transport}
	var out []Alertmanager
	for _, u := range o.URLs {
		c, err := New(u, httpClient)
		if err != nil {
			return nil, err
		}
		if o.CredentialsDir != "" {
			c.Authorize = o.authorize
		}
		for _, am := range out {
			if am.Name == c.Name() {
				return nil, fmt.Errorf("alertmanager URL %s given twice", c.Name())
			}
		}
		out = append(out, Alertmanager{Name: c.Name(), API: c})
	}
	return out, nil
}

func (o Options) tls() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if o.CAFile != "" {
		pem, err := os.ReadFile(o.CAFile)
		if err != nil {
			return nil, fmt.Errorf("alertmanager CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("alertmanager CA %s: no PEM certificate in it", o.CAFile)
		}
		cfg.RootCAs = pool
	}
	if (o.CertFile == "") != (o.KeyFile == "") {
		return nil, errors.New("alertmanager client certificate: give both the certificate and the key file, or neither")
	}
	if o.CertFile != "" {
		// Read at each handshake: a renewed certificate is taken up.
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			c, err := tls.LoadX509KeyPair(o.CertFile, o.KeyFile)
			if err != nil {
				return nil, fmt.Errorf("alertmanager client certificate: %w", err)
			}
			return &c, nil
		}
	}
	return cfg, nil
}

// authorize adds the credentials CredentialsDir holds now.
func (o Options) authorize(req *http.Request) error {
	read := func(name string) (string, bool, error) {
		b, err := os.ReadFile(filepath.Join(o.CredentialsDir, name))
		if errors.Is(err, os.ErrNotExist) {
			return "", false, nil
		}
		if err != nil {
			return "", false, fmt.Errorf("read the alertmanager credentials: %w", err)
		}
		return strings.TrimSpace(string(b)), true, nil
	}
	token, ok, err := read("token")
	if err != nil || ok {
		if ok {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		return err
	}
	user, okUser, err := read("username")
	if err != nil {
		return err
	}
	pass, okPass, err := read("password")
	if err != nil {
		return err
	}
	if !okUser || !okPass {
		return fmt.Errorf("alertmanager credentials: %s holds neither token nor username and password", o.CredentialsDir)
	}
	req.SetBasicAuth(user, pass)
	return nil
}
