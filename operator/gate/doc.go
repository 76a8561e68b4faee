// Package gate is the approval gate: it admits nodes that request a reboot
// within their pool's budget, in the order they asked, cordons and drains
// them, approves each reboot for the boot it was requested in, and once the
// node is back with a new boot ID, uncordons what it cordoned and frees the
// slot for the next node.
package gate
