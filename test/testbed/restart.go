package testbed

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// apiServerRestart is kube-apiserver as RestartAPIServer started it again.
type apiServerRestart struct {
	cmd    *exec.Cmd
	exited chan struct{}
}

// RestartAPIServer stops kube-apiserver (SIGTERM, as a rolling upgrade of
// the control plane would), keeps it down for down, and starts it again on
// the same address, certificates and etcd: every client's connection and
// watch ends, and clients that watch again from a version etcd compacted
// meanwhile list again. It returns once the API server is ready.
//
// envtest cannot do this itself: its restart makes new serving
// certificates, which no client configured before trusts.
func (b *Bed) RestartAPIServer(ctx context.Context, down time.Duration) error {
	b.restartMu.Lock()
	defer b.restartMu.Unlock()
	pid, err := b.apiServerPID()
	if err != nil {
		return err
	}
	cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil {
		return fmt.Errorf("read kube-apiserver's command line: %w", err)
	}
	args := bytes.Split(bytes.TrimRight(cmdline, "\x00"), []byte{0})
	if err := b.stopAPIServer(pid); err != nil {
		return err
	}
	// The outage lasts as long as the caller says: a simulated duration.
	select {
	case <-ctx.Done():
	case <-time.After(down):
	}
	cmd := exec.Command(string(args[0]))
	logPath := filepath.Join(os.TempDir(), fmt.Sprintf("kmaint-kube-apiserver-%d.log", os.Getpid()))
	for _, a := range args[1:] {
		cmd.Args = append(cmd.Args, string(a))
		if dir, ok := strings.CutPrefix(string(a), "--cert-dir="); ok {
			logPath = filepath.Join(dir, "kube-apiserver-restarted.log")
		}
	}
	// What it says goes to a file in its certificates' directory, which
	// the error names when it does not become ready.
	out, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	// It must not outlive the test binary: the reaper knows only the
	// first kube-apiserver's pid.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start kube-apiserver again: %w", err)
	}
	r := &apiServerRestart{cmd: cmd, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(r.exited)
	}()
	b.restarted = r
	if err := b.waitReady(ctx); err != nil {
		said, _ := os.ReadFile(logPath)
		if len(said) > 4000 {
			said = said[len(said)-4000:]
		}
		return fmt.Errorf("%w; the end of its output:\n%s", err, said)
	}
	return nil
}

// apiServerPID is the running kube-apiserver's process.
func (b *Bed) apiServerPID() (int, error) {
	if b.restarted != nil {
		return b.restarted.cmd.Process.Pid, nil
	}
	return ChildNamed("kube-apiserver")
}

// stopAPIServer stops the kube-apiserver process pid and waits until it
// is gone: SIGTERM, and SIGKILL when it has not stopped within 5 seconds
// (a watch whose client stopped reading holds a graceful shutdown for as
// long as it lasts; a control plane's outage is the fault, not its
// manners). envtest, or the earlier restart, reaps it.
func (b *Bed) stopAPIServer(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	gone := func(context.Context) (bool, error) {
		if r := b.restarted; r != nil && r.cmd.Process.Pid == pid {
			select {
			case <-r.exited:
				return true, nil
			default:
				return false, nil
			}
		}
		_, err := os.Stat(filepath.Join("/proc", strconv.Itoa(pid)))
		return errors.Is(err, os.ErrNotExist), nil
	}
	for _, stop := range []struct {
		sig  syscall.Signal
		wait time.Duration
	}{{syscall.SIGTERM, 5 * time.Second}, {syscall.SIGKILL, time.Minute}} {
		if err := p.Signal(stop.sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
			return fmt.Errorf("stop kube-apiserver: %w", err)
		}
		if wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, stop.wait, true, gone) == nil {
			return nil
		}
	}
	return errors.New("kube-apiserver did not stop, even killed")
}

// waitReady waits until the API server answers /readyz.
func (b *Bed) waitReady(ctx context.Context) error {
	transport, err := rest.TransportFor(b.Config)
	if err != nil {
		return err
	}
	c := &http.Client{Transport: transport, Timeout: 5 * time.Second}
	var last string
	ready := func(ctx context.Context) (bool, error) {
		resp, err := c.Get(strings.TrimSuffix(b.Config.Host, "/") + "/readyz")
		if err != nil {
			last = err.Error()
			return false, nil
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		last = fmt.Sprintf("%s: %s", resp.Status, body)
		return resp.StatusCode == http.StatusOK, nil
	}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, ready); err != nil {
		return fmt.Errorf("kube-apiserver not ready after its restart: %w (/readyz: %s)", err, last)
	}
	return nil
}

// stopRestarted stops the kube-apiserver a restart started, before envtest
// stops etcd and removes the certificates it serves with.
func (b *Bed) stopRestarted() error {
	b.restartMu.Lock()
	defer b.restartMu.Unlock()
	r := b.restarted
	if r == nil {
		return nil
	}
	b.restarted = nil
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.exited:
		return nil
	case <-time.After(time.Minute):
		_ = r.cmd.Process.Kill()
		<-r.exited
		return errors.New("kube-apiserver restarted by the test bed did not stop within a minute; killed")
	}
}

// WithCompactionEvery has the API server compact etcd at this interval (5
// minutes by default): a client that watches again from a version older
// than the last compaction, after its watch ended, is told the version is
// gone and lists again, as informers do in a real cluster after a long
// disconnection.
func WithCompactionEvery(d time.Duration) Option {
	return func(env *envtest.Environment) error {
		env.ControlPlane.GetAPIServer().Configure().Set("etcd-compaction-interval", d.String())
		return nil
	}
}
