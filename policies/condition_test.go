package policies

import (
	"math"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

func TestParseConditionTrigger(t *testing.T) {
	minutes := func(m int) *metav1.Duration { return &metav1.Duration{Duration: time.Duration(m) * time.Minute} }
	for name, tc := range map[string]struct {
		in v1alpha1.NodeConditionTrigger
		// want is the parsed trigger; zero when parsing fails.
		want ConditionTrigger
		// wantErr is part of the error, when parsing fails.
		wantErr string
	}{
		"defaults":              {in: v1alpha1.NodeConditionTrigger{Type: "KernelDeadlock"}, want: ConditionTrigger{Type: "KernelDeadlock", Status: corev1.ConditionTrue}},
		"status and for":        {in: v1alpha1.NodeConditionTrigger{Type: "Ready", Status: corev1.ConditionUnknown, For: minutes(10)}, want: ConditionTrigger{Type: "Ready", Status: corev1.ConditionUnknown, For: 10 * time.Minute}},
		"for at its bound":      {in: v1alpha1.NodeConditionTrigger{Type: "X", For: &metav1.Duration{Duration: v1alpha1.MaxNodeConditionFor}}, want: ConditionTrigger{Type: "X", Status: corev1.ConditionTrue, For: v1alpha1.MaxNodeConditionFor}},
		"no type":               {in: v1alpha1.NodeConditionTrigger{}, wantErr: "type is empty"},
		"status in lower case":  {in: v1alpha1.NodeConditionTrigger{Type: "X", Status: "true"}, wantErr: `status "true"`},
		"for negative":          {in: v1alpha1.NodeConditionTrigger{Type: "X", For: minutes(-1)}, wantErr: "for -1m0s"},
		"for beyond its bound":  {in: v1alpha1.NodeConditionTrigger{Type: "X", For: &metav1.Duration{Duration: v1alpha1.MaxNodeConditionFor + time.Second}}, wantErr: "is not from 0s to"},
		"status False explicit": {in: v1alpha1.NodeConditionTrigger{Type: "NetworkReady", Status: corev1.ConditionFalse}, want: ConditionTrigger{Type: "NetworkReady", Status: corev1.ConditionFalse}},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := ParseConditionTrigger(&tc.in)
			if tc.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tc.want))
		})
	}
}

func TestConditionHeld(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	cond := func(typ string, s corev1.ConditionStatus, transition time.Time) corev1.NodeCondition {
		return corev1.NodeCondition{Type: corev1.NodeConditionType(typ), Status: s, LastTransitionTime: metav1.NewTime(transition),
			LastHeartbeatTime: metav1.NewTime(transition.Add(time.Hour))}
	}
	trigger := ConditionTrigger{Type: "KernelDeadlock", Status: corev1.ConditionTrue}
	for name, tc := range map[string]struct {
		conditions []corev1.NodeCondition
		// want is whether the node holds; wantTransition the time Held
		// reports with it.
		want           bool
		wantTransition time.Time
	}{
		"no conditions":       {},
		"other type only":     {conditions: []corev1.NodeCondition{cond("Ready", corev1.ConditionTrue, at)}},
		"wanted status":       {conditions: []corev1.NodeCondition{cond("Ready", corev1.ConditionTrue, at), cond("KernelDeadlock", corev1.ConditionTrue, at)}, want: true, wantTransition: at},
		"other status":        {conditions: []corev1.NodeCondition{cond("KernelDeadlock", corev1.ConditionFalse, at)}},
		"unknown status":      {conditions: []corev1.NodeCondition{cond("KernelDeadlock", corev1.ConditionUnknown, at)}},
		"type twice, differs": {conditions: []corev1.NodeCondition{cond("KernelDeadlock", corev1.ConditionTrue, at), cond("KernelDeadlock", corev1.ConditionFalse, at)}},
		"type twice, same":    {conditions: []corev1.NodeCondition{cond("KernelDeadlock", corev1.ConditionTrue, at), cond("KernelDeadlock", corev1.ConditionTrue, at.Add(time.Minute))}, want: true, wantTransition: at.Add(time.Minute)},
		"no transition time":  {conditions: []corev1.NodeCondition{{Type: "KernelDeadlock", Status: corev1.ConditionTrue}}, want: true},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			n := &corev1.Node{Status: corev1.NodeStatus{Conditions: tc.conditions}}
			transition, ok := trigger.Held(n)
			g.Expect(ok).To(Equal(tc.want))
			g.Expect(transition).To(BeTemporally("==", tc.wantTransition))
		})
	}
}

func TestTrackHeld(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	for name, tc := range map[string]struct {
		prev []Candidate
		// held maps a node whose condition has the wanted status to the
		// condition's lastTransitionTime.
		held       map[string]time.Time
		lastReboot map[string]time.Time
		// want is each candidate's since, by node.
		want map[string]time.Time
	}{
		"first seen starts now": {
			held: map[string]time.Time{"a": ago(time.Minute)}, want: map[string]time.Time{"a": now}},
		"a backdated transition does not shorten the hold": {
			held: map[string]time.Time{"a": ago(365 * 24 * time.Hour)}, want: map[string]time.Time{"a": now}},
		"held keeps its clock": {
			prev: []Candidate{{Node: "a", Since: ago(3 * time.Minute)}},
			held: map[string]time.Time{"a": ago(4 * time.Minute)}, want: map[string]time.Time{"a": ago(3 * time.Minute)}},
		"left the status: the clock is gone": {
			prev: []Candidate{{Node: "a", Since: ago(3 * time.Minute)}},
			held: map[string]time.Time{}, want: map[string]time.Time{}},
		"a flap between two evaluations restarts the clock at the transition": {
			prev: []Candidate{{Node: "a", Since: ago(3 * time.Minute)}},
			held: map[string]time.Time{"a": ago(time.Minute)}, want: map[string]time.Time{"a": ago(time.Minute)}},
		"a transition in the future restarts the clock now": {
			prev: []Candidate{{Node: "a", Since: ago(3 * time.Minute)}},
			held: map[string]time.Time{"a": now.Add(time.Hour)}, want: map[string]time.Time{"a": now}},
		"a since in the future is not believed": {
			prev: []Candidate{{Node: "a", Since: now.Add(time.Hour)}},
			held: map[string]time.Time{"a": ago(time.Hour)}, want: map[string]time.Time{"a": now}},
		"a reboot since the clock started restarts it at the reboot": {
			prev:       []Candidate{{Node: "a", Since: ago(time.Hour)}},
			held:       map[string]time.Time{"a": ago(2 * time.Hour)},
			lastReboot: map[string]time.Time{"a": ago(10 * time.Minute)},
			want:       map[string]time.Time{"a": ago(10 * time.Minute)}},
		"a reboot before the clock started changes nothing": {
			prev:       []Candidate{{Node: "a", Since: ago(time.Hour)}},
			held:       map[string]time.Time{"a": ago(2 * time.Hour)},
			lastReboot: map[string]time.Time{"a": ago(2 * time.Hour)},
			want:       map[string]time.Time{"a": ago(time.Hour)}},
		"nodes apart": {
			prev: []Candidate{{Node: "a", Since: ago(time.Hour)}, {Node: "b", Since: ago(time.Hour)}},
			held: map[string]time.Time{"a": ago(2 * time.Hour), "c": {}},
			want: map[string]time.Time{"a": ago(time.Hour), "c": now}},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			got := map[string]time.Time{}
			for _, c := range TrackHeld(tc.prev, tc.held, tc.lastReboot, now) {
				g.Expect(math.IsNaN(c.Value)).To(BeTrue(), "a condition has no value")
				got[c.Node] = c.Since
			}
			g.Expect(got).To(HaveLen(len(tc.want)))
			for node, since := range tc.want {
				g.Expect(got).To(HaveKey(node))
				g.Expect(got[node]).To(BeTemporally("==", since), node)
			}
		})
	}
}
