package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/operator/alertwebhook"
	"github.com/kmaint/kmaint/operator/api/v1alpha1"
	"github.com/kmaint/kmaint/policies"
)

// AlertSink takes the alerts of the operator's Alertmanager webhook and
// records, on each policy with a matching alert trigger, the nodes they fire
// for (v1alpha1.FiringAlertsAnnotation); the policy controller raises the
// requests. Any replica may receive alerts: the record is in the API server,
// where the leader's controller sees it at once.
type AlertSink struct {
	// Client reads policies and nodes, from the cache.
	Client client.Client
	// APIReader reads a policy afresh after a write conflict.
	APIReader client.Reader
	Recorder  events.EventRecorder
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
		firing, resolved, unknown := matchAlerts(t, alerts, policies.NewNodeResolver(nodes.Items, t.MatchNodeBy))
		if len(unknown) > 0 {
			s.Recorder.Eventf(p, nil, corev1.EventTypeWarning, "AlertNodeUnknown", "ReceiveAlert",
				"Alert %s fires for %q, which names no node by label %q: %v", t.AlertName, alertNodeLabel(t), alertNodeLabel(t), first(unknown, 5))
		}
		if len(firing) == 0 && len(resolved) == 0 {
			continue
		}
		if err := s.record(ctx, p, firing, resolved); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// matchAlerts picks the alerts of the trigger and maps them onto nodes.
func matchAlerts(t *v1alpha1.AlertTrigger, alerts []alertwebhook.Alert, nodes policies.NodeResolver) (firing map[string]time.Time, resolved map[string]bool, unknown []string) {
	firing, resolved = map[string]time.Time{}, map[string]bool{}
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
		if !a.Firing {
			resolved[node] = true
			continue
		}
		if since, seen := firing[node]; !seen || a.StartsAt.Before(since) {
			firing[node] = a.StartsAt
		}
	}
	// A node with one alert firing and another resolved still has one
	// firing.
	for node := range firing {
		delete(resolved, node)
	}
	return firing, resolved, unknown
}

func alertNodeLabel(t *v1alpha1.AlertTrigger) string {
	if t.NodeLabel != "" {
		return t.NodeLabel
	}
	return "node"
}

// record merges firing and resolved nodes into the policy's annotation, with
// the policy's resourceVersion, so that two replicas receiving at once
// cannot lose each other's alerts.
func (s *AlertSink) record(ctx context.Context, cached *v1alpha1.RebootPolicy, firing map[string]time.Time, resolved map[string]bool) error {
	p := cached.DeepCopy()
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		current := FiringAlerts{}
		if raw, ok := p.Annotations[v1alpha1.FiringAlertsAnnotation]; ok {
			// A record that cannot be read is replaced: the controller
			// reported it, and the alerts at hand are the truth now.
			_ = json.Unmarshal([]byte(raw), &current)
		}
		next := maps.Clone(current)
		for node, since := range firing {
			if old, ok := next[node]; !ok || since.Before(old) {
				next[node] = since
			}
		}
		for node := range resolved {
			delete(next, node)
		}
		if maps.EqualFunc(current, next, time.Time.Equal) {
			return nil
		}
		raw, err := json.Marshal(next)
		if err != nil {
			return err
		}
		base := p.DeepCopy()
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[v1alpha1.FiringAlertsAnnotation] = string(raw)
		err = s.Client.Patch(ctx, p, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
		if err == nil {
			ctrl.LoggerFrom(ctx).Info("Recorded firing alerts", "policy", p.Name, "firing", len(next))
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
