package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/sim"
	"github.com/kmaint/kmaint/test/testbed"
)

// The metric part of the demo: node_exporters report buddyinfo, Prometheus
// records the fragmentation index with config/prometheus's rule, and the
// sample RebootPolicy, made quick, reboots the nodes whose memory stays
// fragmented, inside the policy's window.

// sampleFile is the RebootPolicy the demo starts from.
var sampleFile = filepath.Join("config", "samples", "rebootpolicy-memory-fragmentation.yaml")

// The sample's timings, made to fit a demo.
const (
	metricFor      = 10 * time.Second
	metricInterval = 2 * time.Second
	// windowLead is the least time from the start to the policy's window:
	// the time for fragmentation to rise and hold for metricFor.
	windowLead = 25 * time.Second
	// windowLength is how long the window stays open.
	windowLength = 3 * time.Minute
	// rampTime is how long a node's fragmentation takes to rise.
	rampTime = 8 * time.Second
)

// rise is a node whose fragmentation the demo raises.
type rise struct {
	node string
	// to is where it ends; over says whether that is past the threshold.
	to   float64
	over bool
	// after is when it starts rising, from the start of the metric part.
	after time.Duration
}

// metricPlan is the metric part of the demo.
type metricPlan struct {
	policy *v1alpha1.RebootPolicy
	rises  []rise
	// instances maps instance labels to node names.
	instances map[string]string
}

// over lists the nodes the policy is to reboot.
func (p *metricPlan) over() []string {
	var nodes []string
	for _, r := range p.rises {
		if r.over {
			nodes = append(nodes, r.node)
		}
	}
	return nodes
}

// planMetric picks the nodes whose memory fragments among those no other
// request reboots: the last two past the threshold, the one before them
// close to it. It returns nil when every node is rebooted anyway.
func planMetric(c *sim.Cluster, untouched []string, now time.Time) (*metricPlan, error) {
	if len(untouched) == 0 {
		return nil, nil
	}
	p := &metricPlan{instances: map[string]string{}}
	for _, n := range c.Nodes() {
		p.instances[c.Instance(n.Name())] = n.Name()
	}
	over := untouched[max(0, len(untouched)-2):]
	targets := []float64{0.97, 0.94}
	for i, n := range over {
		p.rises = append(p.rises, rise{node: n, to: targets[i], over: true, after: time.Duration(i) * 3 * time.Second})
	}
	if len(untouched) > len(over) {
		p.rises = append(p.rises, rise{node: untouched[len(untouched)-len(over)-1], to: 0.8, after: time.Second})
	}
	pol, err := loadSample()
	if err != nil {
		return nil, err
	}
	pol.Spec.DryRun = false
	pol.Spec.Prometheus.For = &metav1.Duration{Duration: metricFor}
	pol.Spec.Prometheus.Interval = &metav1.Duration{Duration: metricInterval}
	pol.Spec.MaxConcurrentRequests = &intstr.IntOrString{Type: intstr.Int, IntVal: int32(len(over))}
	// The window opens on the first whole minute at least windowLead away:
	// cron has minutes, not seconds.
	opens := now.Add(windowLead + time.Minute - 1).Truncate(time.Minute).UTC()
	pol.Spec.Windows = []v1alpha1.MaintenanceWindow{{
		Schedule: fmt.Sprintf("%d %d * * *", opens.Minute(), opens.Hour()),
		Duration: metav1.Duration{Duration: windowLength},
		TimeZone: "UTC",
	}}
	p.policy = pol
	return p, nil
}

// loadSample reads the sample policy strictly, as the API server would.
func loadSample() (*v1alpha1.RebootPolicy, error) {
	path := filepath.Join(testbed.RepoRoot(), sampleFile)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	obj, _, err := serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer().Decode(data, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	p, ok := obj.(*v1alpha1.RebootPolicy)
	if !ok || p.Spec.Prometheus == nil {
		return nil, fmt.Errorf("%s: not a RebootPolicy with a prometheus trigger", path)
	}
	return p, nil
}

// start creates the policy and starts the nodes' fragmentation rising.
func (p *metricPlan) start(ctx context.Context, kube client.Client, c *sim.Cluster, out io.Writer) error {
	if err := kube.Create(ctx, p.policy); err != nil {
		return fmt.Errorf("create policy %s: %w", p.policy.Name, err)
	}
	tr := p.policy.Spec.Prometheus
	w := p.policy.Spec.Windows[0]
	fmt.Fprintf(out, "  metric  RebootPolicy %s (config/samples, dryRun off, for %s, interval %s): %s %s %s,\n",
		p.policy.Name, tr.For.Duration, tr.Interval.Duration, tr.Query, tr.Comparison, tr.Threshold)
	fmt.Fprintf(out, "          window %q %s for %s; fragmentation rises on ", w.Schedule, w.TimeZone, w.Duration.Duration)
	var parts []string
	for _, r := range p.rises {
		s := fmt.Sprintf("%s (to %.2f)", r.node, r.to)
		if !r.over {
			s = fmt.Sprintf("%s (to %.2f, under the threshold)", r.node, r.to)
		}
		parts = append(parts, s)
	}
	fmt.Fprintln(out, strings.Join(parts, ", "))
	for _, r := range p.rises {
		go ramp(ctx, c, r)
	}
	return nil
}

// ramp raises the node's fragmentation to r.to in steps over rampTime, as a
// workload that pins memory here and there does.
func ramp(ctx context.Context, c *sim.Cluster, r rise) {
	select {
	case <-ctx.Done():
		return
	case <-time.After(r.after):
	}
	from, _ := c.Fragmentation(r.node)
	const steps = 8
	tick := time.NewTicker(rampTime / steps)
	defer tick.Stop()
	for i := 1; i <= steps; i++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		_, _ = c.SetFragmentation(r.node, from+(r.to-from)*float64(i)/steps)
	}
}

// untouchedNodes are the nodes neither the host requests nor the rollout
// reboot, in the cluster's order.
func untouchedNodes(c *sim.Cluster, hosts []string, configPool string) []string {
	var out []string
	for _, n := range c.Nodes() {
		name := n.Name()
		if slices.Contains(hosts, name) || strings.HasPrefix(name, configPool+"-") {
			continue
		}
		out = append(out, name)
	}
	return out
}
