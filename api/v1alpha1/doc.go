// Package v1alpha1 holds kmaint's API: MaintenancePool, RebootPolicy and
// NodeMaintenance in the kmaint.io group, and the annotations kmaint writes
// on them. The annotations that the operator and the daemon exchange on each
// Node, the node protocol, are in api/protocol.
//
// +kubebuilder:object:generate=true
// +groupName=kmaint.io
package v1alpha1
