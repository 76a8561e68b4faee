// Package checker holds a soak's history against kmaint's invariants.
//
// It shares no code with what it checks: it reads the Nodes, pools and
// NodeMaintenances as the API server has them (the protocol's annotation
// names and the API's types are all it takes from kmaint), and the reboots
// as the simulated nodes report them, and decides from those alone. The
// soak feeds it every change in the order its watches deliver them; it
// says what broke the moment it sees it (an admission over budget) or at
// the end (a reboot nobody approved, a request never ended, a node left
// cordoned).
//
// Its checks, and the slack each allows:
//   - Budget: an admission must find the nodes kmaint made unavailable in
//     its pool (admitted, approved, settling; itself included) within the
//     pool's maxUnavailable, and, with the nodes unavailable for any other
//     reason (NotReady, cordoned), not already at it. A node counts as
//     unavailable for another reason, and a pool's budget or pause as
//     changed, only once it has been so for Grace: the gate decides on
//     what its cache has seen, and a node a fault took down a moment
//     before the admission, or a budget lowered just then, is a race no
//     gate can win.
//   - Approval: every reboot a daemon asked for left a boot that kmaint
//     approved (reboot-approved named it at some moment); a daemon asks
//     once per boot.
//   - Once: no request was admitted in two boots that were both rebooted.
//   - End: every NodeMaintenance ended (Succeeded, or Failed with a
//     message); every request the soak made ended in one, or was overtaken
//     by a reboot of its node before its daemon raised it; no node is left
//     cordoned by kmaint, admitted, approved or settling.
package checker
