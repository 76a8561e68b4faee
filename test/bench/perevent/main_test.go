package main

import (
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	out := `goos: linux
BenchmarkGateEvent/nodes=500-2         	      40	   7885408 ns/op	         1.137 MiB-kept	         1.000 k8s-events/event	         1.000 live-get-MaintenanceGate/event	         1.000 live-get-MaintenancePool/event	         0.5000 live-list-Pod/event	         2.500 live-reads/event	         1.463 ms/event-mean	         1.693 ms/event-p50	         2.263 ms/event-p99	         2.567 ms/event-with-writes-mean	         3.049 ms/event-with-writes-p50	         3.574 ms/event-with-writes-p99	         2.500 writes/event	 1176064 B/op	   14117 allocs/op
BenchmarkGateEvent/nodes=20000-2       	      40	 340538118 ns/op	       164.0 ms/event-p50	       349.9 ms/event-p99	        38.52 MiB-kept	34290313 B/op	  173886 allocs/op
BenchmarkMaintenanceEvent/nodes=500    	      40	    267455 ns/op	         0.2650 ms/event-p50	         0.5060 ms/event-p99	   50742 B/op	     743 allocs/op
BenchmarkGateLiveRead-2   	     500	   2460000 ns/op	      1000 gets	         1.100 ms/get-mean	         0.9000 ms/get-p50	         4.200 ms/get-p99	         1.900 ms/both-p50	         6.100 ms/both-p99
PASS
`
	got, live, err := parse(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if len(got["gate"]) != 2 || len(got["maintenance"]) != 1 {
		t.Fatalf("parsed %+v", got)
	}
	g := got["gate"][0]
	if g.Nodes != 500 || g.Iterations != 40 || g.MeanMs != 1.463 || g.P50Ms != 1.693 || g.P99Ms != 2.263 ||
		g.WithWritesMeanMs != 2.567 || g.WithWritesP50Ms != 3.049 || g.WithWritesP99Ms != 3.574 || g.Writes != 2.5 ||
		g.LiveReads != 2.5 || g.K8sEvents != 1 || g.KeptMiB != 1.137 || g.BytesPerOp != 1176064 || g.AllocsPerOp != 14117 {
		t.Errorf("500 nodes: %+v", g)
	}
	if want := map[string]float64{"get MaintenanceGate": 1, "get MaintenancePool": 1, "list Pod": 0.5}; !maps.Equal(g.LiveReadsByKind, want) {
		t.Errorf("live reads by kind %v, want %v", g.LiveReadsByKind, want)
	}
	if g := got["gate"][1]; g.Nodes != 20000 || g.P50Ms != 164.0 || g.P99Ms != 349.9 || g.NsPerOp != 340538118 || g.KeptMiB != 38.52 {
		t.Errorf("20000 nodes: %+v", g)
	}
	if m := got["maintenance"][0]; m.Nodes != 500 || m.P50Ms != 0.265 {
		t.Errorf("maintenance: %+v", m)
	}
	if live == nil || live.Gets != 1000 || live.GetMeanMs != 1.1 || live.GetP50Ms != 0.9 || live.GetP99Ms != 4.2 || live.BothP50Ms != 1.9 || live.BothP99Ms != 6.1 {
		t.Errorf("live read: %+v", live)
	}
}

// A benchmark line of the figures before the operator's own work was
// counted (ms/reconcile-p50) is refused, not saved as zeros.
func TestParseRefusesALineWithoutTheEventsFigures(t *testing.T) {
	out := "BenchmarkGateEvent/nodes=500-2  40  7885408 ns/op  3.405 ms/reconcile-p50  11.25 ms/reconcile-p99\n"
	if _, _, err := parse(strings.NewReader(out)); err == nil || !strings.Contains(err.Error(), "memcluster.Events") {
		t.Errorf("parse = %v, want a refusal naming memcluster.Events", err)
	}
}

// A work tree that differs from its commit is refused, a result written
// under test/bench/results (the last run's) is not such a difference.
func TestCleanRefusesAWorkTreeThatDiffersFromItsCommit(t *testing.T) {
	root := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", root, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	write := func(path, content string) {
		t.Helper()
		full := filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git("init", "-q")
	write("code.go", "package x\n")
	write("test/bench/results/event-gate.json", "{}\n")
	git("add", ".")
	git("commit", "-q", "-m", "x")
	if err := clean(root); err != nil {
		t.Fatalf("a clean tree: %v", err)
	}
	write("test/bench/results/event-gate.json", "{\"new\": true}\n")
	if err := clean(root); err != nil {
		t.Errorf("a tree whose only change is a result: %v", err)
	}
	write("code.go", "package x // changed\n")
	if err := clean(root); err == nil || !strings.Contains(err.Error(), "commit first") {
		t.Errorf("a tree with its code changed: %v, want a refusal", err)
	}
}
