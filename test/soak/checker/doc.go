// Package checker holds a soak's history against kmaint's invariants.
//
// It shares no code with what it checks: it reads the Nodes, pools and
// NodeMaintenances as the API server has them (the protocol's annotation
// names and the API's types are all it takes from kmaint), and the reboots
// as the simulated nodes report them, and decides from those alone. The
// soak feeds it every change as its watches deliver them; it keeps a
// compact state of every version and replays them in the order etcd made
// them (resourceVersion order, whichever kind's watch delivered first),
// each change at its version, so that a change counts from the moment etcd
// made it. A change seen in a list after a blind window is known only to
// lie somewhere in that window, and is held to what the window allows.
//
// Its checks:
//   - Budget, at each write: every admission it sees (the first of a boot,
//     one again in the same boot after a release, one first seen in a
//     list) must find the nodes kmaint holds in its pool (admitted,
//     approved, settling), the nodes down of their own (NotReady, cordoned
//     by someone else) and itself within the pool's maxUnavailable, none
//     while the pool is paused; every approval (reboot-approved appearing
//     or changing) must find the nodes past their drain (approved,
//     settling), those draining NotReady, those down of their own and
//     itself within it, and name the boot the node's admission is of. A
//     node in flight counts against the pool its admission (then its
//     settle record) names, whatever its labels say.
//   - Budget, standing: after every change, the nodes kmaint holds in a
//     pool are within its budget, except that once a change of the pool
//     lowered it below them (or paused the pool), their count may only
//     fall until it is within.
//   - Approval: every reboot a daemon asked for left a boot kmaint
//     approved (reboot-approved named it at some moment).
//   - Once: a daemon asks once per boot (also one started again in the
//     boot after another journaled its ask); no request is named in the
//     admissions of two boots that were rebooted; no node is rebooted by
//     kmaint twice for one config unless it ran another in between.
//   - End: every NodeMaintenance ended (Succeeded, or Failed with a
//     message); every request the soak made ended by its own end, its
//     record's or a reboot kmaint approved naming it, or is unrecorded
//     because its node rebooted before kmaint recorded it (Ending says
//     each exactly); no node is left cordoned by kmaint, admitted,
//     approved or settling.
//
// The slack it allows, each named, bounded and counted in Excused, never
// in Checked:
//   - liveReadSpan: a pool's change made less than a second before an
//     admission or approval, after the gate's one live read of the pool in
//     that reconcile;
//   - a node down of its own at a version later than the view of Nodes
//     the gate counted from, which its admission or approval records
//     (protocol.Admission.View): no gate could have counted it. One down
//     at that version or before counts, however short its lag;
//   - blind windows: the changes of a kind in a window its watch's version
//     was compacted away were not seen one by one. A daemon's reboot in a
//     blind window of Nodes whose approval came and went unseen is
//     excused; admissions and approvals first seen in the list after it
//     are checked against the nodes kmaint holds at the list and the
//     largest budget the pool had in the window, the nodes down of their
//     own left out.
package checker
