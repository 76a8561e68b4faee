// Package protocol is the node protocol: the kmaint.io/ annotations on each
// Node through which the daemon and the operator talk, each written by one
// side only, and the codecs for their values.
package protocol
