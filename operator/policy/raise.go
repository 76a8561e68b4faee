package policy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/policies"
)

// requestName is deterministic for one node's episode of meeting the
// trigger in one boot, so a restarted operator, or a reconcile that has not
// seen its own create yet, cannot raise a second request for it, while the
// next boot's episode gets a name of its own.
func requestName(policy, node, bootID string, since time.Time) string {
	boot := sha256.Sum256([]byte(bootID))
	return v1alpha1.ObjectName(policy, node, strconv.FormatInt(since.Unix(), 36), hex.EncodeToString(boot[:3]))
}

// raise creates a NodeMaintenance for each node in order. It stops at the
// first error other than the request existing already.
func (r *Reconciler) raise(ctx context.Context, p *v1alpha1.RebootPolicy, s spec, cands map[string]policies.Candidate, boots map[string]string, order []string) (raised int, err error) {
	for _, node := range order {
		c := cands[node]
		nm := &v1alpha1.NodeMaintenance{
			ObjectMeta: metav1.ObjectMeta{
				Name:   requestName(p.Name, node, boots[node], c.Since),
				Labels: map[string]string{v1alpha1.PolicyLabel: v1alpha1.LabelValue(p.Name)},
			},
			Spec: v1alpha1.NodeMaintenanceSpec{
				NodeName: node,
				Type:     v1alpha1.RebootMaintenance,
				Source:   source(p),
				Policy:   p.Name,
				Reason:   reason(p, s, c),
			},
		}
		if !math.IsNaN(c.Value) {
			nm.Annotations = map[string]string{v1alpha1.ValueAnnotation: formatValue(c.Value)}
		}
		if err := r.Create(ctx, nm); err != nil {
			if apierrors.IsAlreadyExists(err) {
				continue
			}
			return raised, fmt.Errorf("raise reboot request for node %s: %w", node, err)
		}
		raised++
		r.Recorder.Eventf(p, nm, corev1.EventTypeNormal, "RequestRaised", "Raise", "Requested a reboot of node %s: %s", node, nm.Spec.Reason)
	}
	return raised, nil
}

func source(p *v1alpha1.RebootPolicy) v1alpha1.Source {
	switch {
	case p.Spec.Schedule != nil:
		return v1alpha1.SourceSchedule
	case p.Spec.Alert != nil:
		return v1alpha1.SourceAlert
	case p.Spec.NodeCondition != nil:
		return v1alpha1.SourceCondition
	}
	return v1alpha1.SourceMetric
}

// reason says why, in the words a person would use, e.g.
// "policy memory-fragmentation: 0.934 > 0.9 for 30m", or "policy
// kernel-deadlock: node condition KernelDeadlock is True, seen since
// 2026-03-01T12:00:00Z, for 5m". The condition's reason and message are
// left out: whoever writes the Node's status writes them, and the request's
// reason goes into the node's journal.
func reason(p *v1alpha1.RebootPolicy, s spec, c policies.Candidate) string {
	var why string
	switch {
	case p.Spec.Prometheus != nil:
		why = fmt.Sprintf("%s %s for %s", formatValue(c.Value), s.threshold, shortDuration(s.forDur))
	case p.Spec.Schedule != nil:
		tz := p.Spec.Schedule.TimeZone
		if tz == "" {
			tz = "UTC"
		}
		why = fmt.Sprintf("schedule %q (%s) fired at %s", p.Spec.Schedule.Cron, tz, c.Since.UTC().Format(time.RFC3339))
	case p.Spec.Alert != nil:
		why = fmt.Sprintf("alert %s firing since %s", p.Spec.Alert.AlertName, c.Since.UTC().Format(time.RFC3339))
	case p.Spec.NodeCondition != nil:
		why = fmt.Sprintf("node condition %s is %s, seen since %s, for %s", s.condition.Type, s.condition.Status,
			c.Since.UTC().Format(time.RFC3339), shortDuration(s.forDur))
	}
	return v1alpha1.FitReason(fmt.Sprintf("policy %s: %s", p.Name, why))
}

func formatValue(v float64) string {
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// shortDuration prints 30m rather than 30m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
