package v1alpha1

import (
	"fmt"
	"regexp"
)

// ControlPlaneGuard makes a pool a control-plane pool: one node at a time
// whatever maxUnavailable says, and only while every etcd member is healthy
// and no other node of the pool is unavailable, checked before each
// admission and again before each approval (reason QuorumAtRisk).
type ControlPlaneGuard struct {
	// EtcdNamespace is where the etcd members' pods run (default
	// kube-system, where kubeadm puts its static pods).
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +optional
	EtcdNamespace string `json:"etcdNamespace,omitempty"`

	// EtcdSelector selects the etcd members' pods there (default
	// component=etcd, kubeadm's label). Every pod it selects must be
	// Ready. When it selects none (etcd outside the cluster), the API
	// server's own etcd readiness (/readyz/etcd) must pass instead.
	// +optional
	EtcdSelector *PodLabelSelector `json:"etcdSelector,omitempty"`
}

// DefaultEtcdNamespace and DefaultEtcdLabel are kubeadm's.
const (
	DefaultEtcdNamespace = "kube-system"
	DefaultEtcdLabel     = "component"
	DefaultEtcdValue     = "etcd"
)

var namespaceName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// Namespace is where the etcd members run.
func (g *ControlPlaneGuard) Namespace() (string, error) {
	if g.EtcdNamespace == "" {
		return DefaultEtcdNamespace, nil
	}
	if len(g.EtcdNamespace) > 63 || !namespaceName.MatchString(g.EtcdNamespace) {
		return "", fmt.Errorf("etcdNamespace %q is not a namespace's name", g.EtcdNamespace)
	}
	return g.EtcdNamespace, nil
}

// Selector is what selects the etcd members' pods.
func (g *ControlPlaneGuard) Selector() *PodLabelSelector {
	if g.EtcdSelector != nil {
		return g.EtcdSelector
	}
	return &PodLabelSelector{MatchLabels: map[string]SelectorValue{DefaultEtcdLabel: DefaultEtcdValue}}
}
