// Package poolstatus writes a MaintenancePool's status for the gate, and
// reports what the status says of the pool as episodes, each announced
// once: a freeze that starts or ends, a pool over its budget, a rollout
// that starts or finishes.
//
// The status is written whole, but never more than once a second while
// only its counts change (pace.go); locked to the version of the pool it
// was read from, since aftercare writes its halt beside it; and compared
// with what this operator last wrote, which the cache may not show yet, so
// that nothing is written or announced twice (Writer).
package poolstatus
