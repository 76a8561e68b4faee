package bench

import (
	"bufio"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/kmaint/kmaint/test/bench/provenance"
	"github.com/kmaint/kmaint/test/testbed"
)

// processStats reads a process's peak resident memory and CPU time.
func processStats(pid int) (peakRSSBytes int64, cpuSeconds float64, err error) {
	status, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			f := strings.Fields(line)
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			peakRSSBytes = kb * 1024
		}
	}
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, 0, err
	}
	// Fields after the command name, which is in parentheses and may hold
	// spaces: utime and stime are the 12th and 13th of those.
	rest := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+2:]))
	utime, _ := strconv.ParseFloat(rest[11], 64)
	stime, _ := strconv.ParseFloat(rest[12], 64)
	return peakRSSBytes, (utime + stime) / 100, nil // USER_HZ is 100 on Linux
}

// reconcileTime reads, from a metrics endpoint, how many reconciles the
// named controller ran and the seconds they took in all
// (controller_runtime_reconcile_time_seconds).
func reconcileTime(url, controller string) (count, seconds float64, err error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	label := `controller="` + controller + `"`
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, label) {
			continue
		}
		f := strings.Fields(line)
		v, _ := strconv.ParseFloat(f[len(f)-1], 64)
		switch {
		case strings.HasPrefix(line, "controller_runtime_reconcile_time_seconds_count{"):
			count = v
		case strings.HasPrefix(line, "controller_runtime_reconcile_time_seconds_sum{"):
			seconds = v
		}
	}
	return count, seconds, sc.Err()
}

// clientRequests sums rest_client_requests_total from a metrics endpoint.
func clientRequests(url string) (float64, error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	total := 0.0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "rest_client_requests_total{") {
			f := strings.Fields(line)
			v, _ := strconv.ParseFloat(f[len(f)-1], 64)
			total += v
		}
	}
	return total, sc.Err()
}

// machine describes where the benchmark ran.
type machine = provenance.Machine

func describeMachine() machine { return provenance.ThisMachine() }

// childCPUSeconds is the CPU time of this process's child named comm, e.g.
// the test bed's kube-apiserver, to tell what the bench costs it.
func childCPUSeconds(comm string) (float64, error) {
	pid, err := testbed.ChildNamed(comm)
	if err != nil {
		return 0, err
	}
	_, cpu, err := processStats(pid)
	return cpu, err
}
