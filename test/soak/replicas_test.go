package soak_test

import (
	"bufio"
	"fmt"
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

	"github.com/kmaint/kmaint/test/harness"
)

// replicas are the operator's replicas, each a process of its own with
// leader election on, as the Deployment runs them: one leads, the other
// waits for the Lease. A replica killed (SIGKILL) leaves its Lease to run
// out; the other takes over.
type replicas struct {
	t     testing.TB
	bin   string
	flags []string
	// each are the flags of replica i of its own (its webhook's address).
	each func(i int) []string
	kube string
	dir  string

	mu    sync.Mutex
	procs []*replica
	// stopped is set at the end of the run: nothing is started again.
	stopped bool
	// samples are every replica's memory and goroutines over the run.
	samples []sample
}

type replica struct {
	cmd     *exec.Cmd
	metrics string
	started time.Time
	exited  chan struct{}
	// killed is set when the soak killed it; a replica that exits on its
	// own (leader election lost while the API server was away) is started
	// again after a pause, as the kubelet restarts a container.
	killed bool
}

// restartPause is how long a replica that exited on its own waits to be
// started again: the kubelet's first back-off.
const restartPause = 10 * time.Second

// sample is one replica's process at one moment.
type sample struct {
	Replica    int     `json:"replica"`
	Seconds    float64 `json:"seconds"`
	RSSMiB     float64 `json:"rssMiB"`
	Goroutines float64 `json:"goroutines"`
	// Age is how long the process had run.
	AgeSeconds float64 `json:"ageSeconds"`
	// Leader is true when the replica led (leader_election_master_status):
	// a follower runs no controller, and holds a fraction of the memory
	// and goroutines.
	Leader bool `json:"leader"`
}

func newReplicas(t testing.TB, bin string, n int, each func(i int) []string, flags ...string) *replicas {
	kube := filepath.Join(t.TempDir(), "kubeconfig")
	if err := bed.WriteKubeconfig(kube, "kmaint-operator", "system:masters"); err != nil {
		t.Fatal(err)
	}
	// The replicas' logs outlive a failed run, to be read.
	dir, err := os.MkdirTemp("", "kmaint-soak-operators-")
	if err != nil {
		t.Fatal(err)
	}
	r := &replicas{t: t, bin: bin, flags: flags, each: each, kube: kube, dir: dir, procs: make([]*replica, n)}
	t.Cleanup(func() {
		r.stopAll()
		if t.Failed() {
			t.Logf("the operator replicas' logs: %s", dir)
			return
		}
		_ = os.RemoveAll(dir)
	})
	return r
}

// start starts replica i, unless it runs.
func (r *replicas) start(i int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p := r.procs[i]; r.stopped || p != nil && !isClosed(p.exited) {
		return nil
	}
	metrics := harness.FreeAddr(r.t)
	args := append([]string{"--metrics-bind-address=" + metrics, "--health-probe-bind-address=0",
		"--leader-elect", "--leader-election-namespace=" + leaseNamespace}, r.flags...)
	args = append(args, r.each(i)...)
	cmd := exec.Command(r.bin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+r.kube)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	log, err := os.OpenFile(filepath.Join(r.dir, fmt.Sprintf("operator-%d.log", i)), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("start operator replica %d: %w", i, err)
	}
	p := &replica{cmd: cmd, metrics: metrics, started: time.Now(), exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		log.Close()
		close(p.exited)
		r.mu.Lock()
		restart := !p.killed && !r.stopped
		r.mu.Unlock()
		if restart {
			time.AfterFunc(restartPause, func() { _ = r.start(i) })
		}
	}()
	r.procs[i] = p
	return nil
}

// kill kills replica i outright, as the kernel's OOM killer or a node lost
// would, and waits until it is gone. It reports whether it ran.
func (r *replicas) kill(i int) bool {
	r.mu.Lock()
	p := r.procs[i]
	r.mu.Unlock()
	if p == nil || isClosed(p.exited) {
		return false
	}
	r.mu.Lock()
	p.killed = true
	r.mu.Unlock()
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
	return true
}

func (r *replicas) stopAll() {
	r.mu.Lock()
	r.stopped = true
	r.mu.Unlock()
	for i := range r.procs {
		r.kill(i)
	}
}

// running reports which replicas run.
func (r *replicas) running() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []int
	for i, p := range r.procs {
		if p != nil && !isClosed(p.exited) {
			out = append(out, i)
		}
	}
	return out
}

// sample reads every running replica's RSS and goroutines.
func (r *replicas) sample(since time.Time) {
	r.mu.Lock()
	procs := append([]*replica(nil), r.procs...)
	r.mu.Unlock()
	for i, p := range procs {
		if p == nil || isClosed(p.exited) {
			continue
		}
		rss, goroutines, leader, err := scrape("http://" + p.metrics + "/metrics")
		if err != nil {
			continue // starting, or killed a moment ago
		}
		r.mu.Lock()
		r.samples = append(r.samples, sample{Replica: i, Seconds: time.Since(since).Seconds(),
			RSSMiB: rss / (1 << 20), Goroutines: goroutines, AgeSeconds: time.Since(p.started).Seconds(), Leader: leader})
		r.mu.Unlock()
	}
}

// scrape reads process_resident_memory_bytes, go_goroutines and whether
// the replica leads.
func scrape(url string) (rss, goroutines float64, leader bool, err error) {
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0, 0, false, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 {
			continue
		}
		if strings.HasPrefix(f[0], "leader_election_master_status{") && f[1] == "1" {
			leader = true
		}
		switch f[0] {
		case "process_resident_memory_bytes":
			rss, _ = strconv.ParseFloat(f[1], 64)
		case "go_goroutines":
			goroutines, _ = strconv.ParseFloat(f[1], 64)
		}
	}
	return rss, goroutines, leader, sc.Err()
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
