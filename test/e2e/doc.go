// Package e2e tests kmaint's promises end to end on a simulated cluster: the
// real API server, operator and daemons, a real journald per node.
package e2e
