package main

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	out := `goos: linux
BenchmarkGateEvent/nodes=500-2         	      40	   7885408 ns/op	         3.405 ms/reconcile-p50	        11.25 ms/reconcile-p99	 1949600 B/op	   17783 allocs/op
BenchmarkGateEvent/nodes=20000-2       	      40	 340538118 ns/op	       164.0 ms/reconcile-p50	       349.9 ms/reconcile-p99	        38.52 MiB-kept	34290313 B/op	  173886 allocs/op
BenchmarkMaintenanceEvent/nodes=500    	      40	    267455 ns/op	         0.2650 ms/reconcile-p50	         0.5060 ms/reconcile-p99	   50742 B/op	     743 allocs/op
PASS
`
	got, err := parse(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if len(got["gate"]) != 2 || len(got["maintenance"]) != 1 {
		t.Fatalf("parsed %+v", got)
	}
	g := got["gate"][1]
	if g.Nodes != 20000 || g.Iterations != 40 || g.P50Ms != 164.0 || g.P99Ms != 349.9 || g.BytesPerOp != 34290313 || g.AllocsPerOp != 173886 || g.NsPerOp != 340538118 || g.KeptMiB != 38.52 {
		t.Errorf("20000 nodes: %+v", g)
	}
	if m := got["maintenance"][0]; m.Nodes != 500 || m.P50Ms != 0.265 {
		t.Errorf("maintenance: %+v", m)
	}
}
