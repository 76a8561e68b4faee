// Package protocol is the node protocol: the kmaint.io/ annotations on each
// Node through which the daemon and the operator talk, each written by one
// side only, and the codecs for their values.
//
// Read is the one way to read a Node: it decodes every annotation once and
// derives what every reader needs (the requests of the current boot, whether
// the node is admitted, draining, approved, back, degraded, and its Stage),
// with one rule for an annotation that cannot be read: the node is never
// admitted, approved or taken for rebooted, and says why.
package protocol
