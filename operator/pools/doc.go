// Package pools says which pool a node belongs to and when a request may be
// admitted by its pool's and its policy's maintenance windows, so that the
// gate, which admits, and the maintenance controller, which tells the
// requester why it waits, read the rules the same way.
package pools
