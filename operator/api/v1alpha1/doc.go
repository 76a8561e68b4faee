// Package v1alpha1 holds kmaint's API: MaintenancePool, RebootPolicy and
// NodeMaintenance in the kmaint.io group, and the node protocol's annotations
// that the operator and the daemon exchange on each Node.
//
// +kubebuilder:object:generate=true
// +groupName=kmaint.io
package v1alpha1
