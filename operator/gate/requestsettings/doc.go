// Package requestsettings keeps, per node, what its open NodeMaintenances
// say of its requests (pools.Settings: their windows, freezes and policy,
// and when each was made). The gate asks for every waiting node's settings
// at every reconcile of its pool, and most have not changed since the
// last: finding them again would cost each reconcile a look at the
// NodeMaintenances of every node, where an event changes one.
package requestsettings
