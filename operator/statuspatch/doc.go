// Package statuspatch writes an object's whole status as one merge patch,
// for controllers that compute their status from scratch each reconcile, and
// remembers the status each object was last given, which the informer cache
// may not show yet.
package statuspatch
