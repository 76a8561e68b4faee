// Package cacheread reads the operator's cache without copying it.
//
// controller-runtime's cached List copies every object into the list's
// slice, even when asked not to deep-copy: a list of 2000 Nodes is 1.6 MB
// made and thrown away, and the gate lists them at every reconcile. The
// functions here hand out the pointers the cache keeps, which the caller
// reads and never changes, as the objects of an UnsafeDisableDeepCopy list.
package cacheread
