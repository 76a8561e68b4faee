// Package operator wires kmaint's controllers into a controller-runtime
// manager and runs them: the approval gate and the NodeMaintenance
// lifecycle, with leader election so that one replica writes approvals.
package operator
