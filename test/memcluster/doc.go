// Package memcluster holds a cluster's objects in memory the way the
// operator's informers hold them, and serves a controller's reads and
// writes from there: a client whose Gets and Lists read client-go indexers
// (with the operator's NodeMaintenance indexes, package index) and whose
// patches are applied in place, a reader past the cache that counts its
// reads (LiveReader), the cache.Informers whose Node store the gate and
// aftercare walk, and the controllers' watches told of every change
// (Watch). It exists for benchmarks of one event's cost at pool sizes an
// API server on a two-core machine cannot serve (20000 nodes), without
// the API server, the network or the machine's other work in the measure.
// An event's time (Events) is the operator's: all the controller does,
// its patches' building and its handlers included, less only what the
// cluster does as an API server would in applying a write (Served). It is
// not a fake of the API server's semantics beyond what those controllers
// use: optimistic locks, resourceVersions, not-found and conflict errors.
package memcluster
