package report

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/gen"
)

// A config rollout whose pool stages the config before each reboot and
// checks it after: the stretches at hooks are drawn, summed up and named
// with their hooks; a report without hooks does not mention them.
func TestHookStretches(t *testing.T) {
	var nodes []corev1.Node
	for _, n := range []string{"c-1", "c-2"} {
		nodes = append(nodes, *gen.Node(n, gen.Labels("pool", "c")))
	}
	pool := gen.Pool("c", intstr.FromInt32(1))
	staged := func(s int) map[v1alpha1.Phase]int {
		return map[v1alpha1.Phase]int{v1alpha1.PhaseRequested: s, v1alpha1.PhaseDraining: s + 10, v1alpha1.PhaseApproved: s + 50,
			v1alpha1.PhaseRebooting: s + 50, v1alpha1.PhaseSucceeded: s + 120}
	}
	items := []v1alpha1.NodeMaintenance{
		hooked(nm("c-1-a", "c-1", v1alpha1.SourceConfig, v1alpha1.PhaseSucceeded, staged(0)),
			hookTime("beforeReboot", 20, 50, "stage-config"), hookTime("afterReboot", 90, 118, "check-config")),
		hooked(nm("c-2-a", "c-2", v1alpha1.SourceConfig, v1alpha1.PhaseSucceeded, staged(120)),
			hookTime("beforeReboot", 130, 170, "stage-config"), hookTime("afterReboot", 200, 238, "check-config")),
	}
	r, err := Build(items, []v1alpha1.MaintenancePool{*pool}, nodes, at(300))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	stats := map[string]PhaseStat{}
	for _, st := range r.Summary.Phases {
		names = append(names, st.Name)
		stats[st.Name] = st
	}
	if want := []string{"daemon", "gate", "draining", "before-reboot", "rebooting", "after-reboot", "settling", "unavailable", "total"}; !slices.Equal(names, want) {
		t.Errorf("phases %v, want %v (no beforeDrain hooks ran)", names, want)
	}
	if st := stats["before-reboot"]; st.N != 2 || st.P50 != 30*time.Second || st.Max != 40*time.Second {
		t.Errorf("before-reboot %+v, want 2, p50 30s, max 40s", st)
	}
	if st := stats["after-reboot"]; st.N != 2 || st.Max != 40*time.Second {
		t.Errorf("after-reboot %+v, want 2, max 40s (to the completion)", st)
	}
	if st := stats["draining"]; st.Max != 10*time.Second {
		t.Errorf("draining %+v: the hooks' stretch is not the drain's", st)
	}

	var buf bytes.Buffer
	if err := r.WriteHTML(&buf); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, want := range []string{
		"at hooks before the reboot 30s (10:00:20–10:00:50) [stage-config]",
		"at hooks after the reboot 30s (10:01:30–10:02:00) [check-config]",
		`class="bar k-before-reboot"`, `class="bar k-after-reboot"`,
		`sw k-before-drain`, // the legend names every point once there are hooks
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}

	// Without hooks, nothing of them.
	for i := range items {
		items[i].Status.HookTimes = nil
	}
	r, err = Build(items, []v1alpha1.MaintenancePool{*pool}, nodes, at(300))
	if err != nil {
		t.Fatal(err)
	}
	buf.Reset()
	if err := r.WriteHTML(&buf); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "at hooks") {
		t.Error("a report without hooks mentions them")
	}
}
