// Package operator wires kmaint's controllers into one controller-runtime
// manager and runs it:
//
//   - the approval gate (gate), which admits, drains (with drain), approves
//     and completes reboots;
//   - aftercare (aftercare), which settles nodes back from their reboot,
//     runs the pools' health checks and halts them, and bounds the waits
//     for a node or a daemon that does not come back;
//   - the NodeMaintenance lifecycle (maintenance);
//   - the RebootPolicy controller (policy);
//   - the Alertmanager webhook receiver (alertwebhook), when it is given an
//     address, which hands firing alerts to policy's AlertSink;
//   - the metrics (metrics): the controllers record events as they happen,
//     and a collector reads the state gauges from the cache at scrape time.
//
// With a Prometheus URL, the gate's blocking queries and the policy
// controller ask that server through policies/promapi. Leader election makes
// one replica run the controllers and report the state gauges; every replica
// serves the webhook, since Alertmanager may post to any of them.
package operator
