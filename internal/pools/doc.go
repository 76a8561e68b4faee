// Package pools says which pool a node belongs to and when a request may be
// admitted by its pool's and its policy's maintenance windows and freeze
// periods (a freeze holds every request but one whose NodeMaintenance has
// ignoreFreezes; ignoreWindows passes none, and requests raised on the node
// have no NodeMaintenance spec to say so, so they never pass one), so that the
// gate, which admits, the maintenance controller, which tells the requester
// why it waits, and the kubectl plugin, which shows pools and their nodes,
// read the rules the same way.
package pools
