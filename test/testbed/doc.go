// Package testbed runs a real kube-apiserver and etcd (envtest) with kmaint's
// CRDs installed, for tests, the simulated cluster and the demo. With
// WithAuditLog the API server also logs who asked for what, and
// CountRequests counts it by user, verb and resource (the benchmark's
// requests per reboot). A small reaper process kills the control plane
// when the process that started it ends without stopping it: a test that
// panics runs no deferred Stop.
package testbed
