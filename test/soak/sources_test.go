package soak_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/sim"
	"github.com/kmaint/kmaint/test/soak/checker"
)

// sentinels are the nodes' reboot sentinel files (the daemons'
// --sentinel-file), by node: the host's package tools write one when the
// node needs a reboot, and a reboot clears it, /var/run being a tmpfs.
type sentinels map[string]string

func newSentinels(dir string, pools []string, perPool int) (sentinels, error) {
	s := sentinels{}
	for _, pool := range pools {
		for i := range perPool {
			name := sim.NodeName(pool, i)
			if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
				return nil, err
			}
			s[name] = filepath.Join(dir, name, "reboot-required")
		}
	}
	return s, nil
}

// cleared is a reboot of the node beginning: its sentinel goes with its
// /var/run.
func (s sentinels) cleared(node string) {
	if f := s[node]; f != "" {
		_ = os.Remove(f)
		_ = os.Remove(f + ".pkgs")
	}
}

// writeSentinel has a node's package tools ask for a reboot, as Debian's
// do: the file, and the packages that want it in its .pkgs, a new one each
// time (the daemon holds a sentinel unchanged since the reboot it asked
// for as a reboot loop). A reboot of the node after the write answers it,
// whatever asked for the reboot.
func (s *soak) writeSentinel() error { return s.writeSentinelOn(s.node()) }

func (s *soak) writeSentinelOn(n sim.Node) error {
	tag := s.tag()
	at := time.Now()
	f := s.sentinels[n.Name()]
	pkgs, err := os.OpenFile(f+".pkgs", os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(pkgs, "linux-image-%s\n", tag)
	if err := errors.Join(err, pkgs.Close()); err != nil {
		return err
	}
	if err := os.WriteFile(f, []byte("*** System restart required ***\n"), 0o644); err != nil {
		return err
	}
	s.checker.Requested(checker.Request{Node: n.Name(), Source: v1alpha1.SourceSentinel, Tag: tag, At: at})
	return nil
}

// scheduleReboot gives a node a cron schedule of its own, a RebootPolicy
// that fires once, at the next minute: the node is labelled for the
// policy, which selects it alone. The fire asks for the node; a reboot
// after the fire answers it.
func (s *soak) scheduleReboot() error { return s.scheduleRebootOf(s.node()) }

func (s *soak) scheduleRebootOf(n sim.Node) error {
	tag := s.tag()
	label := "soak.kmaint.io/" + tag
	if err := patchNode(s.ctx, n.Name(), func(o client.Object) {
		labels := o.GetLabels()
		labels[label] = "yes"
		o.SetLabels(labels)
	}); err != nil {
		return err
	}
	// A policy does not fire for a time before it was created (seconds,
	// as the API server stamps it): a fire a moment away could be missed.
	fire := time.Now().UTC().Truncate(time.Minute).Add(time.Minute)
	if time.Until(fire) < 5*time.Second {
		fire = fire.Add(time.Minute)
	}
	p := &v1alpha1.RebootPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: tag},
		Spec: v1alpha1.RebootPolicySpec{
			NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{label: "yes"}},
			Schedule: &v1alpha1.ScheduleTrigger{
				Cron: fmt.Sprintf("%d %d %d %d *", fire.Minute(), fire.Hour(), fire.Day(), int(fire.Month())), TimeZone: "UTC"},
			Cooldown: &metav1.Duration{},
		},
	}
	if err := bed.Client.Create(s.ctx, p); err != nil {
		return err
	}
	if !p.CreationTimestamp.Time.Before(fire) {
		_ = bed.Client.Delete(s.ctx, p)
		return fmt.Errorf("policy %s created at %s, not before its fire at %s: it would not fire this year",
			tag, p.CreationTimestamp.Format(time.TimeOnly), fire.Format(time.TimeOnly))
	}
	s.checker.Requested(checker.Request{Node: n.Name(), Source: v1alpha1.SourceSchedule, Tag: tag, At: fire})
	return nil
}

// TestEachSourceRebootsItsNode shows that each of the soak's sources whose
// requests the checker cannot name (package checker: they are met by any
// reboot of their node after them) asks for its node on its own: on a
// quiet pool, a sentinel written, an alert fired, a cron schedule and
// memory fragmented each have their node rebooted through a NodeMaintenance
// of their source. Without it, a source that asked for nothing would pass
// in a soak whenever other requests rebooted its nodes.
func TestEachSourceRebootsItsNode(t *testing.T) {
	s := setUp(t, []string{"sources"}, 4, func(int) int { return 4 })
	nodes := s.cluster.Nodes()
	sources := []struct {
		source v1alpha1.Source
		ask    func(sim.Node) error
	}{
		{v1alpha1.SourceSentinel, s.writeSentinelOn},
		{v1alpha1.SourceAlert, s.fireAlertOn},
		{v1alpha1.SourceSchedule, s.scheduleRebootOf},
		{v1alpha1.SourceMetric, s.fragmentMemoryOf},
	}
	for i, src := range sources {
		if err := src.ask(nodes[i]); err != nil {
			t.Fatalf("%s on %s: %v", src.source, nodes[i].Name(), err)
		}
	}
	// A schedule fires at the next minute but one at the latest.
	err := wait.PollUntilContextTimeout(s.ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		var nms v1alpha1.NodeMaintenanceList
		if err := bed.Client.List(ctx, &nms); err != nil {
			return false, nil
		}
		for i, src := range sources {
			if !succeeded(nms.Items, nodes[i].Name(), src.source) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		var nms v1alpha1.NodeMaintenanceList
		_ = bed.Client.List(context.Background(), &nms)
		for i, src := range sources {
			if !succeeded(nms.Items, nodes[i].Name(), src.source) {
				t.Errorf("%s asked for %s, and no NodeMaintenance of source %s rebooted it", src.source, nodes[i].Name(), src.source)
			}
		}
	}
	if byDaemon, _ := s.checker.Reboots(); byDaemon != len(sources) {
		t.Errorf("%d reboots, want one a source: %v", byDaemon, s.checker.RebootTimes())
	}
	for _, v := range s.checker.Final() {
		t.Errorf("invariant broken: %s", v)
	}
}

func succeeded(nms []v1alpha1.NodeMaintenance, node string, source v1alpha1.Source) bool {
	for _, nm := range nms {
		if nm.Spec.NodeName == node && nm.Spec.Source == source && nm.Status.Phase == v1alpha1.PhaseSucceeded {
			return true
		}
	}
	return false
}
