package soak_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/sim"
	"github.com/kmaint/kmaint/test/soak/checker"
)

const (
	// soakAlert is the alertname the soak's alert policy acts on.
	soakAlert = "SoakNodeUnhealthy"
	// alertTokenSecret holds the bearer token the webhook wants.
	alertTokenSecret = "soak-alert-token"
	// alertCAConfigMap is where the operator publishes the CA of the
	// webhook's generated certificate, for Alertmanager to trust.
	alertCAConfigMap = "kmaint-alert-webhook-ca"
	// groupInterval is how often the soak's Alertmanager sends what fires,
	// again and again, as Alertmanager does every group_interval.
	groupInterval = 2 * time.Second
)

// alertmanager sends the soak's alerts to the operator's webhook as
// Alertmanager's webhook notifier does: the whole group every
// groupInterval while anything fires, to any replica that answers (the
// Service picks one), a resolved alert until it was taken once. Its path
// to the webhook can be cut (down), for a while: notifications fail, and
// the alerts go out once it is back.
type alertmanager struct {
	addrs []string
	token string
	rng   *rand.Rand

	mu     sync.Mutex
	down   bool
	client *http.Client
	alerts map[string]*payloadAlert // by node
}

// payload is the body of an Alertmanager webhook notification (version 4),
// as Alertmanager documents it: written here, not taken from the operator,
// so that the soak sends what Alertmanager sends.
type payload struct {
	Version           string            `json:"version"`
	GroupKey          string            `json:"groupKey"`
	Status            string            `json:"status"`
	Receiver          string            `json:"receiver"`
	GroupLabels       map[string]string `json:"groupLabels"`
	CommonLabels      map[string]string `json:"commonLabels"`
	CommonAnnotations map[string]string `json:"commonAnnotations"`
	ExternalURL       string            `json:"externalURL"`
	Alerts            []payloadAlert    `json:"alerts"`
}

type payloadAlert struct {
	Status       string            `json:"status"`
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations"`
	StartsAt     time.Time         `json:"startsAt"`
	EndsAt       time.Time         `json:"endsAt"`
	GeneratorURL string            `json:"generatorURL"`
	Fingerprint  string            `json:"fingerprint"`
}

func newAlertmanager(addrs []string, token string, seed uint64) *alertmanager {
	return &alertmanager{addrs: addrs, token: token, rng: rand.New(rand.NewPCG(seed, 7)), alerts: map[string]*payloadAlert{}}
}

// fire has the node's alert fire, unless it fires already, and returns
// when its episode started.
func (a *alertmanager) fire(node string) time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	if al := a.alerts[node]; al != nil && al.Status == "firing" {
		return al.StartsAt
	}
	labels := map[string]string{"alertname": soakAlert, "node": node, "severity": "critical"}
	set := model.LabelSet{}
	for k, v := range labels {
		set[model.LabelName(k)] = model.LabelValue(v)
	}
	al := &payloadAlert{Status: "firing", Labels: labels, StartsAt: time.Now().UTC(), Fingerprint: set.Fingerprint().String(),
		Annotations: map[string]string{"summary": "soak: " + node + " is unhealthy"}}
	a.alerts[node] = al
	return al.StartsAt
}

// resolve is the node rebooting: whatever it fired for is gone.
func (a *alertmanager) resolve(node string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if al := a.alerts[node]; al != nil && al.Status == "firing" {
		al.Status, al.EndsAt = "resolved", time.Now().UTC()
	}
}

func (a *alertmanager) setDown(down bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.down = down
}

// run notifies every groupInterval until ctx ends.
func (a *alertmanager) run(ctx context.Context) {
	t := time.NewTicker(groupInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_ = a.notify(ctx)
		}
	}
}

// notify sends every alert to one replica, trying each in a random order;
// the resolved ones taken are forgotten.
func (a *alertmanager) notify(ctx context.Context) error {
	a.mu.Lock()
	if a.down || len(a.alerts) == 0 {
		a.mu.Unlock()
		return nil
	}
	p := payload{Version: "4", GroupKey: fmt.Sprintf(`{}:{alertname=%q}`, soakAlert), Status: "resolved", Receiver: "kmaint",
		GroupLabels: map[string]string{"alertname": soakAlert}, CommonLabels: map[string]string{"alertname": soakAlert},
		CommonAnnotations: map[string]string{}, ExternalURL: "http://alertmanager.soak:9093"}
	sent := map[string]payloadAlert{}
	for node, al := range a.alerts {
		p.Alerts = append(p.Alerts, *al)
		sent[node] = *al
		if al.Status == "firing" {
			p.Status = "firing"
		}
	}
	order := a.rng.Perm(len(a.addrs))
	a.mu.Unlock()
	body, err := json.Marshal(p)
	if err != nil {
		return err
	}
	var errs []error
	for _, i := range order {
		err := a.post(ctx, a.addrs[i], body)
		if err == nil {
			a.taken(sent)
			return nil
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// taken forgets the resolved alerts a replica took, unless they fired
// again meanwhile.
func (a *alertmanager) taken(sent map[string]payloadAlert) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for node, al := range sent {
		if cur := a.alerts[node]; al.Status == "resolved" && cur != nil && cur.Status == "resolved" {
			delete(a.alerts, node)
		}
	}
}

func (a *alertmanager) post(ctx context.Context, addr string, body []byte) error {
	c, err := a.httpClient(ctx)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://"+addr+"/alerts", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+a.token)
	resp, err := c.Do(req)
	if err != nil {
		a.forgetClient() // the CA may have been made since
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", addr, resp.Status)
	}
	return nil
}

// httpClient trusts the CA the operator published, read once it is there.
func (a *alertmanager) httpClient(ctx context.Context) (*http.Client, error) {
	a.mu.Lock()
	c := a.client
	a.mu.Unlock()
	if c != nil {
		return c, nil
	}
	var cm corev1.ConfigMap
	if err := bed.Client.Get(ctx, client.ObjectKey{Namespace: leaseNamespace, Name: alertCAConfigMap}, &cm); err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(cm.Data["ca.crt"])) {
		return nil, fmt.Errorf("configmap %s has no CA yet", alertCAConfigMap)
	}
	c = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	a.mu.Lock()
	a.client = c
	a.mu.Unlock()
	return c, nil
}

func (a *alertmanager) forgetClient() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.client = nil
}

// alertPolicy asks for a reboot of a node of the pools for which the
// soak's alert fires.
func alertPolicy(pools []string) *v1alpha1.RebootPolicy {
	most := intstr.FromInt32(3)
	return &v1alpha1.RebootPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "soak-alert"},
		Spec: v1alpha1.RebootPolicySpec{
			NodeSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: poolLabel, Operator: metav1.LabelSelectorOpIn, Values: pools}}},
			Alert:                 &v1alpha1.AlertTrigger{AlertName: soakAlert},
			Cooldown:              &metav1.Duration{},
			MaxConcurrentRequests: &most,
		},
	}
}

// alertToken is the Secret holding the webhook's bearer token.
func alertToken(token string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: leaseNamespace, Name: alertTokenSecret},
		StringData: map[string]string{"token": token}}
}

// fireAlert has the soak's alert fire for a node: the alert policy asks
// for it once the webhook hears of it. A reboot after the alert started
// answers it.
func (s *soak) fireAlert() error { return s.fireAlertOn(s.node()) }

func (s *soak) fireAlertOn(n sim.Node) error {
	at := s.alerts.fire(n.Name())
	s.checker.Requested(checker.Request{Node: n.Name(), Source: v1alpha1.SourceAlert, At: at})
	return nil
}

// cutOffWebhook leaves Alertmanager unable to reach the webhook for a
// while: what fires meanwhile is heard of once it is back.
func (s *soak) cutOffWebhook() error {
	s.alerts.setDown(true)
	s.after(s.between(10*time.Second, time.Minute), func() { s.alerts.setDown(false) })
	return nil
}
