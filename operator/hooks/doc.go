// Package hooks runs a pool's hooks at one point of a node's reboot path
// (beforeDrain, beforeReboot, afterReboot): it decides where the node
// stands in them, and begins, observes and ends each attempt through the
// hook's kind. The controllers ask the Runner; none of them calls a kind's
// API (the Job API) itself.
//
// Decide is pure: from the pool's hooks, the node's record
// (protocol.HookRecord), its acknowledgements and what the API says of the
// Jobs made so far, it returns the record to write, the Jobs to make, and
// whether the point passed or a hook failed for good. The runner writes the
// record before it makes a Job or acts on a failure (invariant 5), so an
// operator restarted at any moment finds the same attempts, deadlines and
// Jobs: a Job is named from the node's token, the hook and the attempt
// (protocol.HookJobName), made once, and never made again once it was. An
// attempt recorded begun whose handle the record does not show begins only
// once the API server holds that same record (NodeRecord.Current): a
// record read from a cache behind the write of the handle would make again
// a Job that is gone and may have run.
//
// The pool's hooks at the point are the truth: a hook removed from the pool
// is no longer waited for, and one added is waited for from when it is
// seen. A failure is retried at once while the hook's retries last
// (onFailure Retry), and otherwise stands: the gate halts the pool or
// releases the node, as the hook says, until kmaint.io/resume-halt lifts a
// halt by running the hook again.
//
// # Kinds
//
// A hook's kind is how it runs: JobKind makes a Job in the operator's hooks
// namespace per attempt and reads its outcome; Acknowledgement waits for
// another controller's annotation on the Node. A Kind says whether it runs
// a hook (the hook's API field), where an attempt stands (Observe: waiting,
// unstarted, passed, failed with a reason), begins an attempt (Start: the
// handle the record keeps, or why it cannot begin, which fails it) and
// ends one that may still run once its node was released (Stop).
//
// Adding a kind is three things:
//  1. a field of v1alpha1.Hook that selects it, with its validation (one
//     kind per hook), and `make generate`;
//  2. a type implementing Kind in this package, its Observe never blocking
//     on what it waits for (the controller asks again when the node, the
//     pool or a watched object changes, or at the attempt's deadline);
//  3. its tests: a table of Observe and Start against the states it can
//     meet, and one test against the real API server that a hook of the
//     kind holds a node and lets it go.
//
// Then add it to NewRunnerOf, the runner both controllers that run hooks
// make (the gate before the reboot, aftercare after it). Deadlines, retries, halts and releases, the record and
// its events are the runner's and Decide's, the same for every kind.
package hooks
