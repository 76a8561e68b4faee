// Package gate is the approval gate: it admits nodes that request a reboot
// within their pool's budget, in the order they asked, cordons and drains
// them, approves each reboot for the boot it was requested in, and once the
// node is back with a new boot ID, uncordons what it cordoned and frees the
// slot for the next node.
//
// Like every kmaint reconciler it reads observe → decide → act: observe
// reads the pool's nodes through protocol.Read, planAdmissions decides as a
// pure function, and the actions (finish, admit, drain) write what was
// decided; the pool's status comes from the same picture, its Blocked
// condition from policies.Wait.
package gate
