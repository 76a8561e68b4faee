package policy

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/alertwebhook"
	"github.com/kmaint/kmaint/policies"
)

// AlertSink takes the alerts of the operator's Alertmanager webhook and
// records, on each policy with a matching alert trigger, the episodes of the
// alerts by node (v1alpha1.FiringAlertsAnnotation, an alertwebhook.Record);
// the policy controller raises the requests for the nodes with one firing.
// Any replica may receive alerts: the record is in the API server, where the
// leader's controller sees it at once.
type AlertSink struct {
	// Client reads policies and nodes, from the cache.
	Client client.Client
	// APIReader reads a policy afresh after a write conflict.
	APIReader client.Reader
	Recorder  events.EventRecorder
	// Clock dates what the sink records; nil means the real clock.
	Clock clock.PassiveClock
}

var _ alertwebhook.Sink = (*AlertSink)(nil)

// Receive implements alertwebhook.Sink. It is idempotent: the same alerts
// again change nothing.
func (s *AlertSink) Receive(ctx context.Context, alerts []alertwebhook.Alert) error {
	var list v1alpha1.RebootPolicyList
	if err := s.Client.List(ctx, &list); err != nil {
		return fmt.Errorf("list policies: %w", err)
	}
	var nodes corev1.NodeList
	if err := s.Client.List(ctx, &nodes); err != nil {
		return fmt.Errorf("list nodes: %w", err)
	}
	var errs []error
	for i := range list.Items {
		p := &list.Items[i]
		t := p.Spec.Alert
		if t == nil {
			continue
		}
		seen, unknown := matchAlerts(t, alerts, policies.NewNodeResolver(nodes.Items, t.MatchNodeBy))
		if len(unknown) > 0 {
			s.Recorder.Eventf(p, nil, corev1.EventTypeWarning, "AlertNodeUnknown", "ReceiveAlert",
				"Alert %s fires for %q, which names no node by label %q: %v", t.AlertName, alertNodeLabel(t), alertNodeLabel(t), first(unknown, 5))
		}
		if len(seen) == 0 {
			continue
		}
		if err := s.record(ctx, p, seen); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// sighting is an alert of a trigger, and the node it names.
type sighting struct {
	node  string
	alert alertwebhook.Alert
}

// matchAlerts picks the alerts of the trigger and maps them onto nodes.
func matchAlerts(t *v1alpha1.AlertTrigger, alerts []alertwebhook.Alert, nodes policies.NodeResolver) (seen []sighting, unknown []string) {
	for _, a := range alerts {
		if a.Labels["alertname"] != t.AlertName {
			continue
		}
		matches := true
		for k, v := range t.Matchers {
			if a.Labels[k] != v {
				matches = false
				break
			}
		}
		if !matches {
			continue
		}
		value := a.Labels[alertNodeLabel(t)]
		node, ok := nodes.Resolve(value)
		if !ok {
			unknown = append(unknown, value)
			continue
		}
		seen = append(seen, sighting{node: node, alert: a})
	}
	return seen, unknown
}

func alertNodeLabel(t *v1alpha1.AlertTrigger) string {
	if t.NodeLabel != "" {
		return t.NodeLabel
	}
	return "node"
}

// record merges the sightings into the policy's record, with the policy's
// resourceVersion, so that two replicas receiving at once cannot lose each
// other's alerts.
func (s *AlertSink) record(ctx context.Context, cached *v1alpha1.RebootPolicy, seen []sighting) error {
	clk := s.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	p := cached.DeepCopy()
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		now := clk.Now()
		current, readable := alertwebhook.Record{}, false
		if raw, ok := p.Annotations[v1alpha1.FiringAlertsAnnotation]; ok {
			// A record that cannot be read is replaced: the controller
			// reported it, and the alerts at hand are the truth now.
			if r, err := alertwebhook.ParseRecord(raw); err == nil {
				current, readable = r, true
			}
		}
		next := current.Clone()
		for _, sg := range seen {
			next.Observe(sg.node, sg.alert, now)
		}
		next.Prune(now)
		if dropped := next.Fit(); dropped > 0 {
			ctrl.LoggerFrom(ctx).Info("Alert record full", "policy", p.Name, "dropped", dropped)
			s.Recorder.Eventf(p, nil, corev1.EventTypeWarning, v1alpha1.AlertsNotRecordedReason, "Record",
				"%d firing alert episodes not recorded: policy %s keeps at most %d firing alerts a node and %d KiB of them in all, and asks no reboot for those it leaves out; this many distinct alerts suggests that Alertmanager or the webhook's token is misused",
				dropped, p.Name, alertwebhook.MaxFiringPerNode, alertwebhook.MaxRecordBytes>>10)
		}
		if readable && next.Equal(current) {
			return nil
		}
		raw, err := next.Marshal()
		if err != nil {
			return err
		}
		base := p.DeepCopy()
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[v1alpha1.FiringAlertsAnnotation] = raw
		err = s.Client.Patch(ctx, p, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
		if err == nil {
			firing, _ := next.Firing(now, nil)
			ctrl.LoggerFrom(ctx).Info("Recorded alerts", "policy", p.Name, "firing", len(firing))
			return nil
		}
		fresh := &v1alpha1.RebootPolicy{}
		if getErr := s.APIReader.Get(ctx, types.NamespacedName{Name: p.Name}, fresh); getErr != nil {
			return errors.Join(err, getErr)
		}
		p = fresh
		return err
	})
}
