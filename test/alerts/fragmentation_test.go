package alerts_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/promtest"
)

// The memory fragmentation sample, and the series it queries, which
// fragmentationRules records.
const (
	fragmentationSample = "../../config/samples/rebootpolicy-memory-fragmentation.yaml"
	fragmentationRecord = "instance:node_memory_unusable_free_index_order9:ratio"
)

// buddyinfo is one host's /proc/buddyinfo: free blocks per NUMA node, zone
// and order (0..10).
type buddyinfo map[[2]string][11]float64

// fragmentationHosts are the hosts the exporter stands for, by instance.
var fragmentationHosts = map[string]buddyinfo{
	// Fragmented: hundreds of MiB free, nearly all in blocks under 2 MiB.
	// DMA's large blocks are not usable memory and must not hide that.
	"10.0.0.1:9100": {
		{"0", "DMA"}:    {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 3},
		{"0", "DMA32"}:  {1203, 980, 712, 455, 210, 88, 20, 3, 1, 0, 0},
		{"0", "Normal"}: {48211, 30102, 12250, 4019, 1203, 301, 45, 6, 2, 1, 0},
	},
	// Healthy, two NUMA nodes: most free memory in 4 MiB blocks.
	"10.0.0.2:9100": {
		{"0", "DMA"}:    {1, 1, 1, 0, 2, 1, 1, 0, 1, 1, 3},
		{"0", "DMA32"}:  {5, 4, 6, 3, 5, 5, 4, 3, 4, 2, 700},
		{"0", "Normal"}: {812, 540, 377, 203, 150, 97, 61, 40, 33, 28, 5012},
		{"1", "Normal"}: {640, 500, 301, 180, 122, 80, 50, 33, 20, 17, 6240},
	},
	// No free memory outside DMA at all: 0/0.
	"10.0.0.3:9100": {
		{"0", "DMA"}:    {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3},
		{"0", "Normal"}: {},
	},
}

// unusableIndex is the kernel's unusable free space index at order 9 over
// the host's zones but DMA, computed the long way.
func unusableIndex(b buddyinfo) float64 {
	var free, usable float64
	for key, blocks := range b {
		if key[1] == "DMA" {
			continue
		}
		for order, n := range blocks {
			pages := n * math.Exp2(float64(order))
			free += pages
			if order >= 9 {
				usable += pages
			}
		}
	}
	return (free - usable) / free
}

// TestFragmentationRulesPromtool: the rule file passes promtool, as it must
// for Prometheus (or the Prometheus Operator) to load it.
func TestFragmentationRulesPromtool(t *testing.T) {
	t.Parallel()
	out, err := exec.Command(promtest.Promtool(t), "check", "rules", fragmentationRules).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check rules %s: %v\n%s", fragmentationRules, err, out)
	}
	if !bytes.Contains(out, []byte("SUCCESS: 1 rules found")) {
		t.Errorf("promtool check rules: want one rule found, got\n%s", out)
	}
}

// TestFragmentationIndex loads the rule file into a real Prometheus, serves
// known buddyinfo for three hosts and checks the recorded index against the
// hand-computed one, and that the sample policy's comparison picks only the
// fragmented host.
func TestFragmentationIndex(t *testing.T) {
	t.Parallel()
	exp := promtest.NewExporter(t)
	want := map[string]float64{}
	for instance, b := range fragmentationHosts {
		for key, blocks := range b {
			for order, n := range blocks {
				exp.Set("node_buddyinfo_blocks", map[string]string{
					"job": "node-exporter", "instance": instance, "node": key[0], "zone": key[1], "size": strconv.Itoa(order),
				}, n)
			}
		}
		want[instance] = unusableIndex(b)
	}
	// An impostor: another job serving a fragmented host's buddyinfo
	// under a node's address (a pod on the host network could) records
	// nothing, so it reboots no node.
	for order := range 9 {
		exp.Set("node_buddyinfo_blocks", map[string]string{
			"job": "tenant-app", "instance": "10.0.0.4:8080", "node": "0", "zone": "Normal", "size": strconv.Itoa(order),
		}, 4096)
	}
	// The hand computation itself: one host past the sample's 0.9, one far
	// below it, one with nothing free.
	if !(want["10.0.0.1:9100"] > 0.99 && want["10.0.0.2:9100"] < 0.05 && math.IsNaN(want["10.0.0.3:9100"])) {
		t.Fatalf("test data: indexes %v, want about 1, about 0 and NaN", want)
	}

	srv := promtest.Start(t, promtest.Options{
		Targets:     []string{exp.Address()},
		HonorLabels: true,
		RuleFiles:   []string{fragmentationRules},
	})
	ctx := waitCtx(t)

	got, err := srv.WaitForValue(ctx, fragmentationRecord, func(v model.Vector) bool { return len(v) == len(want) })
	if err != nil {
		t.Fatal(err)
	}
	for instance, w := range want {
		g, ok := promtest.Value(got, map[string]string{"instance": instance})
		switch {
		case !ok:
			t.Errorf("%s: no series for instance %s in %v", fragmentationRecord, instance, got)
		case math.IsNaN(w):
			if !math.IsNaN(g) {
				t.Errorf("%s{instance=%q} = %v, want NaN", fragmentationRecord, instance, g)
			}
		case math.Abs(g-w) > 1e-9:
			t.Errorf("%s{instance=%q} = %.12f, want %.12f", fragmentationRecord, instance, g, w)
		}
	}
	if _, ok := promtest.Value(got, map[string]string{"instance": "10.0.0.4:8080"}); ok {
		t.Errorf("%s records the series of job tenant-app: any target could reboot a node", fragmentationRecord)
	}
	for _, s := range got {
		if len(s.Metric) != 2 || s.Metric[model.MetricNameLabel] != fragmentationRecord {
			t.Errorf("series %v: want only __name__ and instance", s.Metric)
		}
	}

	// The sample's trigger, as PromQL: only the fragmented host qualifies
	// (NaN compares false).
	trigger := loadSample(t).Spec.Prometheus
	query := fmt.Sprintf("(%s) %s %s", trigger.Query, trigger.Comparison, trigger.Threshold)
	v, err := srv.Querier().Query(ctx, query, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(v) != 1 || string(v[0].Metric[model.LabelName(trigger.NodeLabel)]) != "10.0.0.1:9100" {
		t.Errorf("%s = %v, want the one series of instance 10.0.0.1:9100", query, v)
	}
}

// TestMemoryFragmentationSample decodes the sample strictly (unknown or
// duplicate fields fail) into a RebootPolicy and checks that it queries
// what the rule file records, the way the rule's labels need.
func TestMemoryFragmentationSample(t *testing.T) {
	t.Parallel()
	p := loadSample(t)
	tr := p.Spec.Prometheus
	if tr == nil || p.Spec.Schedule != nil || p.Spec.Alert != nil {
		t.Fatalf("spec = %+v, want a prometheus trigger only", p.Spec)
	}
	if tr.Query != fragmentationRecord {
		t.Errorf("query = %q, want the recorded %q", tr.Query, fragmentationRecord)
	}
	var file ruleFile
	decodeFile(t, fragmentationRules, &file)
	if len(file.Groups) != 1 || len(file.Groups[0].Rules) != 1 || file.Groups[0].Rules[0].Record != fragmentationRecord {
		t.Errorf("%s records %+v, want the one rule %s", fragmentationRules, file.Groups, fragmentationRecord)
	}
	// buddyinfo's node label is the NUMA node; the host is the instance.
	if tr.NodeLabel != "instance" || tr.MatchNodeBy != v1alpha1.MatchNodeAddress {
		t.Errorf("nodeLabel %q, matchNodeBy %q: want instance, Address", tr.NodeLabel, tr.MatchNodeBy)
	}
	if _, err := strconv.ParseFloat(tr.Threshold, 64); err != nil {
		t.Errorf("threshold: %v", err)
	}
	if tr.For == nil || tr.For.Duration <= 0 || p.Spec.Cooldown == nil || p.Spec.MaxConcurrentRequests == nil || len(p.Spec.Windows) == 0 {
		t.Errorf("spec = %+v, want for, cooldown, maxConcurrentRequests and windows set", p.Spec)
	}

	// The decoding is strict: a misspelt field is an error, not ignored.
	data, err := os.ReadFile(fragmentationSample)
	if err != nil {
		t.Fatal(err)
	}
	misspelt := bytes.Replace(data, []byte("  threshold:"), []byte("  treshold:"), 1)
	if bytes.Equal(misspelt, data) {
		t.Fatal("sample has no threshold line to misspell")
	}
	if _, err := decodeStrict(misspelt); err == nil || !strings.Contains(err.Error(), "treshold") {
		t.Errorf("decoding a sample with a misspelt field: err = %v, want one naming treshold", err)
	}
}

// waitCtx bounds a wait for a scrape or a rule evaluation: a few 1s
// intervals are enough, and a loaded CI machine gets room to spare.
func waitCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func loadSample(t *testing.T) *v1alpha1.RebootPolicy {
	t.Helper()
	data, err := os.ReadFile(fragmentationSample)
	if err != nil {
		t.Fatal(err)
	}
	p, err := decodeStrict(data)
	if err != nil {
		t.Fatalf("%s: %v", fragmentationSample, err)
	}
	return p
}

// decodeStrict decodes a RebootPolicy the way the API server's strict field
// validation does: apiVersion and kind must be kmaint's, unknown and
// duplicate fields are errors.
func decodeStrict(data []byte) (*v1alpha1.RebootPolicy, error) {
	// The API's kinds decode leniently, so that one stored object that does
	// not fit cannot blind the operator (v1alpha1's decode.go); the sample
	// is checked against the plain Go type, strictly.
	type plain v1alpha1.RebootPolicy
	doc, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, err
	}
	var p plain
	strict, err := kjson.UnmarshalStrict(doc, &p)
	if err != nil {
		return nil, err
	}
	if err := errors.Join(strict...); err != nil {
		return nil, err
	}
	if p.Kind != "RebootPolicy" {
		return nil, fmt.Errorf("decoded a %s, not a RebootPolicy", p.Kind)
	}
	policy := v1alpha1.RebootPolicy(p)
	return &policy, nil
}
