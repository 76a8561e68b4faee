// Package poolstatus writes a MaintenancePool's status for the gate, and
// reports what the status says of the pool as episodes, each announced
// once: a freeze that starts or ends, a pool over its budget, a rollout
// that starts or finishes.
//
// Each controller applies its own part of the status as a field manager of
// its own (server-side apply; GatePart, AftercarePart): the gate all of it
// but aftercare's settling, halt and Halted condition, so that no field
// has two writers and neither undoes the other's writes. The gate's part
// is written never more than once a second while only its counts change
// (pace.go), and compared with what this operator last wrote, which the
// cache may not show yet, so that nothing is written or announced twice
// (Writer).
package poolstatus
