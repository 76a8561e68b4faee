// Package index defines the cache indexes the controllers find
// NodeMaintenances by, so that finding a node's, a policy's or the open
// ones costs what it returns rather than the whole reboot history.
package index
