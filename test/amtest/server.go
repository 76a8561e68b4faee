package amtest

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/kmaint/kmaint/test/proclog"
)

// BinaryEnv names the environment variable that overrides the binary.
const BinaryEnv = "KMAINT_ALERTMANAGER"

const defaultBinary = "/usr/bin/prometheus-alertmanager"

// config routes every alert to a receiver that sends nowhere: the tests
// here are about silences, not notifications.
const config = `route:
  receiver: nowhere
receivers:
  - name: nowhere
`

// Server is a running Alertmanager.
type Server struct {
	binary, dir string
	log         *proclog.Buffer
	cmd         *exec.Cmd
	done        chan struct{}
	url         string
}

// Start runs an Alertmanager for the test, stopped when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	return StartWith(t, Options{})
}

// Options change how the Alertmanager runs.
type Options struct {
	// Webhook, when set, is a URL every alert's notification goes to
	// (webhook_configs), a second after the alert arrives and without
	// resolved ones; empty sends nowhere.
	Webhook string
}

// config is the Alertmanager's configuration for o.
func (o Options) config() string {
	if o.Webhook == "" {
		return config
	}
	return fmt.Sprintf(`route:
  receiver: webhook
  group_by: [alertname, node]
  group_wait: 1s
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: webhook
    webhook_configs:
      - url: %q
        send_resolved: false
`, o.Webhook)
}

// StartWith runs an Alertmanager configured by o, stopped when the test
// ends.
func StartWith(t testing.TB, o Options) *Server {
	t.Helper()
	binary := os.Getenv(BinaryEnv)
	if binary == "" {
		binary = defaultBinary
	}
	if _, err := exec.LookPath(binary); err != nil {
		err = fmt.Errorf("%s not found; run hack/install-test-deps.sh (Debian's prometheus-alertmanager) or set %s", binary, BinaryEnv)
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	s := &Server{binary: binary, dir: t.TempDir(), log: &proclog.Buffer{}}
	if err := os.WriteFile(filepath.Join(s.dir, "alertmanager.yml"), []byte(o.config()), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.start(); err != nil {
		t.Fatalf("start alertmanager: %v\nits log:\n%s", err, s.log.String())
	}
	t.Cleanup(s.Stop)
	return s
}

// URL is the server's base URL, e.g. http://127.0.0.1:41234.
func (s *Server) URL() string { return s.url }

// Log is what Alertmanager wrote so far, over all its runs.
func (s *Server) Log() string { return s.log.String() }

// listening is the line Alertmanager logs with the address it bound.
var listening = regexp.MustCompile(`msg="Listening on" address=(127\.0\.0\.1:[0-9]+)`)

// start runs Alertmanager on a port the kernel picks (the one it logs),
// and returns once it answers ready. A restart takes a new port.
func (s *Server) start() error {
	before := len(s.log.String())
	s.cmd = exec.Command(s.binary,
		"--config.file="+filepath.Join(s.dir, "alertmanager.yml"),
		"--storage.path="+filepath.Join(s.dir, "data"),
		"--web.listen-address=127.0.0.1:0",
		// No gossip: one instance, nothing to find.
		"--cluster.listen-address=")
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	if err := s.cmd.Start(); err != nil {
		return err
	}
	s.done = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) {
		_ = cmd.Wait()
		close(done)
	}(s.cmd, s.done)
	deadline := time.Now().Add(60 * time.Second)
	for {
		if m := listening.FindStringSubmatch(s.log.String()[before:]); m != nil && s.url != "http://"+m[1] {
			s.url = "http://" + m[1]
		}
		if s.url != "" && s.ready() {
			return nil
		}
		select {
		case <-s.done:
			return fmt.Errorf("alertmanager exited")
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.Stop()
			return fmt.Errorf("alertmanager not ready within 60s")
		}
	}
}

func (s *Server) ready() bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url+"/-/ready", nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// Stop stops the server; its silences stay in its storage.
func (s *Server) Stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	select {
	case <-s.done:
		return
	default:
	}
	_ = s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
}

// Restart starts a stopped server again from its storage, on a new port.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Stop()
	s.url = ""
	if err := s.start(); err != nil {
		t.Fatalf("restart alertmanager: %v\nits log:\n%s", err, s.log.String())
	}
}
