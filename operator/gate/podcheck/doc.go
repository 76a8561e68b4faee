// Package podcheck lists the pods of a node whose turn to be admitted came,
// says whether any holds it (protocol.PodsOptOut), and keeps what it found:
// a node its pods hold is looked at again at most once per interval, and a
// pod's hold is bounded by its pool's podOptOuts (Hold).
//
// Pods are not cached: at thousands of nodes a cluster-wide pod informer
// would cost the operator more memory than everything else it holds. The
// gate lists the pods of a node (one List with a spec.nodeName field
// selector, served from the API server's watch cache) only when the
// node's turn comes, that is when its plan would admit it, and at most
// once per interval per node. A node its pods hold gives its turn to the
// next waiting node; while one is held the pool looks again every
// interval, since nothing else tells it that a pod went away. What the
// gate does with a check (the plan, the node's AdmissionHeld note) stays
// in package gate.
package podcheck
