// Package badinput is kmaint's bad-input matrix: one table of inputs a
// careless user or an attacker would send, over the three CRDs, the node
// annotations a stolen daemon token can write, the Alertmanager webhook and
// both command lines, run against a real API server with kmaint's admission
// policies, RBAC and a running operator.
//
// Every row asserts exactly one outcome: refused at the door with a message
// naming the field, or accepted and contained with a named condition or
// event. After the table, the test checks what must hold in every case: no
// node was approved for a reboot or cordoned, no request was lost or
// duplicated, and the operator is still running and still sees new objects.
package badinput
