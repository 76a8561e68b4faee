// Package hooks decides where a node stands in its pool's hooks at one
// point of its reboot path (beforeDrain, beforeReboot, afterReboot) and
// builds the Jobs that run them.
//
// Decide is pure: from the pool's hooks, the node's record
// (protocol.HookRecord), its acknowledgements and what the API says of the
// Jobs made so far, it returns the record to write, the Jobs to make, and
// whether the point passed or a hook failed for good. The gate writes the
// record before it makes a Job or acts on a failure (invariant 5), so an
// operator restarted at any moment finds the same attempts, deadlines and
// Jobs: a Job is named from the node's token, the hook and the attempt
// (protocol.HookJobName), made once, and never made again once it was.
//
// The pool's hooks at the point are the truth: a hook removed from the pool
// is no longer waited for, and one added is waited for from when it is
// seen. A failure is retried at once while the hook's retries last
// (onFailure Retry), and otherwise stands: the gate halts the pool or
// releases the node, as the hook says, until kmaint.io/resume-halt lifts a
// halt by running the hook again.
package hooks
