package promtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/kmaint/kmaint/policies"
	"github.com/kmaint/kmaint/policies/promapi"
	"github.com/kmaint/kmaint/test/proclog"
)

// BinaryEnv names the prometheus binary to run instead of
// /usr/bin/prometheus. promtool is looked for next to it.
const BinaryEnv = "KMAINT_PROMETHEUS"

const defaultBinary = "/usr/bin/prometheus"

// Options configure a Server. The zero value scrapes nothing every second.
type Options struct {
	// Targets are host:port addresses (Exporter.Address) scraped at /metrics
	// under the job "promtest". Each becomes the instance label of its
	// series, unless HonorLabels keeps the exporter's own.
	Targets []string

	// HonorLabels keeps the job and instance labels an exporter sets itself,
	// so one Exporter can stand for many hosts.
	HonorLabels bool

	// RuleFiles are Prometheus rule files to load, e.g.
	// ../../config/prometheus/fragmentation-rules.yaml.
	RuleFiles []string

	// Interval is both the scrape and the rule evaluation interval.
	// Default 1s.
	Interval time.Duration

	// StartTimeout bounds the wait for /-/ready on Start and Restart.
	// Default 60s: a loaded 2-core CI machine can be slow to open the TSDB.
	StartTimeout time.Duration

	// Binary is the prometheus binary to run; by default the one Binary
	// (in a test) or LookBinary (in Run) finds.
	Binary string
}

// Server is a running Prometheus, stopped when the test ends (Start) or
// when its program stops it (Run).
type Server struct {
	// t is the test of a server from Start; nil for one from Run.
	t       testing.TB
	binary  string
	args    []string
	url     string
	timeout time.Duration
	querier *promapi.Client

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}   // closed when cmd has exited
	log  *proclog.Buffer // the output of every run, in order
	// logShown is set once a failure message has carried the whole log,
	// so that cleanup does not print it again.
	logShown bool
}

// Start runs Prometheus on a free port of 127.0.0.1 with a configuration and
// storage in the test's temporary directory, and returns once it is ready.
// It fails the test, with Prometheus's log, if Prometheus does not get
// ready in time, and stops Prometheus when the test ends.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	if opts.Binary == "" {
		opts.Binary = Binary(t)
	}
	s, err := Run(t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	s.t = t
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() && !s.logShown {
			t.Logf("prometheus log (last lines):\n%s", s.logTail(60))
		}
	})
	return s
}

// Run is Start for a program: it runs Prometheus with its configuration and
// storage in dir, which must exist, and returns once it is ready. The
// caller stops it with Stop. If Prometheus does not get ready in time, the
// error carries its log.
func Run(dir string, opts Options) (*Server, error) {
	if opts.Binary == "" {
		var err error
		if opts.Binary, err = LookBinary(); err != nil {
			return nil, err
		}
	}
	if opts.Interval <= 0 {
		opts.Interval = time.Second
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 60 * time.Second
	}
	configFile := filepath.Join(dir, "prometheus.yml")
	if err := writeConfig(configFile, opts); err != nil {
		return nil, fmt.Errorf("prometheus config: %w", err)
	}

	s := &Server{binary: opts.Binary, timeout: opts.StartTimeout, log: &proclog.Buffer{}}
	// The port is free when we ask and taken by Prometheus a moment later;
	// another process can take it in between, so a bind failure is retried
	// on a new port.
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		var port int
		if port, err = freePort(); err != nil {
			return nil, fmt.Errorf("free port for prometheus: %w", err)
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		s.url = "http://" + addr
		s.args = []string{
			"--config.file=" + configFile,
			"--storage.tsdb.path=" + filepath.Join(dir, "data"),
			"--web.listen-address=" + addr,
		}
		if err = s.start(); err == nil || !strings.Contains(s.log.String(), "address already in use") {
			break
		}
	}
	if err != nil {
		s.logShown = true
		return nil, fmt.Errorf("start prometheus: %w\nprometheus log:\n%s", err, s.log.String())
	}
	s.querier, err = promapi.New(s.url, 5*time.Second)
	if err != nil {
		s.Stop()
		return nil, fmt.Errorf("prometheus client: %w", err)
	}
	return s, nil
}

// Binary returns the prometheus binary to run: $KMAINT_PROMETHEUS, or
// /usr/bin/prometheus. Without one the test skips, or fails when $CI is set
// (make test installs it, so a skip there would hide tests).
func Binary(t testing.TB) string {
	t.Helper()
	return lookBinary(t, os.Getenv(BinaryEnv), defaultBinary)
}

// LookBinary returns the binary Binary would, or an error saying how to
// install one.
func LookBinary() (string, error) {
	return findBinary(os.Getenv(BinaryEnv), defaultBinary)
}

// Promtool returns the promtool that comes with Binary: the one next to
// $KMAINT_PROMETHEUS, or /usr/bin/promtool. It skips or fails like Binary.
func Promtool(t testing.TB) string {
	t.Helper()
	var env string
	if p := os.Getenv(BinaryEnv); p != "" {
		env = filepath.Join(filepath.Dir(p), "promtool")
	}
	return lookBinary(t, env, "/usr/bin/promtool")
}

func lookBinary(t testing.TB, env, fallback string) string {
	t.Helper()
	path, err := findBinary(env, fallback)
	if err == nil {
		return path
	}
	if os.Getenv("CI") != "" {
		t.Fatal(err)
	}
	t.Skip(err)
	return ""
}

func findBinary(env, fallback string) (string, error) {
	path := fallback
	if env != "" {
		path = env
	}
	if _, err := exec.LookPath(path); err != nil {
		return "", fmt.Errorf("%s not found; run hack/install-test-deps.sh (Debian's prometheus package) or set %s", path, BinaryEnv)
	}
	return path, nil
}

// URL is the server's base URL, e.g. http://127.0.0.1:41234.
func (s *Server) URL() string { return s.url }

// Querier is a promapi client of this server, as the operator uses one.
func (s *Server) Querier() *promapi.Client { return s.querier }

// Log is what Prometheus has written to stdout and stderr so far, over all
// its runs.
func (s *Server) Log() string { return s.log.String() }

// Stop stops Prometheus (SIGTERM, then SIGKILL after 10s) and waits for it
// to exit, leaving its port unanswered and its storage for Restart. Stopping
// a stopped server does nothing.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	s.cmd = nil
}

// Restart starts a stopped Prometheus again on the same port and storage
// (series scraped before the stop are still there), and returns once it is
// ready; a running one is stopped first. It fails the test, with the log, if
// Prometheus does not get ready. Call it from the test's goroutine, and
// only on a server from Start; a program uses Resume.
func (s *Server) Restart() {
	s.t.Helper()
	if err := s.Resume(); err != nil {
		s.logShown = true
		s.t.Fatal(err)
	}
}

// Resume is Restart returning an error, with the log, instead of failing a
// test.
func (s *Server) Resume() error {
	s.Stop()
	if err := s.start(); err != nil {
		return fmt.Errorf("restart prometheus: %w\nprometheus log:\n%s", err, s.log.String())
	}
	return nil
}

// start runs Prometheus with s.args and waits until it is ready or has
// exited.
func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintf(s.log, "--- promtest: starting %s %s\n", s.binary, strings.Join(s.args, " "))
	cmd := exec.Command(s.binary, s.args...)
	cmd.Stdout = s.log
	cmd.Stderr = s.log
	// Take Prometheus down with a test binary that dies without cleanup.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(done)
	}()

	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	err := waitReady(ctx, s.url+"/-/ready", done)
	if err == nil {
		s.cmd, s.done = cmd, done
		return nil
	}
	select {
	case <-done:
		return fmt.Errorf("prometheus exited before it was ready: %v", waitErr)
	default:
	}
	_ = cmd.Process.Kill()
	<-done
	return err
}

// waitReady polls url until it answers 200, exited is closed or ctx ends.
func waitReady(ctx context.Context, url string, exited <-chan struct{}) error {
	client := &http.Client{Timeout: 2 * time.Second}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("%s: %s", url, resp.Status)
		}
		last = err
		select {
		case <-exited:
			return errors.New("prometheus exited")
		case <-ctx.Done():
			return fmt.Errorf("prometheus not ready: %w (last: %v)", ctx.Err(), last)
		case <-tick.C:
		}
	}
}

// WaitForValue evaluates query every 100ms through the promapi adapter
// until ok accepts its result, and returns that result. It gives up with an
// error naming the last result or error when ctx ends, and at once when
// Prometheus refuses the query (a *policies.QueryError), which no amount of
// waiting fixes. A server that cannot be reached is waited for.
func (s *Server) WaitForValue(ctx context.Context, query string, ok func(model.Vector) bool) (model.Vector, error) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var (
		last    model.Vector
		lastErr error
	)
	for {
		v, err := s.querier.Query(ctx, query, time.Now())
		switch {
		case err == nil:
			if ok(v) {
				return v, nil
			}
			last, lastErr = v, nil
		case policies.IsQueryError(err):
			return nil, err
		default:
			lastErr = err
		}
		select {
		case <-ctx.Done():
			if lastErr != nil {
				return nil, fmt.Errorf("wait for %s: %w (last error: %v)", query, ctx.Err(), lastErr)
			}
			return nil, fmt.Errorf("wait for %s: %w (last result: %v)", query, ctx.Err(), last)
		case <-tick.C:
		}
	}
}

// Value returns the value of the sample in v whose labels include all of
// labels, and whether there is exactly one such sample.
func Value(v model.Vector, labels map[string]string) (float64, bool) {
	var found *model.Sample
	for _, s := range v {
		if matches(s.Metric, labels) {
			if found != nil {
				return 0, false
			}
			found = s
		}
	}
	if found == nil {
		return 0, false
	}
	return float64(found.Value), true
}

func matches(m model.Metric, labels map[string]string) bool {
	for k, want := range labels {
		if string(m[model.LabelName(k)]) != want {
			return false
		}
	}
	return true
}

// config is the part of Prometheus's configuration Start writes. JSON is
// YAML, so encoding/json writes the file and quotes every value right.
type config struct {
	Global        globalConfig   `json:"global"`
	RuleFiles     []string       `json:"rule_files,omitempty"`
	ScrapeConfigs []scrapeConfig `json:"scrape_configs,omitempty"`
}

type globalConfig struct {
	ScrapeInterval     string `json:"scrape_interval"`
	ScrapeTimeout      string `json:"scrape_timeout"`
	EvaluationInterval string `json:"evaluation_interval"`
}

type scrapeConfig struct {
	JobName       string         `json:"job_name"`
	HonorLabels   bool           `json:"honor_labels"`
	StaticConfigs []staticConfig `json:"static_configs"`
}

type staticConfig struct {
	Targets []string `json:"targets"`
}

func writeConfig(path string, opts Options) error {
	interval := model.Duration(opts.Interval).String()
	c := config{Global: globalConfig{
		ScrapeInterval:     interval,
		ScrapeTimeout:      interval,
		EvaluationInterval: interval,
	}}
	for _, f := range opts.RuleFiles {
		abs, err := filepath.Abs(f)
		if err != nil {
			return err
		}
		c.RuleFiles = append(c.RuleFiles, abs)
	}
	if len(opts.Targets) > 0 {
		c.ScrapeConfigs = []scrapeConfig{{
			JobName:       "promtest",
			HonorLabels:   opts.HonorLabels,
			StaticConfigs: []staticConfig{{Targets: opts.Targets}},
		}}
	}
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (s *Server) logTail(n int) string {
	lines := strings.Split(strings.TrimRight(s.log.String(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
