// Package report turns a cluster's reboot history (NodeMaintenances, the
// pools their nodes belong to) into a self-contained HTML page: a timeline
// of every node's maintenances phase by phase, each pool's unavailable nodes
// against its budget over time, and a summary of how long each phase took.
// In pools that guard their rollouts, the time a node settles after its
// reboot (keeping its slot while its health checks run) is a stretch of
// its own, a failed health check is marked on its row and listed, and a
// halted pool says which node and check halted it.
//
// The page needs nothing but a browser: its CSS and its SVG charts are
// inline and generated here, and it runs no JavaScript. Build is a pure
// function of the objects and a moment, so the page can be rendered from a
// live cluster (Collect) or from a recorded history alike.
package report
