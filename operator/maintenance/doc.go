// Package maintenance keeps NodeMaintenance objects in step with the node
// protocol: it accepts or refuses new requests, records requests that start
// on the node (host, config) as NodeMaintenances, and moves each through its
// phases as its node is admitted, drained, rebooted and back.
package maintenance
