// Package objectcheck compiles and evaluates object checks: a CEL
// expression over Kubernetes objects kmaint reads itself (a node, the pods
// on it, or pods chosen by namespace and label selector), for a pool's
// blocking checks (package gate) and health checks (package aftercare).
//
// The expressions run in Kubernetes' own CEL environment (the libraries
// and the per-call cost limit of k8s.io/apiserver, as a
// ValidatingAdmissionPolicy's do). Each is compiled once for its kind of
// objects and text (the cache is keyed by what the program depends on, so
// a new generation of a pool that leaves a check unchanged, or two pools
// with the same check, share one program), its cost estimated then with
// `pods` counted as at most MaxObjectCheckPods pods, and its cost counted
// again as it runs. Whatever keeps a check from saying true or false (an
// expression that does not compile, is not a bool, costs past the limit
// or fails as it runs; objects that cannot be read, or that the operator
// may not read) is an *Error with the reason a condition reports, and the
// callers take it for a check that does not hold: never a pass.
//
// The objects are read from the API server when a check runs, not from
// the operator's cache: its Nodes are slimmed (the Ready condition alone,
// kmaint's annotations only), so a check of a condition it left out would
// find none and pass; and pods are not cached at all (package podcheck
// says why: a cluster-wide pod informer would cost the operator more
// memory than everything else it holds). An evaluation makes one Get per
// node and one List per node's pods (podsOnNode) or per check (pods), and
// the callers evaluate at most once per interval (the blocking queries',
// the health checks'), for the nodes whose turn came or that settle.
package objectcheck
