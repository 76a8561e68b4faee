// Package maintenance keeps NodeMaintenance objects in step with the node
// protocol: it accepts or refuses new requests, records requests that start
// on the node (host, config) as NodeMaintenances, and moves each through its
// phases as its node is admitted, drained, rebooted and back.
//
// Reconcile reads observe → decide → act: it reads the node through
// protocol.Read and why its requests wait through policies.Wait (observe),
// decide is a pure function from a NodeMaintenance and its node to a
// verdict, and act patches each NodeMaintenance that changed.
package maintenance
