// Package statuspatch writes an object's whole status as one merge patch,
// for controllers that compute their status from scratch each reconcile.
package statuspatch
