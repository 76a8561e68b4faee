// Package poolnodes reads, for the controllers that work pool by pool (the
// gate and aftercare), the nodes a pool holds: the Nodes its selector picks
// now, each read once per version through protocol.Read, and those it
// admitted that another pool selects since, which keep their slot in it.
// It also maps a Node's change to the pools that must look again, and
// records the events both controllers write about a node of a pool.
package poolnodes
