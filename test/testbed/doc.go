// Package testbed runs a real kube-apiserver and etcd (envtest) with kmaint's
// CRDs installed, for tests, the simulated cluster and the demo.
package testbed
