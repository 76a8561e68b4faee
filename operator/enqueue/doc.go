// Package enqueue turns a function that maps objects to reconcile requests
// into a controller-runtime event handler. Each controller's handler hands
// it every object of an event: the object created, deleted or sent, and
// both the old and the new object of an update, so that an object that
// moves (a node relabelled into another pool, a request that becomes
// readable) is seen where it was and where it is.
package enqueue
